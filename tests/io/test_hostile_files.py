"""Files built to break the readers: each is refused with one line naming the file and
the line, before anything too large is allocated (issue 30)."""

import numpy as np
import pytest

from cpsvm.errors import InputError
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import VALUE_LIMIT, WEIGHT_VECTORS, parse_svmlight_bytes, read_examples
from cpsvm.io.trees import parse_trees
from cpsvm.memory import physical_memory
from cpsvm.problems.labels import check_multiclass_labels


def refused(call, *fragments, line=None):
    with pytest.raises(InputError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message and all(f in message for f in fragments), message
    if line is not None:
        assert caught.value.line == line, message
    return message


@pytest.mark.parametrize("value", ["1e151", "-1e308", "1.7976931348623157e308"])
def test_values_whose_products_overflow(tmp_path, value):
    path = tmp_path / "x.svm"
    path.write_text(f"1 1:1\n-1 2:{value}\n")
    refused(lambda: read_examples(path), "feature value of magnitude at most", line=2)
    path.write_text(f"1 1:1\n{value} 2:1\n")
    refused(lambda: read_examples(path), "target of magnitude", line=2)
    path.write_text(f"1 1:1\n-1 cost:{value} 2:1\n")
    refused(lambda: read_examples(path), "cost: of magnitude", line=2)
    # the library reader itself keeps every finite number
    assert parse_svmlight_bytes(f"1 1:{VALUE_LIMIT}\n".encode(), "m").X[0, 0] == VALUE_LIMIT


def test_a_feature_index_whose_weights_cannot_fit(tmp_path, monkeypatch):
    width = physical_memory() // 8 + 1  # one dense vector of it alone fills the memory
    path = tmp_path / "wide.svm"
    path.write_text(f"1 1:1\n-1 2:1 {width}:0.5\n")
    data = read_examples(path)  # renumbered to its 3 distinct features: it fits
    assert data.n_features == 3 and data.feature_ids.tolist() == [0, 1, width - 1]
    assert read_examples(path, training=False).n_features == width  # classifying: fine
    # Refused only when even the distinct features' weight vectors would not fit.
    monkeypatch.setattr("cpsvm.memory.physical_memory", lambda: 8 * WEIGHT_VECTORS * 3 - 1)
    refused(lambda: read_examples(path), "3 distinct features", "would need", line=2)
    path.write_text("1 1:1\n-1 2:1 3:0.5\n")
    refused(lambda: read_examples(path), "feature index 3", "would need", line=2)


@pytest.mark.parametrize("label", ["1e19", "1e308", "1000000000000"])
def test_a_class_label_whose_model_cannot_fit(label):
    data = parse_svmlight_bytes(f"1 1:1\n2 2:1\n{label} 3:1\n".encode(), "mc")
    refused(lambda: check_multiclass_labels(data), f"class label {float(label):g}", line=3)


def test_trees_of_any_depth_or_width_are_read():
    # no limit: nothing recurses over trees (tests/decoding/test_deep_trees.py)
    deep = "(S " + "(NP " * 5000 + "(NN w)" + ")" * 5000 + ")"
    flat = "(S " + " ".join(f"(NN w{i})" for i in range(5000)) + ")"
    trees = parse_trees(f"(S (NN a))\n{deep}\n{flat}\n", "t")
    assert [t.line for t in trees] == [1, 2, 3] and len(trees[2].children) == 5000
    refused(lambda: parse_trees(f"(S (NN a))\n{deep[:-1]}\n", "t"), "truncated", line=2)


def test_byte_order_marks():
    data = parse_svmlight_bytes(b"\xef\xbb\xbf1 1:1\n-1 2:1\n", "bom")
    assert data.y.tolist() == [1.0, -1.0]
    refused(lambda: parse_svmlight_bytes("1 1:1\n".encode("utf-16"), "u16"), "UTF-16", line=1)


def _trained(tmp_path, samples, cli, args, train):
    model = tmp_path / "m"
    run = cli("learn", "-v", "0", *args, samples / train, model)
    assert run.returncode == 0, run.stderr
    return model.read_bytes()


@pytest.mark.parametrize(
    "args, train",
    [
        (["-c", "1"], "a9a3k.train"),
        (["-c", "10"], "dna1k.train"),
        (["-c", "10", "-e", "1"], "ewt60.hmm.train"),
        (["-c", "10"], "toy.rank.train"),
    ],
)
def test_model_files_cut_short_or_oversized(tmp_path, samples, cli, args, train):
    raw = _trained(tmp_path, samples, cli, args, train)
    assert raw.endswith(b"\n")
    cut = tmp_path / "cut"
    for fraction in (0.3, 0.6, 0.95):
        cut.write_bytes(raw[: int(len(raw) * fraction)])
        message = refused(lambda: read_model(cut), "truncated model file?")
        assert message.startswith(f"{cut}:")
    lines = raw.split(b"\n")
    # the header count that sizes the weights: SVM-hmm's emission features (refused),
    # else the highest feature index: read in the support vectors' distinct columns (a
    # multiclass model: in its classes x base features, which the header also gives)
    hmm = lines[0].startswith(b"SVM-HMM")
    label = b"# number of emission features" if hmm else b"# highest feature index"
    at = next(k for k, line in enumerate(lines) if label in line)
    huge = lines.copy()
    huge[at] = b"1000000000000 " + label
    cut.write_bytes(b"\n".join(huge))
    if hmm:  # its weights then fall in the block SVMhmm leaves unused
        refused(lambda: read_model(cut), "unused by SVM-hmm", "emission features", line=at + 1)
    else:
        model, original = read_model(cut), read_model(tmp_path / "m")
        multiclass = lines[0].startswith(b"SVM-multiclass")
        assert (model.feature_ids is None) == multiclass and model.n_features < 1000
        X = parse_svmlight_bytes(b"1 1:1 2:0.5 5:1 7:2 30:1\n", "x").X
        assert np.allclose(model.decision_function(X), original.decision_function(X))
