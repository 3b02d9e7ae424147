"""--plot on the command line: the learners draw their training trace, cp_classify its
scores; the files hold what they say (the SVG's text read back, the figures cp_classify
prints in the legends); bad names and a missing matplotlib are one line each, found
before anything is trained, and leave no file."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from conftest import ROOT, interrupt_cli

pytest.importorskip("matplotlib")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PIP_HINT = "pip install 'cpsvm[plot]'"


def svg_texts(path) -> list[str]:
    root = ET.parse(path).getroot()
    texts = root.iter("{http://www.w3.org/2000/svg}text")
    return [" ".join("".join(t.itertext()).split()) for t in texts]


@pytest.fixture(scope="module")
def small_train(tmp_path_factory):
    """The first 400 lines of a9a3k: every learner trains on it in a moment."""
    path = tmp_path_factory.mktemp("plot") / "a9a400.train"
    lines = (ROOT / "data" / "samples" / "a9a3k.train").read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:400]))
    return path


TRACE_LABELS = ("iteration", "seconds", "objective", "primal", "dual", "gap")


@pytest.mark.parametrize(
    "module, prog, args",
    [
        ("learn", "cp_learn", ["-c", "10"]),
        ("ocas", "ocas_learn", ["-c", "1", "-m", "2"]),
        ("sampled", "sampled_learn", ["-c", "10", "--r", "100"]),
    ],
)
def test_learners_draw_the_trace_without_trace(cli, small_train, tmp_path, module, prog, args):
    picture, model = tmp_path / "trace.svg", tmp_path / "model"
    run = cli(module, "-v", "0", *args, "--plot", picture, small_train, model)
    assert run.returncode == 0, run.stderr
    assert model.exists() and run.stderr == ""
    texts = svg_texts(picture)
    assert set(TRACE_LABELS) <= set(texts), texts
    assert f"{prog} {small_train}: training trace" in texts
    assert "duality gap (log scale)" in texts
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "trace.svg"]  # no --trace


def test_asset_learn_draws_its_objective_as_png(cli, small_train, tmp_path):
    picture, model = tmp_path / "trace.png", tmp_path / "model"
    run = cli(
        "asset",
        *("-v", "0", "-c", "10", "-t", "2", "-g", "0.05", "--k", "50", "--epochs", "2"),
        *("--plot", picture, small_train, model),
    )
    assert run.returncode == 0, run.stderr
    assert picture.read_bytes().startswith(PNG_SIGNATURE)


def test_asset_learn_trace_labels(cli, small_train, tmp_path):
    picture, model = tmp_path / "trace.svg", tmp_path / "model"
    run = cli(
        "asset",
        *("-v", "0", "--approx", "none", "-c", "10", "--epochs", "2", "--validate", small_train),
        *("--plot", picture, small_train, model),
    )
    assert run.returncode == 0, run.stderr
    texts = svg_texts(picture)
    assert {"iteration", "seconds", "objective", "validation error"} <= set(texts)
    assert "primal" not in texts


def test_the_trace_is_drawn_after_ctrl_c_too(samples, tmp_path):
    model, trace, picture = tmp_path / "m", tmp_path / "t.tsv", tmp_path / "p.svg"
    code, out, err = interrupt_cli(
        "learn",
        [*("-c", "1000", "-e", "1e-9", "-#", "1000000", "--trace", trace, "--plot", picture)]
        + [samples / "a9a3k.train", model],
        trace,
    )
    assert code == 130, err
    assert model.exists() and "iteration" in svg_texts(picture)


@pytest.mark.parametrize("module", ["learn", "ocas", "sampled", "asset", "classify"])
def test_another_suffix_is_one_usage_line_before_anything_is_read(cli, tmp_path, module):
    # The example file does not exist: the name is refused first, nothing is written.
    c = [] if module == "classify" else ["-c", "1"]
    run = cli(module, *c, "--plot", tmp_path / "p.pdf", tmp_path / "none", tmp_path / "m")
    assert run.returncode == 2
    assert len(run.stderr.splitlines()) == 1, run.stderr
    assert "ending in .png or .svg" in run.stderr and "p.pdf" in run.stderr
    assert list(tmp_path.iterdir()) == []


HIDDEN = """
import sys
sys.modules["matplotlib"] = None  # as if not installed
from cpsvm.cli.{module} import main
main({args!r})
"""


@pytest.mark.parametrize(
    "module, prog", [("learn", "cp_learn"), ("ocas", "ocas_learn"), ("classify", "cp_classify")]
)
def test_without_matplotlib_one_line_says_how_to_get_it(small_train, tmp_path, module, prog):
    args = ["--plot", str(tmp_path / "p.svg"), str(small_train), str(tmp_path / "out")]
    run = subprocess.run(
        [sys.executable, "-c", HIDDEN.format(module=module, args=args)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 2
    assert run.stderr == f"{prog}: --plot needs matplotlib: {PIP_HINT} (see '{prog} -h')\n"
    assert list(tmp_path.iterdir()) == []  # refused before training or classifying


def test_binary_legend_holds_the_roc_area_cp_classify_prints(cli, samples, fixtures, tmp_path):
    picture = tmp_path / "roc.svg"
    run = cli(
        "classify",
        *("-v", "1", "--perf-measures", "--plot", picture),
        *(samples / "a9a2k.test", fixtures / "a9a3k.perf_roc.model", tmp_path / "pred"),
    )
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if "on test" not in line]
    figures = dict(line.split(":", 1) for line in lines if ":" in line)
    roc, avgprec = figures["ROCArea  "].strip(), figures["AvgPrec  "].strip()
    texts = svg_texts(picture)
    assert f"ROC area {roc}%" in texts, (roc, texts)
    assert f"average precision {avgprec}%" in texts
    assert {"ROC curve", "precision-recall curve", "threshold 0"} <= set(texts)


def test_multiclass_confusion_matrix_names_the_classes(cli, samples, fixtures, tmp_path):
    picture = tmp_path / "confusion.svg"
    run = cli(
        "classify",
        *("-v", "1", "--plot", picture),
        *(samples / "dna500.test", fixtures / "dna.multiclass.model", tmp_path / "pred"),
    )
    assert run.returncode == 0, run.stderr
    error = run.stdout.split("Zero/one-error on test set: ", 1)[1].split("%")[0]
    texts = svg_texts(picture)
    assert {"1", "2", "3", "predicted class", "true class"} <= set(texts)
    assert any(f"({error}% error)" in text for text in texts), texts


def test_ranking_draws_the_ndcg_cp_classify_prints(cli, samples, tmp_path):
    from cpsvm.io.model_file import write_model
    from cpsvm.models import LinearModel

    # Any linear model ranks a file of queries with graded targets.
    w = np.random.default_rng(0).normal(size=30)
    model = tmp_path / "rank.model"
    write_model(model, LinearModel(w=w, b=0.0))
    picture = tmp_path / "ndcg.png"
    run = cli("classify", "-v", "1", "--plot", picture, samples / "toy.rank.test", model, "-")
    assert run.returncode == 0, run.stderr
    assert picture.read_bytes().startswith(PNG_SIGNATURE)
    svg = tmp_path / "ndcg.svg"
    run = cli("classify", "-v", "1", "--plot", svg, samples / "toy.rank.test", model, "-")
    ndcg = run.stderr.split("NDCG@10 on test set: ", 1)[1].split()[0]
    assert f"mean NDCG@10 {ndcg}" in svg_texts(svg)


def test_models_without_a_picture_refuse_plot(cli, fixtures, tmp_path):
    run = cli(
        "classify",
        *("--plot", tmp_path / "p.svg"),
        *(fixtures / "hmm_syn.test", fixtures / "hmm_syn_t0e0.model", tmp_path / "pred"),
    )
    assert run.returncode == 2
    assert run.stderr.startswith("cp_classify: --plot is for binary and multiclass and rank models")
    assert list(tmp_path.iterdir()) == []


def test_baseline_has_no_trace_to_plot(cli, samples, tmp_path):
    run = cli(
        "learn",
        *("--baseline", "pcfg", "--plot", tmp_path / "p.svg"),
        *(samples / "toy.train.mrg", tmp_path / "m"),
    )
    assert run.returncode == 2 and "--plot" in run.stderr
    assert list(tmp_path.iterdir()) == []
