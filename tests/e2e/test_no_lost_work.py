"""No work is lost in the shell's own patterns (DESIGN.md, "Bad input"): a learner writes
its model whatever happens to its stdout or stderr, no output may be an input or another
output of the run, and SIGTERM, SIGHUP and SIGQUIT end a run as Ctrl-C does, leaving no
partial file."""

import os
import signal
import subprocess
import sys

import pytest
from conftest import ROOT, interrupt_cli

from cpsvm.cli.common import _interrupts
from cpsvm.errors import Terminated
from cpsvm.io.atomic import atomic_output
from cpsvm.io.model_file import read_model

ENV = dict(os.environ, PYTHONPATH=str(ROOT))
LEARN = [sys.executable, "-m", "cpsvm.cli.learn"]
CLASSIFY = [sys.executable, "-m", "cpsvm.cli.classify"]


def run_with_status(command: str, tmp_path):
    """(exit status of the command's first stage, stderr) of ``command`` in bash."""
    status_file = tmp_path / "status"
    script = f'{command}; echo "${{PIPESTATUS[0]}}" > {status_file}'
    env = dict(ENV, LEARN=" ".join(LEARN), CLASSIFY=" ".join(CLASSIFY))
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    return int(status_file.read_text()), done.stderr


def no_leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize(
    "redirect, status",
    [
        ("| true", 0),  # the reader went away: no error of ours
        ("| head -c 1 >/dev/null", 0),
        ("> /dev/full", 1),
        (">&-", 1),
    ],
)
def test_a_learner_writes_its_model_whatever_happens_to_stdout(samples, tmp_path, redirect, status):
    code, err = run_with_status(
        f"$LEARN -v 1 -c 1 {samples / 'a9a3k.train'} m {redirect}", tmp_path
    )
    assert code == status, err
    assert read_model(tmp_path / "m").w.shape[0] >= 122
    assert "Traceback" not in err
    if status:
        assert err.strip().splitlines()[-1].startswith("cp_learn: standard output: ")
    assert no_leftovers(tmp_path) == []


def test_a_closed_stderr_costs_nothing(samples, tmp_path):
    code, err = run_with_status(f"$LEARN -v 2 -c 1 {samples / 'a9a3k.train'} m 2>&-", tmp_path)
    assert code == 1  # what -v 2 said there is lost: said by the status alone
    assert read_model(tmp_path / "m").w.shape[0] >= 122


def test_predictions_to_a_closed_pipe_are_no_error(samples, tmp_path):
    model = tmp_path / "m"
    subprocess.run([*LEARN, "-v", "0", "-c", "1", samples / "a9a3k.train", model], env=ENV)
    code, err = run_with_status(
        f"$CLASSIFY {samples / 'a9a3k.train'} {model} /dev/stdout | head -1", tmp_path
    )
    assert code == 0, err
    assert "Traceback" not in err


def test_a_trace_that_cannot_be_written_stops_the_trace_not_the_training(cli, samples, tmp_path):
    model = tmp_path / "m"
    run = cli("learn", "-c", "1", "--trace", "/dev/full", samples / "a9a3k.train", model)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        "cp_learn: /dev/full: No space left on device (the trace stopped there; the model "
        f"was written to {model})"
    )
    assert read_model(model).w.shape[0] >= 122


def test_trace_dash_is_standard_output(cli, samples, tmp_path):
    run = cli(
        "learn", "-v", "0", "-c", "1", "--trace", "-", samples / "a9a3k.train", "m", cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("iteration\tprimal\tdual\tgap")
    assert not (tmp_path / "-").exists()


@pytest.fixture
def data(samples, tmp_path):
    path = tmp_path / "d"
    path.write_bytes((samples / "a9a3k.train").read_bytes())
    return path


def same(cli, module, *args):
    run = cli(module, *args)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "refusing to write over it" in run.stderr
    return run.stderr


@pytest.mark.parametrize("link", [None, "symbolic", "hard"])
def test_a_model_file_that_is_the_training_file_is_refused(cli, data, tmp_path, link):
    before = data.read_bytes()
    given = data
    if link is not None:
        given = tmp_path / "link"
        (os.symlink if link == "symbolic" else os.link)(data, given)
    for module in ("learn", "ocas", "sampled", "asset"):
        err = same(cli, module, "-c", "1", given, data)
        assert f"MODEL_FILE {data} is the EXAMPLE_FILE" in err
    assert data.read_bytes() == before


def test_outputs_that_are_inputs_or_each_other_are_refused(cli, data, tmp_path):
    before = data.read_bytes()
    model = tmp_path / "m"
    assert cli("learn", "-v", "0", "-c", "1", data, model).returncode == 0
    kept = model.read_bytes()
    same(cli, "learn", "-c", "1", "--trace", data, data, model)
    same(cli, "learn", "-c", "1", "--trace", tmp_path / "x", data, tmp_path / "x")
    same(cli, "classify", data, model, data)
    same(cli, "classify", data, model, model)
    costs = tmp_path / "costs"
    costs.write_text("1\n" * 3000)
    same(cli, "ocas", "-C", costs, data, costs)
    assert data.read_bytes() == before and model.read_bytes() == kept
    assert not (tmp_path / "x").exists()


def test_standard_input_counts_as_the_file_it_came_from(data, tmp_path):
    done = subprocess.run(
        [*LEARN, "-c", "1", "-", str(data)],
        stdin=open(data, "rb"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "is the EXAMPLE_FILE" in done.stderr


def test_a_signal_during_a_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "m"
    with pytest.raises(Terminated) as caught, _interrupts():
        with atomic_output(target) as out:
            out.write("partial\n")
            os.kill(os.getpid(), signal.SIGHUP)
    assert caught.value.exit_status == 129
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_terminating_signals_stop_training_as_ctrl_c_does(samples, tmp_path, sig):
    model, trace = tmp_path / "m", tmp_path / "t.tsv"
    args = ["-c", "1000", "-e", "1e-9", "-#", "1000000", "--trace", trace]
    code, out, err = interrupt_cli("learn", [*args, samples / "a9a3k.train", model], trace, sig=sig)
    assert code == 128 + sig, err
    name = signal.Signals(sig).name
    assert f"terminated ({name}) at iteration" in err and "Traceback" not in err
    assert read_model(model).w.shape[0] >= 122
    assert no_leftovers(tmp_path) == []
