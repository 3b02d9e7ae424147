"""Every learner on a file with hashed feature indices (2^31+5, 2^40, 9e15): it trains in
memory that follows its distinct features (a dense vector of 9e15 weights could not be
held), the model file holds the original indices, and cp_classify predicts the original
file as the same learner's model of the compact twin file (indices 1..d, same order)
predicts that one."""

import numpy as np
import pytest

BIG = [6, 2**31 + 5, 2**40, 9 * 10**15]


def write_pair(tmp_path, name, multiclass=False, qid=False):
    """The hashed file and its compact twin (same examples, indices renumbered): binary,
    ``multiclass`` (3 classes), ``qid`` (ranking: 20 queries of 6) or both (tagging: 20
    sentences of 6 tokens, 3 tags)."""
    rng = np.random.default_rng(len(name))
    ids = np.unique(np.concatenate([BIG, rng.integers(7, 2**50, 36)]))
    rule = rng.normal(size=(3, len(ids)))
    hashed, compact = [], []
    for i in range(120):
        cols = np.sort(rng.choice(len(ids), 6, replace=False))
        if i < len(BIG):  # every one of BIG is used
            cols = np.unique(np.append(cols[1:], np.searchsorted(ids, BIG[i])))
        values = np.round(rng.random(len(cols)), 3) + 0.001
        scores = rule[:, cols] @ values
        target = int(np.argmax(scores)) + 1 if multiclass else (1 if scores[0] > 0 else -1)
        if qid and not multiclass:
            target = int(np.digitize(scores[0], [-0.5, 0.5]))
        head = f"{target}" + (f" qid:{i // 6 + 1}" if qid else "")
        hashed.append(head + "".join(f" {ids[c]}:{v}" for c, v in zip(cols, values)))
        compact.append(head + "".join(f" {c + 1}:{v}" for c, v in zip(cols, values)))
    paths = tmp_path / f"{name}.hashed.svm", tmp_path / f"{name}.compact.svm"
    for path, lines in zip(paths, (hashed, compact)):
        path.write_text("\n".join(lines) + "\n")
    return paths


LEARNERS = [
    ("binary", "ocas", ["-c", "1"]),
    ("binary", "learn", ["-c", "1"]),
    ("binary", "learn", ["-c", "1", "-l", "10", "-w", "3"]),  # an SVMperf loss
    ("binary", "sampled", ["-c", "1", "-t", "2", "-g", "0.5", "-#", "20"]),
    ("binary", "asset", ["-c", "1", "-t", "2", "-g", "0.5", "--k", "40"]),
    ("binary", "asset", ["-c", "1", "-t", "2", "-g", "0.5", "--approx", "rff", "--k", "32"]),
    ("multiclass", "learn", ["-c", "1"]),
    ("hmm", "learn", ["-c", "1", "--problem", "hmm", "-e", "1"]),
    ("rank", "learn", ["-c", "1", "--problem", "rank"]),
]


@pytest.mark.parametrize("kind, learner, args", LEARNERS, ids=lambda v: str(v))
def test_hashed_indices_train_and_classify(tmp_path, cli, kind, learner, args):
    hashed, compact = write_pair(
        tmp_path, kind, kind in ("multiclass", "hmm"), kind in ("rank", "hmm")
    )
    predictions = []
    for data in (hashed, compact):
        model, pred = data.with_suffix(".model"), data.with_suffix(".pred")
        run = cli(learner, "-v", "0", *args, data, model)
        assert run.returncode == 0, run.stderr
        text = model.read_text()
        if data == hashed and kind == "hmm":  # emission weights at SVMhmm's offsets
            assert f"{9 * 10**15} # number of emission features" in text
        elif data == hashed:
            assert f"{2**31 + 5}:" in text or f" {2**31 + 5} " in text, text[:600]
            assert str(9 * 10**15) in text
        run = cli("classify", "-v", "0", data, model, pred)
        assert run.returncode == 0, run.stderr
        predictions.append(pred.read_text())
    assert predictions[0] == predictions[1]


def test_a_huge_index_test_file_against_an_ordinary_model(tmp_path, cli):
    hashed, compact = write_pair(tmp_path, "binary")
    model = tmp_path / "compact.model"
    assert cli("ocas", "-v", "0", compact, model).returncode == 0
    run = cli("classify", hashed, model, tmp_path / "pred")
    assert run.returncode == 0, run.stderr
    assert "feature values above the model's highest feature index (40) ignored" in run.stderr
