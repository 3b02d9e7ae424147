"""--cv and --c-path through the learners' command lines."""

import re

import pytest
from conftest import SAMPLES, run_cli

A9A = SAMPLES / "a9a3k.train"


def test_ocas_path_prints_the_table_and_trains_the_best_C(tmp_path):
    model = tmp_path / "m"
    r = run_cli("ocas", "--cv", 3, "--c-path", "0.01:100:5", A9A, model)
    assert r.returncode == 0, r.stderr
    rows = [
        line.split() for line in r.stdout.splitlines() if re.match(r"^\s+[0-9.e+-]+\s+\d", line)
    ]
    assert [float(row[0]) for row in rows] == [0.01, 0.1, 1.0, 10.0, 100.0]
    errors = {float(row[0]): float(row[1].rstrip("%")) for row in rows}
    best = float(re.search(r"Best C: (\S+) ", r.stdout).group(1))
    assert errors[best] == min(errors.values())
    assert min(c for c, e in errors.items() if e == errors[best]) == best  # ties: smaller C
    # the model is the one a plain run at that C writes
    plain = tmp_path / "plain"
    assert run_cli("ocas", "-c", f"{best:g}", A9A, plain).returncode == 0
    assert model.read_bytes() == plain.read_bytes()


def test_cv_alone_writes_nothing_and_reports_folds(tmp_path):
    r = run_cli("ocas", "--cv", 4, "-c", 1, A9A, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(re.findall(r"^Fold \d: error \d+\.\d\d%", r.stdout, re.M)) == 4
    assert re.search(r"Cross-validated error: \d+\.\d\d% \+- \d+\.\d\d% at C = 1$", r.stdout, re.M)
    assert list(tmp_path.iterdir()) == []


def test_seed_fixes_the_folds():
    runs = [run_cli("ocas", "--cv", 3, "--seed", s, A9A).stdout for s in (1, 1, 2)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_cp_learn_path_needs_no_c_and_judges_rank_by_ndcg():
    r = run_cli("learn", "--cv", 3, "--c-path", "1,10", SAMPLES / "toy.rank.train")
    assert r.returncode == 0, r.stderr
    assert "NDCG@10" in r.stdout and "swapped pairs" in r.stdout
    assert re.search(r"Best C: (1|10) \(NDCG@10 0\.\d{4} \+- 0\.\d{4}, 3 folds\)", r.stdout)


def test_cp_learn_hmm_folds_are_sentences():
    r = run_cli("learn", "--cv", 3, "-c", 10, "-e", 0.5, SAMPLES / "ewt60.hmm.train")
    assert r.returncode == 0, r.stderr
    assert "whole units" in r.stdout
    assert len(re.findall(r"^Fold \d: token accuracy \d+\.\d\d%", r.stdout, re.M)) == 3


def test_svmperf_loss_is_the_measure():
    r = run_cli("learn", "-c", 1, "-l", 10, "--cv", 2, A9A)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^Fold 1: ROC area \d+\.\d\d%  error", r.stdout, re.M)


@pytest.mark.parametrize(
    ("module", "args", "message"),
    [
        ("ocas", ["--c-path", "1:10"], "--c-path LIST"),
        ("ocas", ["--c-path", "0,1"], "every value a finite C > 0"),
        ("ocas", ["--cv", 1], "--cv"),
        ("ocas", ["--cv", 3, "--scheduler", "local:1"], "cannot be used with --scheduler"),
        ("asset", ["--c-path", "1,10", "-l", "0.1"], "cannot be used with -l"),
        ("learn", ["--cv", 3, "--baseline", "pcfg"], "cannot be used with --baseline"),
    ],
)
def test_usage_errors(module, args, message):
    r = run_cli(module, *args, A9A)
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_model_file_still_required_without_cv():
    r = run_cli("ocas", "-c", 1, A9A)
    assert r.returncode == 2 and "MODEL_FILE" in r.stderr


def test_sampled_and_asset_cross_validate():
    for module, args in (("sampled", ["-t", 2, "-g", 0.1]), ("asset", [])):
        r = run_cli(module, "--cv", 2, "--c-path", "1,10", *args, A9A)
        assert r.returncode == 0, (module, r.stderr)
        assert re.search(r"Best C: (1|10) \(error", r.stdout)


def test_plot_draws_the_path_with_the_chosen_C(tmp_path):
    picture = tmp_path / "path.svg"
    r = run_cli("ocas", "--cv", 3, "--c-path", "0.01:100:5", "--plot", picture, A9A)
    assert r.returncode == 0, r.stderr
    best = re.search(r"Best C: (\S+) ", r.stdout).group(1)
    texts = re.findall(r"<text[^>]*>([^<]*)<", picture.read_text())
    assert "error (%)" in texts and f"chosen C = {best}" in texts
