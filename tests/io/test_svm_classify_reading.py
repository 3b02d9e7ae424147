"""A model file with Platt's sigmoid (--probability) is still read by SVMlight's
svm_classify, with the same predictions: a faithful reimplementation of svm_classify's
reading (svm_common.c read_model: fscanf's ``%ld%*[^\\n]\\n`` and ``%lf%*[^\\n]\\n`` per
header line, parse_document per support vector and per test example, SVMlight's FVAL
float features) and of its classify_example, checked first against svm_classify's own
predictions of the reference models (tests/fixtures), then run on our models."""

import re

import numpy as np
import pytest

from cpsvm.io.model_file import read_model

_LONG = re.compile(rb"[+-]?\d+")
_DOUBLE = re.compile(
    rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE
)


class _Scanner:
    """fscanf over a file's bytes: what each directive of read_model's formats consumes."""

    def __init__(self, raw: bytes):
        self.raw, self.at = raw, 0

    def whitespace(self):  # a space or "\n" in a format: any amount of whitespace
        while self.at < len(self.raw) and self.raw[self.at : self.at + 1].isspace():
            self.at += 1

    def literal(self, text: bytes):
        assert self.raw.startswith(text, self.at), (text, self.raw[self.at : self.at + 40])
        self.at += len(text)

    def number(self, pattern):  # %ld / %lf skip leading whitespace, then strtol / strtod
        self.whitespace()
        found = pattern.match(self.raw, self.at)
        assert found, self.raw[self.at : self.at + 40]
        self.at = found.end()
        return found.group(0)

    def rest_of_line(self):  # %*[^\n]\n (a failed %[ with nothing to take stops the call;
        # the next %ld or %lf skips the newline anyway)
        end = self.raw.find(b"\n", self.at)
        self.at = len(self.raw) if end < 0 else end
        self.whitespace()

    def until_hash(self):  # %[^#]
        end = self.raw.find(b"#", self.at)
        taken, self.at = self.raw[self.at : end], end
        return taken

    def fgets(self):
        end = self.raw.find(b"\n", self.at)
        end = len(self.raw) if end < 0 else end + 1
        line, self.at = self.raw[self.at : end], end
        return line


def parse_document(line: bytes):
    """(alpha or target, {index: FVAL}) of one line, as svm_common.c's parse_document
    reads it: the comment after '#' dropped, qid/sid/cost tokens skipped, values float."""
    tokens = line.split(b"#", 1)[0].split()
    features = {}
    for token in tokens[1:]:
        name, _, value = token.partition(b":")
        if name in (b"qid", b"sid", b"cost"):
            continue
        features[int(name)] = float(np.float32(float(value)))
    return float(tokens[0]), features


def svm_classify_read(raw: bytes) -> dict:
    """svm_common.c read_model, directive by directive."""
    s = _Scanner(raw)
    s.literal(b"SVM-light Version ")
    version = s.number(re.compile(rb"\S+"))
    s.whitespace()
    assert version == b"V6.20"  # svm_classify refuses any other
    model = {}
    for name, pattern in (
        ("kernel_type", _LONG),
        ("poly_degree", _LONG),
        ("rbf_gamma", _DOUBLE),
        ("coef_lin", _DOUBLE),
        ("coef_const", _DOUBLE),
    ):
        text = s.number(pattern)
        model[name] = int(text) if pattern is _LONG else float(text)
        s.rest_of_line()
    model["custom"] = s.until_hash()
    s.rest_of_line()
    for name, pattern in (
        ("totwords", _LONG),
        ("totdoc", _LONG),
        ("sv_num", _LONG),
        ("b", _DOUBLE),
    ):
        text = s.number(pattern)
        model[name] = int(text) if pattern is _LONG else float(text)
        s.rest_of_line()
    model["svs"] = [parse_document(s.fgets()) for _ in range(model["sv_num"] - 1)]
    return model


def svm_classify_decisions(model: dict, test: bytes) -> np.ndarray:
    """classify_example of every test line (linear: Σ alpha·sv·x − b; RBF: Σ alpha·
    exp(−g|sv − x|²) − b), the test features read by parse_document."""
    out = []
    for line in test.splitlines():
        if not line.strip() or line.startswith(b"#"):
            continue
        _, x = parse_document(line)
        total = 0.0
        for alpha, sv in model["svs"]:
            dot = sum(v * x.get(j, 0.0) for j, v in sv.items())
            if model["kernel_type"] == 0:
                total += alpha * dot
            else:
                assert model["kernel_type"] == 2
                squares = sum(v * v for v in sv.values()) + sum(v * v for v in x.values())
                total += alpha * np.exp(-model["rbf_gamma"] * (squares - 2 * dot))
        out.append(total - model["b"])
    return np.array(out)


@pytest.mark.parametrize("kind", ["linear", "rbf"])
def test_the_reimplementation_reproduces_svm_classify(fixtures, kind):
    name = f"heart_scale.light_{kind}"
    model = svm_classify_read((fixtures / f"{name}.model").read_bytes())
    ours = svm_classify_decisions(model, (fixtures / "heart_scale").read_bytes())
    np.testing.assert_allclose(ours, np.loadtxt(fixtures / f"{name}.pred"), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "command, args",
    [
        ("ocas", ["-c", "1", "-b", "1"]),
        ("learn", ["-c", "10"]),
        ("sampled", ["-c", "1", "-t", "2", "-g", "0.05", "--r", "200"]),
        ("asset", ["-c", "1", "-t", "2", "-g", "0.05", "--k", "64", "--epochs", "3"]),
    ],
)
def test_svm_classify_reads_a_model_with_platt(cli, samples, tmp_path, command, args):
    """The model with --probability is the model without it but for the threshold line's
    comment; svm_classify reads both alike (its b, its support vectors) and predicts what
    cp_classify predicts."""
    train, test = samples / "a9a3k.train", samples / "a9a2k.test"
    plain, with_platt = tmp_path / "plain", tmp_path / "platt"
    assert cli(command, *args, "-v", "0", train, plain).returncode == 0
    run = cli(command, *args, "-v", "0", "--probability", train, with_platt)
    assert run.returncode == 0, run.stderr
    plain_lines = plain.read_bytes().split(b"\n")
    platt_lines = with_platt.read_bytes().split(b"\n")
    differ = [k for k, (a, b) in enumerate(zip(plain_lines, platt_lines)) if a != b]
    assert len(plain_lines) == len(platt_lines) and differ == [10]
    assert platt_lines[10].startswith(plain_lines[10] + b"; Platt's sigmoid A ")
    read = read_model(with_platt)
    assert read.platt is not None and read.platt[0] < 0

    model = svm_classify_read(with_platt.read_bytes())
    assert model == svm_classify_read(plain.read_bytes())
    assert model["b"] == read.b
    decisions = svm_classify_decisions(model, test.read_bytes())
    predictions = tmp_path / "pred"
    assert cli("classify", "-v", "0", test, with_platt, predictions).returncode == 0
    ours = np.loadtxt(predictions)
    np.testing.assert_allclose(decisions, ours, rtol=1e-6, atol=1e-6)
    assert np.array_equal(decisions > 0, ours > 0)
