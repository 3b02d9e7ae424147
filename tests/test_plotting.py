"""cpsvm.plotting: each picture holds what it says (its SVG's text read back), the formats,
the atomic write, and a host process left as it was."""

import math
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from cpsvm.errors import InputError, OptionError
from cpsvm.measures import average_precision, roc_area
from cpsvm.plotting import PLOT_MISSING, plot_path, plot_scores, plot_trace

pytest.importorskip("matplotlib")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SVG = "{http://www.w3.org/2000/svg}"


def svg_texts(path) -> list[str]:
    """The text of every <text> element of an SVG file (svg.fonttype 'none'), its runs of
    white space made one space."""
    root = ET.parse(path).getroot()
    return [" ".join("".join(t.itertext()).split()) for t in root.iter(f"{SVG}text")]


def trace_rows(n=12):
    rows = []
    for i in range(1, n + 1):
        primal, dual = 10.0 + 5.0 / i, 10.0 - 5.0 / i
        rows.append(
            dict(
                iteration=i,
                primal=primal,
                dual=-math.inf if i == 1 else dual,  # a first dual bound may be -inf
                gap=primal - dual,
                violation=0.1,
                working_set=i,
                oracle_calls=i,
                seconds=0.01 * i,
            )
        )
    return rows


def test_trace_svg_names_its_axes_and_curves(tmp_path):
    out = tmp_path / "trace.svg"
    plot_trace(trace_rows(), out, "cp_learn train.dat: training trace")
    texts = svg_texts(out)
    for label in ("iteration", "seconds", "objective", "duality gap (log scale)"):
        assert label in texts
    # the legend of each of the two panels
    assert texts.count("primal") == 2 and texts.count("dual") == 2 and texts.count("gap") == 2
    assert "cp_learn train.dat: training trace" in texts


def test_trace_from_the_text_of_a_trace_file_as_png(tmp_path):
    # --trace's TSV read back: the values are text.
    rows = [{k: str(v) for k, v in row.items()} for row in trace_rows()]
    out = tmp_path / "trace.PNG"
    plot_trace(rows, out, "from a file")
    assert out.read_bytes().startswith(PNG_SIGNATURE)


def test_asset_trace_has_the_objective_and_the_validation_error(tmp_path):
    rows = [
        dict(
            epoch=0.1 * i,
            iteration=10 * i,
            objective=1.0 / i,
            validation_error=0.2 + 0.1 / i,
            seconds=0.5 * i,
            sample_objective=math.nan,
        )
        for i in range(1, 8)
    ]
    out = tmp_path / "asset.svg"
    plot_trace(rows, out, "asset")
    texts = svg_texts(out)
    assert "objective" in texts and "validation error" in texts and "validation" in texts
    assert "primal" not in texts


def test_trace_of_no_iteration_says_so(tmp_path):
    out = tmp_path / "empty.svg"
    plot_trace([], out, "nothing")
    assert "no iterations recorded" in svg_texts(out)


def test_path_marks_the_chosen_c_with_a_band_and_a_log_axis(tmp_path):
    rows = [dict(C=C, mean=10 + abs(math.log10(C)), sd=0.5) for C in 10.0 ** np.arange(-3, 4)]
    out = tmp_path / "path.svg"
    plot_path(rows, out, "error (%)", "ocas_learn a9a: 5-fold CV", chosen=1.0)
    texts = svg_texts(out)
    assert "C" in texts and "error (%)" in texts and "ocas_learn a9a: 5-fold CV" in texts
    assert "chosen C = 1" in texts and "± sd" in texts and "mean over the folds" in texts
    # a log axis: the ticks are 10^k, "10" and a superscript k in tspans
    ticks = {text.replace(" ", "") for text in texts}
    assert {"10−3", "100", "103"} <= ticks


def test_path_draws_a_curve_per_gamma(tmp_path):
    rows = [
        dict(C=C, mean=10 + abs(math.log10(C)) + g, sd=math.nan, gamma=g)
        for C in (0.01, 1.0, 100.0)
        for g in (0.1, 1.0)
    ]
    out = tmp_path / "grid.svg"
    plot_path(rows, out, "ROC area (%)", "grid", chosen=(1.0, 0.1))
    texts = svg_texts(out)
    assert "mean, γ = 0.1" in texts and "mean, γ = 1" in texts
    assert "chosen C = 1, γ = 0.1" in texts
    assert "± sd" not in texts  # no sd, no band


def test_path_of_no_row_is_refused(tmp_path):
    with pytest.raises(InputError, match="no C path"):
        plot_path([], tmp_path / "p.svg", "error", "t")
    assert not (tmp_path / "p.svg").exists()


def binary_scores(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    decision = np.round(y * 0.8 + rng.normal(size=n), 1)  # rounded: ties in the ranking
    y[:5] = 0  # unlabelled, left out
    return y, decision


def test_binary_legends_hold_the_measures_areas(tmp_path):
    y, decision = binary_scores()
    out = tmp_path / "roc.svg"
    plot_scores("binary", out, "model on test", y=y, scores=decision)
    texts = svg_texts(out)
    labelled = y != 0
    roc = roc_area(y[labelled], decision[labelled])
    ap = average_precision(y[labelled], decision[labelled])
    assert f"ROC area {roc:.2f}%" in texts
    assert f"average precision {ap:.2f}%" in texts
    for label in ("false positive rate", "true positive rate (recall)", "recall", "precision"):
        assert label in texts
    assert "model on test" in texts


def test_roc_curve_is_the_staircase_whose_area_is_the_measures(tmp_path, monkeypatch):
    # The curve drawn is read back from the Line2D: its area under the steps is roc_area.
    from matplotlib.axes import Axes

    drawn = {}
    original = Axes.step

    def step(self, x, y, *args, **kwargs):
        drawn["roc"] = (np.asarray(x), np.asarray(y))
        return original(self, x, y, *args, **kwargs)

    monkeypatch.setattr(Axes, "step", step)
    y, decision = binary_scores(seed=3)
    plot_scores("binary", tmp_path / "roc.png", "t", y=y, scores=decision)
    fpr, tpr = drawn["roc"]
    area = float(np.sum(np.diff(fpr) * tpr[:-1]))
    labelled = y != 0
    assert 100 * area == pytest.approx(roc_area(y[labelled], decision[labelled]), abs=1e-9)


def test_binary_of_one_class_is_an_input_error_and_writes_nothing(tmp_path):
    out = tmp_path / "roc.svg"
    out.write_text("before")
    with pytest.raises(InputError, match="all of one class"):
        plot_scores("binary", out, "t", y=np.ones(10), scores=np.arange(10.0))
    assert out.read_text() == "before"


def test_confusion_matrix_names_the_classes_and_counts(tmp_path):
    y = np.array([1, 1, 2, 2, 2, 3, 4, 0])
    predicted = np.array([1, 2, 2, 2, 3, 3, 1, 4])
    out = tmp_path / "confusion.svg"
    plot_scores("multiclass", out, "dna", y=y, scores=predicted, n_classes=4)
    texts = svg_texts(out)
    for name in ("1", "2", "3", "4"):
        assert texts.count(name) >= 2  # a tick on each axis (and maybe a count)
    assert "predicted class" in texts and "true class" in texts
    # 7 known examples (target 0 left out), 3 wrong
    assert "confusion matrix: 3 of 7 wrong (42.86% error)" in texts
    assert texts.count("2") >= 3  # the two ticks and the count of (2, 2)


def test_ranking_draws_the_queries_ndcg_and_their_mean(tmp_path):
    ndcg = np.array([0.5, 1.0, np.nan, 0.75])
    out = tmp_path / "ndcg.svg"
    plot_scores("ranking", out, "rank", ndcg=ndcg, at=10)
    texts = svg_texts(out)
    assert "mean NDCG@10 0.7500" in texts and "NDCG@10" in texts
    assert "per-query NDCG@10 (3 queries; 1 without a relevant document left out)" in texts


def test_unknown_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="kind of scores"):
        plot_scores("hmm", tmp_path / "x.svg", "t")


@pytest.mark.parametrize("name", ["x.pdf", "x", "x.svg.gz", "-"])
def test_other_suffixes_are_a_usage_error_naming_the_accepted(tmp_path, name):
    with pytest.raises(OptionError, match=r"ending in \.png or \.svg"):
        plot_trace(trace_rows(), tmp_path / name, "t")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_drawing_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    out = tmp_path / "trace.png"
    out.write_bytes(b"old")

    def broken(self, *args, **kwargs):
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RuntimeError):
        plot_trace(trace_rows(), out, "t")
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["trace.png"]


def test_a_failed_write_leaves_no_temporary(tmp_path, monkeypatch):
    import cpsvm.io.atomic as atomic

    out = tmp_path / "trace.svg"
    real_replace = atomic.os.replace

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    with pytest.raises(OSError):
        plot_trace(trace_rows(), out, "t")
    monkeypatch.setattr(atomic.os, "replace", real_replace)
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_is_one_usage_error_with_the_pip_hint(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    with pytest.raises(OptionError) as raised:
        plot_trace(trace_rows(), tmp_path / "t.svg", "t")
    assert str(raised.value) == PLOT_MISSING
    assert "pip install 'cpsvm[plot]'" in PLOT_MISSING
    assert list(tmp_path.iterdir()) == []


def test_the_host_process_keeps_its_backend_and_settings(tmp_path):
    import matplotlib

    backend = matplotlib.get_backend()
    before = dict(matplotlib.rcParams)
    had_pyplot = "matplotlib.pyplot" in sys.modules
    plot_trace(trace_rows(), tmp_path / "t.svg", "t")
    y, decision = binary_scores()
    plot_scores("binary", tmp_path / "b.png", "t", y=y, scores=decision)
    assert matplotlib.get_backend() == backend
    assert dict(matplotlib.rcParams) == before
    assert ("matplotlib.pyplot" in sys.modules) == had_pyplot


def test_the_same_picture_gives_the_same_bytes(tmp_path):
    for name in ("a.svg", "b.svg", "a.png", "b.png"):
        plot_trace(trace_rows(), tmp_path / name, "t")
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
