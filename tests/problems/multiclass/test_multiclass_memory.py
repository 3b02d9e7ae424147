"""Multiclass memory: cp_classify scores a block of rows at a time (its lines, every
class's score, written a block at a time: the same bytes), and a training whose
examples x classes arrays would not fit is refused before it starts, naming them."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SAMPLES, run_cli

import cpsvm.memory
import cpsvm.models
from cpsvm.models import MulticlassModel


def test_score_blocks_are_the_decision_values():
    rng = np.random.default_rng(0)
    X = sp.random(203, 30, density=0.2, random_state=1, format="csr")
    model = MulticlassModel(W=rng.standard_normal((17, 30)))
    whole = model.decision_function(X)
    blocks = list(model.score_blocks(X, cells=17 * 10))
    assert [lo for lo, _ in blocks] == list(range(0, 203, 10))
    assert max(len(s) for _, s in blocks) * 17 <= 17 * 10
    assert np.array_equal(np.vstack([s for _, s in blocks]), whole)
    assert np.array_equal(model.predict(X), np.argmax(whole, axis=1) + 1)
    one_row = list(model.score_blocks(X, cells=1))  # more classes than cells: a row
    assert len(one_row) == 203 and np.array_equal(np.vstack([s for _, s in one_row]), whole)


def test_classify_in_blocks_writes_the_same_bytes(tmp_path, monkeypatch):
    model, whole, blocked = tmp_path / "m", tmp_path / "p1", tmp_path / "p2"
    train = ["-v", "0", "-c", "10", SAMPLES / "dna1k.train", model]
    assert run_cli("learn", *train).returncode == 0
    assert run_cli("classify", SAMPLES / "dna500.test", model, whole).returncode == 0
    monkeypatch.setattr(cpsvm.models, "SCORE_BLOCK_CELLS", 3 * 7)  # 7 rows a block
    run = run_cli("classify", SAMPLES / "dna500.test", model, blocked)
    assert run.returncode == 0, run.stderr
    assert blocked.read_bytes() == whole.read_bytes()
    assert len(whole.read_text().splitlines()) == 500


@pytest.mark.parametrize("command", [["learn"], ["learn", "-w", "9"], ["ocas"]])
def test_training_whose_rows_x_classes_cannot_fit(tmp_path, monkeypatch, command):
    rng = np.random.default_rng(2)
    train = tmp_path / "many.train"
    train.write_text(
        "".join(f"{k % 100 + 1} 1:{rng.random():.3f} 2:{rng.random():.3f}\n" for k in range(400))
    )
    # 400 examples x 100 classes: 1.2 MiB of arrays; the weights (100 x 2) fit
    monkeypatch.setattr(cpsvm.memory, "physical_memory", lambda: 512 << 10)
    model = tmp_path / "m"
    run = run_cli(*command, "-c", "1", train, model)
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert f"{train}: multiclass training on 400 examples and 100 classes" in run.stderr
    assert "more than this machine's memory (512.0 KiB)" in run.stderr
    assert not model.exists()
