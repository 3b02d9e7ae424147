"""SVM-hmm files, SVMhmm V3.10 model files and cp_classify on sequence models.

References, all written by the original C tools (SVM-hmm V3.10, /work/tools):
* ``ewt500.hmm.ewt200-features.model.xz``: ``svm_hmm_learn -c 5 -e 0.5`` on the first
  500 UD-EWT training sentences (shared/models/ewt500.hmm.model) keeping only the
  emission weights of features that occur in ``ewt200.hmm.test.xz`` (the others never
  enter a score there; svm_hmm_classify gives the same predictions with both files).
  ``ewt200.hmm.pred`` and ``ewt200.hmm.classify.txt`` are svm_hmm_classify's output
  file and printout on that test file.
* ``hmm_syn_t<t>e<e>.model``/``.pred``: ``svm_hmm_learn -c 10 -e 0.1 --t <t> --e <e>``
  on a tiny synthetic file (4 tags, 12 features, Markov tags), and svm_hmm_classify's
  predictions on ``hmm_syn.test``: the layouts of every transition and emission order.
"""

import numpy as np
import pytest

from cpsvm.data import Dataset, SequenceDataset
from cpsvm.decoding.viterbi import HmmLayout
from cpsvm.errors import InputError
from cpsvm.io.model_file import format_model, read_model, write_model
from cpsvm.io.svmlight import read_sequences
from cpsvm.models import SequenceModel

EWT_MODEL = "ewt500.hmm.ewt200-features.model.xz"
EWT_TEST = "ewt200.hmm.test.xz"
SYN_ORDERS = ["t0e0", "t1e0", "t1e1", "t2e1", "t3e1"]


# -- SVM-hmm data files ---------------------------------------------------------------------


def write(tmp_path, text, name="s.dat"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_sentences_tags_and_comments(tmp_path):
    f = write(
        tmp_path,
        "# a comment line\n2 qid:3 1:1 4:0.5 # The\n1 qid:3 2:1 # cat\n\n3 qid:7 3:1 # .\n",
    )
    seqs = read_sequences(f)
    np.testing.assert_array_equal(seqs.starts, [0, 2, 3])
    np.testing.assert_array_equal(seqs.qid, [3, 7])
    np.testing.assert_array_equal(seqs.tags, [2, 1, 3])
    assert seqs.comments == ["The", "cat", "."]
    np.testing.assert_array_equal(seqs.line_numbers, [2, 3, 5])
    assert seqs.X.toarray().tolist() == [[1, 0, 0, 0.5], [0, 1, 0, 0], [0, 0, 1, 0]]
    assert seqs.n_tags == 3 and seqs.line_of(2) == 5


@pytest.mark.parametrize(
    "text, line, expected",
    [
        # a token line without qid, first or later
        ("1 1:1\n", 1, "expected qid:<sentence>"),
        ("1 qid:1 1:1\n2 1:1\n", 2, "got no qid"),
        ("1 qid:0 1:1\n", 1, "sentence id >= 1"),
        # a sentence split in two
        (
            "1 qid:1 1:1\n1 qid:2 1:1\n1 qid:1 2:1\n",
            3,
            "tokens of sentence qid:1 on consecutive lines (qid non-decreasing), but it "
            "reappears after qid:2 (it began on line 1)",
        ),
        # sentences out of order, as svm_hmm_learn refuses them
        ("1 qid:5 1:1\n1 qid:2 1:1\n", 2, "non-decreasing qid"),
        # tags: 0, negative, not an integer
        ("1 qid:1 1:1\n0 qid:1 1:1\n", 2, "expected an integer tag >= 1, got 0"),
        ("-2 qid:1 1:1\n", 1, "expected an integer tag >= 1, got -2"),
        ("1 qid:1 1:1\n2.5 qid:2 1:1\n", 2, "expected an integer tag >= 1, got 2.5"),
    ],
)
def test_training_file_errors(tmp_path, text, line, expected):
    f = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_sequences(f)
    assert str(err.value).startswith(f"{f}:{line}: ")
    assert expected in str(err.value)


def test_empty_file(tmp_path):
    f = write(tmp_path, "# nothing but comments\n\n")
    with pytest.raises(InputError, match=r"s.dat: expected at least one"):
        read_sequences(f)
    empty = Dataset(
        X=read_sequences(write(tmp_path, "1 qid:1 1:1\n", "t")).X[:0],
        y=np.zeros(0),
        qid=np.zeros(0, np.int64),
        source="e",
    )
    with pytest.raises(InputError, match="e: expected at least one token line"):
        SequenceDataset.from_dataset(empty)


def test_test_files_accept_tag_zero(tmp_path):
    # svm_hmm_classify takes tags >= 0 (only the loss figures use them)
    f = write(tmp_path, "0 qid:1 1:1\n9 qid:1 2:1\n")
    seqs = read_sequences(f, for_training=False)
    np.testing.assert_array_equal(seqs.tags, [0, 9])
    with pytest.raises(InputError, match=r":1: expected an integer tag >= 0"):
        read_sequences(write(tmp_path, "-1 qid:1 1:1\n"), for_training=False)
    with pytest.raises(InputError, match=r":2: expected an integer tag >= 0"):
        read_sequences(write(tmp_path, "1 qid:1 1:1\n1.5 qid:1 1:1\n"), for_training=False)


def test_round_trip_through_dataset(fixtures):
    seqs = read_sequences(fixtures / "hmm_syn.test")
    again = SequenceDataset.from_dataset(seqs.to_dataset())
    np.testing.assert_array_equal(again.starts, seqs.starts)
    np.testing.assert_array_equal(again.tags, seqs.tags)
    assert again.comments == seqs.comments and seqs.comments[0] == "w0_0"


# -- model files ----------------------------------------------------------------------------


def test_read_svmhmm_model(fixtures):
    model = read_model(fixtures / EWT_MODEL)
    assert isinstance(model, SequenceModel)
    assert (model.n_features, model.n_tags, model.trans_order, model.emit_order, model.loss_id) == (
        9290,
        17,
        1,
        0,
        1,
    )
    assert len(model.w) == 167527
    # the first weights of the file: "1 18:-0.0044308393 19:0.0068238769 ..."
    assert model.w[17] == pytest.approx(-0.0044308393, rel=1e-7)
    assert model.w[18] == pytest.approx(0.0068238769, rel=1e-7)
    assert np.all(model.w[:17] == 0)


def test_written_header_is_svmhmms(fixtures, tmp_path):
    import lzma

    original = lzma.decompress((fixtures / EWT_MODEL).read_bytes()).decode().split("\n")
    model = read_model(fixtures / EWT_MODEL)
    text = format_model(model).split("\n")
    assert text[:15] == original[:15]
    assert text[15].startswith("1 18:") and text[15].endswith(" #")


@pytest.mark.parametrize("order", SYN_ORDERS + ["ewt"])
def test_model_round_trip(fixtures, tmp_path, order):
    name = EWT_MODEL if order == "ewt" else f"hmm_syn_{order}.model"
    model = read_model(fixtures / name)
    out = tmp_path / "m.model"
    write_model(out, model)
    again = read_model(out)
    np.testing.assert_array_equal(again.w, model.w)
    assert again.layout == model.layout and again.loss_id == model.loss_id
    # a model of our own (weights with all 17 digits) survives too
    rng = np.random.default_rng(0)
    ours = SequenceModel.from_layout(rng.normal(size=model.layout.size_psi), model.layout)
    write_model(out, ours)
    np.testing.assert_array_equal(read_model(out).w, ours.w)


@pytest.mark.parametrize("order", SYN_ORDERS)
def test_predictions_of_svm_hmm_models(fixtures, order):
    """Every transition/emission order: svm_hmm_classify's tags, token for token."""
    model = read_model(fixtures / f"hmm_syn_{order}.model")
    seqs = read_sequences(fixtures / "hmm_syn.test", for_training=False)
    expected = np.loadtxt(fixtures / f"hmm_syn_{order}.pred", dtype=np.int64)
    np.testing.assert_array_equal(model.predict(seqs.X, seqs.starts), expected)


@pytest.mark.parametrize(
    "changes, line, expected",
    [
        ({"0 # kernel type": "2 # kernel type"}, 2, "linear SVM-hmm model"),
        (
            {"1 # HMM order of transitions": "5 # HMM order of transitions"},
            11,
            "transition order in 0..3",
        ),
        ({"0 # HMM order of emissions": "2 # HMM order of emissions"}, 12, "emission order"),
        ({"2 # number of classes": "two # number of classes"}, 10, "'number of classes' (int)"),
        (
            {"2 # number of support vectors plus 1": "3 # number of support vectors plus 1"},
            17,
            "expected 2 support vectors as the header says, found 1",
        ),
        (
            {"16 # number of emission features": "1 # number of emission features"},
            16,
            "expected weight indices up to",
        ),
    ],
)
def test_bad_model_files(tmp_path, changes, line, expected):
    layout = HmmLayout(2, 2, 1, 0)  # 2 tags, 2 features: size_psi 13
    w = np.arange(1, layout.size_psi + 1) / 8.0
    text = format_model(SequenceModel.from_layout(w, layout))
    for old, new in changes.items():
        old = old.replace("16 #", f"{layout.n_features} #")
        assert old in text
        text = text.replace(old, new, 1)
    f = tmp_path / "bad.model"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        read_model(f)
    assert str(err.value).startswith(f"{f}:{line}: ")
    assert expected in str(err.value)


def test_truncated_model_file(tmp_path, fixtures):
    text = (fixtures / "hmm_syn_t1e1.model").read_text()
    f = tmp_path / "cut.model"
    f.write_text("\n".join(text.split("\n")[:9]) + "\n")
    with pytest.raises(InputError, match=r"cut.model:10: expected 'number of classes'"):
        read_model(f)
    f.write_text("\n".join(text.split("\n")[:15]) + "\n")
    with pytest.raises(InputError, match=r"cut.model:16: expected 1 support vectors"):
        read_model(f)


# -- cp_classify ----------------------------------------------------------------------------


def test_cp_classify_reproduces_svm_hmm_classify(cli, fixtures, tmp_path):
    out = tmp_path / "pred"
    r = cli("classify", fixtures / EWT_TEST, fixtures / EWT_MODEL, out)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == (fixtures / "ewt200.hmm.pred").read_text()
    printed = (fixtures / "ewt200.hmm.classify.txt").read_text().splitlines()
    figures = [line for line in printed if line.startswith(("Average", "Zero/one"))]
    assert len(figures) == 3
    assert r.stdout.splitlines() == figures
    assert "200 examples, 4267 tokens, 9278 features, 16 classes" in r.stderr


def test_cp_classify_beam(cli, fixtures, tmp_path):
    exact = (fixtures / "hmm_syn_t2e1.pred").read_text()
    wide, narrow = tmp_path / "wide", tmp_path / "narrow"
    args = (fixtures / "hmm_syn.test", fixtures / "hmm_syn_t2e1.model")
    r = cli("classify", "--b", 16, *args, wide)
    assert r.returncode == 0, r.stderr
    assert wide.read_text() == exact  # a beam as wide as the 4^2 states is exact
    r = cli("classify", "-v", "0", "--b", 1, *args, narrow)
    assert r.returncode == 0 and r.stdout == ""
    tags = np.loadtxt(narrow, dtype=np.int64)
    assert len(tags) == len(exact.split()) and tags.min() >= 1 and tags.max() <= 4


def test_cp_classify_refuses_a_file_without_sentences(cli, fixtures, tmp_path):
    bad = write(tmp_path, "1 qid:1 1:1\n2 1:1\n", "bad.dat")
    out = tmp_path / "pred"
    r = cli("classify", bad, fixtures / "hmm_syn_t1e0.model", out)
    assert r.returncode == 1
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"{bad}:2: expected qid:<sentence> "
            "with a sentence id >= 1 on every token "
            "line (SVM-hmm format), got no qid "
            "(or qid:0)"
        )
    )
    assert "Traceback" not in r.stderr and not out.exists()
