"""Margin-change bounds (Guillory & Bilmes): the pruned loss and subgradient against a
numpy computation over every row, on random data and random sequences of w; training
runs with and without pruning; the §4.1 illustration; Huber gradient descent against
scipy's optimum of the same objective; the flags of the three commands."""

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SAMPLES
from conftest import run_cli as run
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from cpsvm.engine.gradient_descent import huber_gd
from cpsvm.engine.margin_bounds import HINGE, HUBER, ResortPolicy, SortedMargins
from cpsvm.engine.sgd import SGDSettings, run_sgd
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight

TRAIN = SAMPLES / "a9a3k.train"


def reference(X, y, c, w, b, loss, a, h):
    """Σ c·ℓ(m), Σ c·(−ℓ′)·y·x, Σ c·(−ℓ′)·y and the rows with a loss, by numpy."""
    m = y * (np.asarray(X @ w).ravel() + b)
    if loss == HUBER:
        lin = m <= a - h
        quad = ~lin & (m < a + h)
        value = np.where(lin, a - m, np.where(quad, (a + h - m) ** 2 / (4 * h), 0.0))
        slope = np.where(lin, 1.0, np.where(quad, (a + h - m) / (2 * h), 0.0))
    else:
        value = np.maximum(0.0, a - m)
        slope = (m < a).astype(float)
    coef = c * slope * y
    return (
        float(c @ value),
        np.asarray(X.T @ coef).ravel(),
        float(coef.sum()),
        int(np.count_nonzero(slope)),
    )


def close(ev, ref, scale):
    loss, grad, grad_b, count = ref
    tol = 1e-9 * scale
    assert abs(ev.loss - loss) <= tol
    assert np.allclose(ev.grad, grad, rtol=0, atol=tol)
    assert abs(ev.grad_b - grad_b) <= tol
    assert ev.count == count


@st.composite
def problems(draw):
    n = draw(st.integers(1, 60))
    d = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # Small integers: margins land exactly on the kinks (ties) often.
    dense = rng.integers(-2, 3, size=(n, d)).astype(float)
    dense[rng.random((n, d)) < draw(st.sampled_from([0.0, 0.5, 0.9]))] = 0.0
    if draw(st.booleans()):
        dense[rng.random(n) < 0.2] = 0.0  # empty rows
    side = draw(st.sampled_from(["mixed", "positive", "negative"]))
    y = {
        "mixed": np.where(rng.random(n) < 0.5, -1.0, 1.0),
        "positive": np.ones(n),
        "negative": -np.ones(n),
    }[side]
    c = rng.integers(1, 4, size=n) / 2.0
    X = sp.csr_matrix(dense)
    if draw(st.booleans()):
        # Explicit zeros stored: rows of every length, the dense array when full.
        X = sp.csr_matrix(
            (dense.ravel(), np.tile(np.arange(d), n), np.arange(n + 1) * d), shape=(n, d)
        )
    loss = draw(st.sampled_from([HINGE, HUBER]))
    h = draw(st.sampled_from([0.5, 1.0])) if loss == HUBER else 0.0
    # A sequence of moves: none (w = w′), tiny, unit, huge, or to a lattice point (ties).
    moves = draw(
        st.lists(
            st.sampled_from(["same", "tiny", "unit", "huge", "lattice"]), min_size=1, max_size=8
        )
    )
    return X, y, c, loss, h, moves, rng


@settings(max_examples=120, deadline=None)
@given(
    problems(),
    st.sampled_from([False, True, "auto"]),
    st.sampled_from(["boundary", "dense"]),
    st.sampled_from([1, 2, 3, 100]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_pruned_equals_plain(problem, center, prefix, period, offset, partial, scattered):
    X, y, c, loss, h, moves, rng = problem
    d = X.shape[1]
    mb = SortedMargins(
        X,
        y,
        c,
        loss=loss,
        a=1.0,
        h=h,
        center=center,
        prefix=prefix,
        policy=ResortPolicy(period=period),
    )
    if partial:
        mb.PARTIAL_SORT_MIN = 0  # some rows sorted, the others in two blocks
    if scattered:
        mb.COPY = False  # the band read from the rows in place
    else:
        mb.COPY = True  # from a sorted copy
    w = rng.integers(-1, 2, size=d).astype(float)
    b = 0.0
    for move in moves:
        if move == "tiny":
            w = w + 1e-3 * rng.normal(size=d)
        elif move == "unit":
            w = w + rng.normal(size=d)
        elif move == "huge":
            w = w + 1e6 * rng.normal(size=d)
        elif move == "lattice":
            w = rng.integers(-1, 2, size=d).astype(float)
        if offset and move != "same":
            b = float(rng.integers(-2, 3)) if move == "lattice" else b + 0.1 * rng.normal()
        ev = mb.evaluate(w, b)
        ref = reference(X, y, c, w, b, loss, 1.0, h)
        scale = 1.0 + float(np.sum(c)) * (
            1.0 + np.abs(w).sum() * (abs(X).max() if X.nnz else 0.0) + abs(b)
        )
        close(ev, ref, scale)
        assert 0 <= ev.computed <= X.shape[0]


def test_a_resort_changes_nothing_but_rounding():
    """The same sequence of w evaluated with sorts at different times."""
    rng = np.random.default_rng(3)
    X = sp.random(400, 20, density=0.3, random_state=4, format="csr")
    y = np.where(rng.random(400) < 0.5, -1.0, 1.0)
    ws = np.cumsum(0.05 * rng.normal(size=(30, 20)), axis=0)
    runs = []
    for period in (1, 4, 1000):
        mb = SortedMargins(X, y, loss=HINGE, policy=ResortPolicy(period=period))
        runs.append([mb.evaluate(w) for w in ws])
        assert mb.resorts == -(-30 // (period + 1)) if period < 1000 else mb.resorts == 1
    for a, b in zip(runs[0], runs[1]):
        assert a.count == b.count and a.weight == b.weight
        assert abs(a.loss - b.loss) <= 1e-12 * max(1.0, abs(a.loss))
        assert np.allclose(a.grad, b.grad, rtol=1e-12, atol=1e-12)
    assert np.mean([e.computed for e in runs[2]]) < 400  # something was pruned


def test_policy_rules():
    """SortPeriod = c·SortTime/EvalTime; then rule (a) (fewer than half pruned) or (b)
    (the last evaluation cost at least the average since the sort, sort included); plain
    while nothing is pruned."""
    pol = ResortPolicy(c=1.0)
    assert pol.should_resort()
    pol.sorted_now(sort_time=3.0, eval_time=1.0)
    for _ in range(2):
        pol.evaluated(0.1)
        assert not pol.should_resort()  # period 3 not reached
    pol.evaluated(0.1)
    assert not pol.should_resort()  # (b): 0.1 < (3 + 0.3)/3
    pol.evaluated(0.6)
    assert pol.should_resort()  # (a)
    pol.sorted_now(3.0, 1.0)
    for _ in range(10):
        pol.evaluated(0.1)
    assert not pol.should_resort()  # 0.1 < (3 + 1)/10
    pol.evaluated(0.45)
    assert pol.should_resort()  # (b): 0.45 >= (3 + 1 + 0.45)/11
    pol.sorted_now(3.0, 1.0)
    pol.evaluated(1.0)
    assert pol.plain and not pol.should_resort()
    # That period saved nothing: the next is twice as long; one that pays resets it.
    for _ in range(3):
        pol.evaluated(1.0)
    assert pol.should_resort()
    pol.sorted_now(3.0, 1.0)
    assert pol.sort_period() == 6.0
    for _ in range(6):
        pol.evaluated(0.1)
    pol.sorted_now(3.0, 1.0)  # saved 5.4 >= 3
    assert pol.sort_period() == 3.0


def test_gaussian_illustration():
    """§4.1: 100,000 points of a 2-D Gaussian labelled by w = (1, 1), margins sorted at
    w′ = (1, 1) and evaluated at w′ plus N(0, 0.1²) noise: only the points the bound
    cannot place are examined — with each point's own radius (§5), fewer than with its
    class's largest."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(100_000, 2))
    y = np.where(A @ [1.0, 1.0] > 0, 1.0, -1.0)
    X = sp.csr_matrix(A)
    w_ref = np.array([1.0, 1.0])
    w = w_ref + rng.normal(scale=0.1, size=2)
    move = np.linalg.norm(w - w_ref)
    m_ref = y * (A @ w_ref)
    # Each center's exact shift and radius per point, by numpy: the origin, the class mean.
    means = {s: A[y == s].mean(axis=0) for s in (-1.0, 1.0)}
    mu = np.array([means[s] for s in y])
    origin = (np.zeros(len(y)), np.linalg.norm(A, axis=1))
    around_mean = (y * (mu @ (w - w_ref)), np.linalg.norm(A - mu, axis=1))
    fractions = {}
    for center, bounds in (
        (False, [origin]),
        (True, [around_mean]),
        ("auto", [origin, around_mean]),
    ):
        for per_row in (False, True):
            mb = SortedMargins(
                X, y, loss=HINGE, center=center, per_row=per_row, policy=ResortPolicy(period=10)
            )
            mb.PARTIAL_SORT_MIN = len(y) + 1  # sorted whole: the bound's own count
            mb.evaluate(w_ref)
            ev = mb.evaluate(w)
            close(ev, reference(X, y, np.ones(len(y)), w, 0.0, HINGE, 1.0, 0.0), 1e5)
            # Examined: a point no center can place on its side of the threshold.
            examined = np.ones(len(y), dtype=bool)
            for shift, radius in bounds:
                r = radius if per_row else np.where(y > 0, radius[y > 0].max(), radius[y < 0].max())
                placed = np.where(
                    m_ref < 1.0, m_ref + shift + move * r < 1.0, m_ref + shift - move * r >= 1.0
                )
                examined &= ~placed
            expected = np.count_nonzero(examined)
            if per_row or center != "auto":
                assert abs(ev.computed - expected) <= 10 + 1e-3 * expected
            else:
                # The classes' largest radii give two tails: what lies between them.
                assert ev.computed >= expected
            fractions[center, per_row] = ev.computed / len(y)
    # The ball around the origin: about half the points (|m′ − 1| within 0.6 or so of
    # a |N(0, 2)|); the sphere around each class's mean (§5) is a little smaller here,
    # "auto" at most either, and each point's own radius smaller again.
    print("fractions examined (center, per row):", fractions)
    assert fractions[True, False] < fractions[False, False] < 0.6
    for center in (False, True, "auto"):
        assert fractions[center, True] < 0.9 * fractions[center, False]
    assert fractions["auto", True] <= min(fractions[False, True], fractions[True, True])


def test_intercept_moves_the_reference():
    """The margins are sorted with the intercept: evaluated near a model with a large
    offset b, only the rows near the threshold are computed (with b left out of the
    sorted margins, the band reached from the threshold to where b = 0 puts it)."""
    rng = np.random.default_rng(5)
    X = sp.csr_matrix(rng.normal(size=(4000, 5)))
    w = rng.normal(size=5)
    y = np.where(X @ w + 3.0 + 0.5 * rng.normal(size=4000) > 0, 1.0, -1.0)
    for loss, h in ((HINGE, 0.0), (HUBER, 0.01)):
        mb = SortedMargins(X, y, loss=loss, h=h, policy=ResortPolicy(period=10))
        mb.evaluate(w, 3.0)
        w_near = w + 1e-4 * rng.normal(size=5)
        ev = mb.evaluate(w_near, 3.0 + 1e-4)
        close(ev, reference(X, y, np.ones(len(y)), w_near, 3.0 + 1e-4, loss, 1.0, h), 1e4)
        m = y * (X @ w + 3.0)
        near = np.count_nonzero(np.abs(m - 1.0) <= h + 0.01)
        assert ev.computed <= near


def test_partial_sort_blocks_bound_both_ways():
    """Rows outside the sorted window are searched with their block's largest margin
    when they may stay linear and its smallest when they may stay zero: a shift that
    moves the lower block past the Huber band's top is still computed exactly."""
    rng = np.random.default_rng(0)
    m = np.concatenate([rng.uniform(0.3, 0.6, 20), 1.0 + rng.uniform(-0.005, 0.005, 80)])
    X = sp.csr_matrix(m[:, None])
    y = np.ones(len(m))
    mb = SortedMargins(X, y, loss=HUBER, h=1.0, center=False, policy=ResortPolicy(period=10))
    mb.PARTIAL_SORT_MIN = 0
    w = np.array([1.0])
    mb.evaluate(w, 0.0)
    ev = mb.evaluate(w, 1.5)
    close(ev, reference(X, y, np.ones(len(y)), w, 1.5, HUBER, 1.0, 1.0), 100.0)
    assert ev.loss > 0


# --- training runs: the same result with and without pruning ------------------------


@pytest.fixture(scope="module")
def a9a3k():
    return read_svmlight(TRAIN)


@pytest.mark.parametrize("C, eps, algorithm", [(100.0, 0.01, 3), (10.0, 0.01, 9)])
def test_cp_learn_same_run(a9a3k, C, eps, algorithm):
    from cpsvm.solvers.one_slack import StructParams, train

    out = {}
    for bounds in (False, True):
        _, info = train(
            a9a3k, StructParams(C=C, epsilon=eps, algorithm=algorithm, margin_bounds=bounds)
        )
        out[bounds] = info.result
    assert out[True].iterations == out[False].iterations
    assert abs(out[True].primal - out[False].primal) <= 1e-9 * out[False].primal


def gaussians(n, d, seed):
    """Two overlapping Gaussian classes, dense rows (the RowBlocks dense array)."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    A = rng.normal(size=(n, d)) + 0.3 * y[:, None]
    return sp.csr_matrix(A), y


@pytest.mark.parametrize("rows", ["sorted copy", "scattered", "dense"])
def test_ocas_same_run(a9a3k, monkeypatch, rows):
    """The three ways a band's rows are read: a sorted copy of short rows, the rows in
    place, the dense array of nearly dense data."""
    from cpsvm.data import Dataset
    from cpsvm.engine import ocas_bounds
    from cpsvm.engine.ocas_bounds import PrunedOcasOracle
    from cpsvm.solvers import ocas

    if rows == "scattered":
        monkeypatch.setattr(SortedMargins, "COPY", False)
    if rows == "dense":
        a9a3k = Dataset(*gaussians(3000, 20, 1))
    made = []

    class Spy(PrunedOcasOracle):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs, policy=ResortPolicy(period=5))
            made.append(self)

    # the solver imports the pruned oracle from its module when the bounds are on
    monkeypatch.setattr(ocas_bounds, "PrunedOcasOracle", Spy)
    out = {}
    for bounds in (False, True):
        # (At large C an OCAS run is chaotic: C·(1 + 1e-14) alone changes its
        # iterations. Here it is not.)
        model, info = ocas.train(
            a9a3k, ocas.OcasParams(C=0.1, tol_rel=1e-6, method=1, margin_bounds=bounds)
        )
        out[bounds] = (info.result, model, info.training_error)
    plain, pruned = out[False], out[True]
    assert pruned[0].iterations == plain[0].iterations
    assert abs(pruned[0].primal - plain[0].primal) <= 1e-9 * plain[0].primal
    # w is determined less sharply than the objective near the optimum.
    assert np.allclose(pruned[1].w, plain[1].w, rtol=0, atol=1e-6)
    assert pruned[2] == plain[2]
    assert min(made[0].fractions) < 0.1  # late iterations: a few rows computed


@pytest.mark.parametrize("k, star", [(100, True), (10, False)])
def test_sgd_same_model_at_any_refresh(a9a3k, k, star):
    """Algorithm 3 skips only rows whose loss is surely 0: the iterates are the same
    bit for bit, whenever the reference is refreshed."""
    from cpsvm.solvers.asset import _SparseRows

    source = _SparseRows(a9a3k.X)
    models = []
    for bounds, period in ((False, None), (True, 1), (True, 7), (True, None)):
        settings_ = SGDSettings(
            lam=1e-3,
            star=star,
            intercept=not star,
            batch=k,
            epochs=4,
            radius=1 / np.sqrt(1e-3),
            b_radius=10.0,
            margin_bounds=bounds,
            resort_period=period,
        )
        result = run_sgd(source, a9a3k.y, settings_, np.random.default_rng(5))
        models.append((result.gamma, result.b))
        if bounds:
            assert result.rows_skipped > 0 and result.refreshes >= 1
    for gamma, b in models[1:]:
        assert np.array_equal(gamma, models[0][0]) and b == models[0][1]


def huber_objective(X, y, lam, h):
    def f(theta):
        w, b = theta[:-1], theta[-1]
        m = y * (X @ w + b)
        lin = m <= 1 - h
        quad = ~lin & (m < 1 + h)
        value = np.where(lin, 1 - m, np.where(quad, (1 + h - m) ** 2 / (4 * h), 0.0))
        slope = np.where(lin, 1.0, np.where(quad, (1 + h - m) / (2 * h), 0.0))
        coef = slope * y / len(y)
        grad = np.append(lam * w - X.T @ coef, -coef.sum())
        return 0.5 * lam * w @ w + value.mean(), grad

    return f


def test_huber_gd_against_scipy(a9a3k):
    X, y = a9a3k.X, a9a3k.y
    lam, h = 1e-3, 0.1
    m = len(y)
    f = huber_objective(X, y, lam, h)
    best = minimize(
        f,
        np.zeros(X.shape[1] + 1),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-14},
    )
    runs = {}
    for prune, period in ((False, None), (True, 3), (True, 50)):
        mb = SortedMargins(
            X,
            y,
            np.full(m, 1.0 / m),
            loss=HUBER,
            h=h,
            prune=prune,
            policy=ResortPolicy(period=period) if period else None,
        )
        runs[(prune, period)] = huber_gd(mb, lam, 1e-7)
    plain = runs[(False, None)]
    assert plain.status == "converged"
    # A first-order method stopped on relative change: near, not at, the optimum.
    assert 0 <= plain.objective - best.fun <= 1e-3 * best.fun
    assert f(np.append(plain.w, plain.b))[0] == pytest.approx(plain.objective, rel=1e-12)
    for r in runs.values():
        assert r.iterations == plain.iterations and r.evaluations == plain.evaluations
        assert abs(r.objective - plain.objective) <= 1e-9 * plain.objective


# --- the commands ------------------------------------------------------------------


@pytest.mark.parametrize(
    "module, args",
    [
        ("learn", ["-c", "10", "-w", "3"]),
        ("ocas", ["-c", "1"]),
        ("asset", ["-l", "0.001", "--approx", "none", "--star", "-k", "50", "--epochs", "2"]),
    ],
)
def test_flag_gives_the_same_model(tmp_path, module, args):
    out = {}
    for flag in ("0", "1"):
        model = tmp_path / f"{flag}.model"
        r = run(module, *args, "--margin-bounds", flag, TRAIN, model)
        assert r.returncode == 0, r.stderr
        out[flag] = read_model(model)
    assert np.allclose(out["1"].w, out["0"].w, rtol=1e-7, atol=1e-10)


def test_asset_gd_command(tmp_path):
    model = tmp_path / "gd.model"
    r = run(
        "asset",
        "--approx",
        "none",
        "--method",
        "gd",
        "--loss",
        "huber",
        "--h",
        "0.1",
        "-l",
        "0.001",
        "-e",
        "1e-7",
        TRAIN,
        model,
    )
    assert r.returncode == 0, r.stderr
    printed = float(re.search(r"mean\(loss\) = (\S+)", r.stdout).group(1))
    data = read_svmlight(TRAIN)
    f = huber_objective(data.X, data.y, 1e-3, 0.1)
    m = read_model(model)
    # SVMlight's threshold: f(x) = w·x − b.
    assert f(np.append(m.w, -m.b))[0] == pytest.approx(printed, rel=1e-9)
    assert m.n_train == data.n_examples


def test_gd_bounds_default_follows_the_non_zeros(tmp_path):
    """asset_learn --method gd prunes by default from GD_BOUNDS_MIN_NNZ non-zeros on (and
    says so), not below; --margin-bounds decides when given; --help and the man page's
    DEFAULTS give the same threshold."""
    from cpsvm.io.svmlight import write_svmlight
    from cpsvm.params.asset import GD_BOUNDS_MIN_NNZ, AssetParams

    gd = dict(lam=1e-3, approx="none", method="gd", loss="huber")
    assert not AssetParams(**gd).bounds(GD_BOUNDS_MIN_NNZ - 1)
    assert AssetParams(**gd).bounds(GD_BOUNDS_MIN_NNZ)
    assert not AssetParams(**gd, margin_bounds=False).bounds(10 * GD_BOUNDS_MIN_NNZ)
    assert AssetParams(**gd, margin_bounds=True).bounds(0)
    assert not AssetParams(lam=1e-3, approx="none").bounds(10 * GD_BOUNDS_MIN_NNZ)
    # Dense rows with just enough non-zeros, and a9a3k's 42,000 or so.
    X, y = gaussians(-(-GD_BOUNDS_MIN_NNZ // 50), 50, 2)
    big = tmp_path / "big.train"
    write_svmlight(big, X, y)
    for path, pruned in ((big, True), (TRAIN, False)):
        r = run(
            "asset",
            "--approx",
            "none",
            "--method",
            "gd",
            "--loss",
            "huber",
            "-l",
            "0.01",
            path,
            tmp_path / "m",
        )
        assert r.returncode == 0, r.stderr
        assert ("Margin bounds:" in r.stdout) == pruned
    assert f"{GD_BOUNDS_MIN_NNZ} non-zeros" in " ".join(run("asset", "--help").stdout.split())
    man = (Path(__file__).resolve().parents[2] / "man" / "asset_learn.1").read_text()
    defaults = man[man.index(".SH DEFAULTS") :]
    defaults = defaults[: defaults.index(".SH ", 4)]
    assert f"{GD_BOUNDS_MIN_NNZ:,} non-zeros" in " ".join(defaults.split())


@pytest.mark.parametrize(
    "args",
    [
        ["--approx", "none", "--loss", "huber"],  # huber needs gd
        ["--method", "gd", "--loss", "huber"],  # gd needs approx none
        ["--approx", "none", "--method", "gd"],  # gd needs huber
        ["--approx", "none", "--method", "gd", "--loss", "huber", "--star"],
        ["--approx", "none", "--method", "gd", "--loss", "huber", "-z", "r"],
        ["--margin-bounds", "1"],  # nystrom
        ["--approx", "none", "--margin-bounds", "2"],
    ],
)
def test_asset_bad_combinations(tmp_path, args):
    model = tmp_path / "m"
    r = run("asset", "-l", "0.01", *args, TRAIN, model)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not model.exists()
