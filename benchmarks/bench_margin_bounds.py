"""Benchmark margin-change bounds (Guillory & Bilmes, *Practical Methods for Exploiting
Bounds on Change in the Margin*): each solver with and without them, in the same run.

Data: a9a and dna.scale made binary (class 3 against the others) from shared/data; the
dense 'artificial' set of bench_ocas (benchmarks/artificial.py, --art-n x --art-d); a
sparse text-like set generated here (--text-n rows, Zipf-distributed words over
--text-d, ~50 a row, unit-norm rows, labels from a sparse linear rule with 5% flipped).

Measures, per data set:
1. Huber gradient descent (the paper's Table 2 shape; asset_learn --method gd): λ
   (--lam), h = 0.01, ε = 1e-4, 1e-5, 1e-6: iterations, evaluations, objective with and
   without bounds (relative difference; and, as a control of how far rounding alone moves
   a run, the plain run at λ·(1 + 1e-14)), mean share of margins computed per evaluation
   and over the last 20, sorts, and the time ratio plain/pruned. Also the §5 variant:
   the share computed with the sphere around each class's mean against the ball around
   the origin (ε = 1e-5); the default picks the smaller radius per class.
2. Pegasos (Table 3 shape; asset_learn --approx none --star -k K): k = 100 and 1000,
   --epochs epochs, λ = --lam: rows skipped, refreshes, whether the model is bitwise the
   same, time ratio.
3. cp_learn -w 3 (binary cut) and ocas_learn (-m 1): ε (cp_learn -e, ocas_learn TolRel
   -r) = 0.1, 0.01, 0.001: iterations, objective difference, share of margins computed
   per iteration (mean, last 10), sorts, time ratio.

Every pair is run interleaved (plain, pruned, pruned, plain) and the ratio is of the
sums; numba is warmed first. The machine may be shared: read the ratios, not the seconds.

Usage: .venv/bin/python benchmarks/bench_margin_bounds.py [--sets a9a,dna,art,text]
       [--art-n 20000] [--art-d 500] [--text-n 50000] [--text-d 20000] [--lam 1e-4]
       [--epochs 5] [--parts gd,pegasos,cp,ocas]
"""

import os

os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import artificial  # noqa: E402
from cpsvm.data import Dataset  # noqa: E402
from cpsvm.engine.margin_bounds import HUBER, SortedMargins  # noqa: E402
from cpsvm.engine.sgd import SGDSettings, huber_gd, run_sgd  # noqa: E402
from cpsvm.io.svmlight import read_svmlight  # noqa: E402
from cpsvm.solvers import ocas as ocas_solver  # noqa: E402
from cpsvm.solvers.asset import _SparseRows  # noqa: E402
from cpsvm.solvers.one_slack import StructParams  # noqa: E402
from cpsvm.solvers.one_slack import train as cp_train  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# shared/ beside the checkout, or where CPSVM_SHARED says (a worktree elsewhere).
DATA = Path(os.environ.get("CPSVM_SHARED", REPO.parent / "shared")) / "data"


def text_like(n, d, seed=0):
    """Zipf word counts (~50 distinct a row), rows scaled to unit norm, labels
    sign(⟨w*, x⟩) for a w* on 200 words, 5% flipped."""
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, d + 1) ** 1.05)
    cdf /= cdf[-1]
    counts = np.maximum(1, rng.poisson(52, n))
    rows = np.repeat(np.arange(n), counts)
    cols = np.minimum(np.searchsorted(cdf, rng.random(len(rows))), d - 1)
    X = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    X.data = np.log1p(X.data)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(1.0 / norms) @ X
    w = np.zeros(d)
    w[rng.choice(min(d, 2000), 200, replace=False)] = rng.normal(size=200)
    score = X @ w
    y = np.where(score > np.median(score), 1.0, -1.0)
    y[rng.random(n) < 0.05] *= -1
    return sp.csr_matrix(X), y


def datasets(a):
    out = {}
    for name in a.sets.split(","):
        if name == "a9a":
            out[name] = read_svmlight(DATA / "a9a")
        elif name == "dna":
            d = read_svmlight(DATA / "dna.scale")
            out[name] = Dataset(d.X, np.where(d.y == 3, 1.0, -1.0))
        elif name == "art":
            out[name] = Dataset(*artificial.load(a.art_n, a.art_d))
        elif name == "text":
            out[name] = Dataset(*text_like(a.text_n, a.text_d))
    return out


def interleaved(run):
    """run(pruned) -> (seconds, result); plain, pruned, pruned, plain."""
    seconds = {False: 0.0, True: 0.0}
    results = {}
    for pruned in (False, True, True, False):
        t, r = run(pruned)
        seconds[pruned] += t
        results[pruned] = r
    return seconds[False] / seconds[True], results


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def gd_part(name, ds, a):
    X, y = ds.X, ds.y
    m = len(y)
    for eps in (1e-4, 1e-5, 1e-6):
        def run(pruned, center="auto"):
            mb = SortedMargins(X, y, np.full(m, 1.0 / m), loss=HUBER, h=0.01,
                               prune=pruned, center=center)
            t = time.perf_counter()
            r = huber_gd(mb, a.lam, eps, max_iterations=a.gd_cap)
            return time.perf_counter() - t, (r, mb)
        ratio, res = interleaved(run)
        (rp, _), (rb, mb) = res[False], res[True]
        f = np.array(mb.fractions)
        # Control: the plain run with λ·(1 + 1e-14), how far rounding alone moves it.
        control = huber_gd(SortedMargins(X, y, np.full(m, 1.0 / m), loss=HUBER, h=0.01,
                                         prune=False), a.lam * (1 + 1e-14), eps,
                           max_iterations=a.gd_cap)
        print(f"gd      {name:5s} eps={eps:g}: iterations {rp.iterations}/{rb.iterations} "
              f"evaluations {rp.evaluations}/{rb.evaluations}, objective {rp.objective:.10g} "
              f"(rel diff {rel(rb.objective, rp.objective):.1e}; plain at λ(1+1e-14): "
              f"{control.iterations} iterations, rel diff "
              f"{rel(control.objective, rp.objective):.1e}); computed mean "
              f"{f.mean():.3f}, last 20 {f[-20:].mean():.3f}; sorts {mb.resorts}; "
              f"plain/pruned time {ratio:.2f}x", flush=True)
        if eps == 1e-5:
            _, (_, origin) = run(True, center=False)
            _, (_, sphere) = run(True, center=True)
            print(f"gd      {name:5s} eps=1e-05 §5 sphere around the class means: computed "
                  f"mean {np.mean(sphere.fractions):.3f} against "
                  f"{np.mean(origin.fractions):.3f} for the ball around the origin "
                  f"(the default takes the smaller radius per class: {f.mean():.3f})",
                  flush=True)


def pegasos_part(name, ds, a):
    source = _SparseRows(ds.X)
    m = ds.n_examples
    for k in (100, 1000):
        def run(pruned):
            st = SGDSettings(lam=a.lam, star=True, intercept=False, batch=k, epochs=a.epochs,
                             radius=1 / np.sqrt(a.lam), margin_bounds=pruned)
            t = time.perf_counter()
            r = run_sgd(source, ds.y, st, np.random.default_rng(0))
            return time.perf_counter() - t, r
        ratio, res = interleaved(run)
        rb = res[True]
        same = np.array_equal(res[True].gamma, res[False].gamma)
        print(f"pegasos {name:5s} k={k}: {a.epochs} epochs of {-(-m // k)} iterations; rows "
              f"skipped {rb.rows_skipped / max(rb.rows_visited, 1):.3f}; refreshes "
              f"{rb.refreshes}; same model {same}; plain/pruned time {ratio:.2f}x",
              flush=True)


def cp_part(name, ds, a):
    C = a.cp_C
    for eps in (0.1, 0.01, 0.001):
        holder = {}

        def run(pruned):
            import cpsvm.problems.binary as binary
            made = []
            original = binary.BinaryProblem.__init__

            def init(self, *args, **kw):
                original(self, *args, **kw)
                made.append(self)
            binary.BinaryProblem.__init__ = init
            try:
                t = time.perf_counter()
                _, info = cp_train(ds, StructParams(C=C, epsilon=eps, algorithm=3,
                                                    margin_bounds=pruned,
                                                    max_iterations=a.cp_cap))
                t = time.perf_counter() - t
            finally:
                binary.BinaryProblem.__init__ = original
            if pruned:
                holder["mb"] = made[-1]._bounds[2]
            return t, info.result
        ratio, res = interleaved(run)
        f = np.array(holder["mb"].fractions)
        print(f"cp -w3  {name:5s} C={C:g} eps={eps:g}: iterations {res[False].iterations}/"
              f"{res[True].iterations}, objective rel diff "
              f"{rel(res[True].primal, res[False].primal):.1e}; computed mean {f.mean():.3f}, "
              f"last 10 {f[-10:].mean():.3f}; sorts {holder['mb'].resorts}; plain/pruned "
              f"time {ratio:.2f}x", flush=True)


def ocas_part(name, ds, a):
    C = a.ocas_C
    for eps in (0.1, 0.01, 0.001):
        holder = {}

        def run(pruned):
            made = []
            original = ocas_solver.PrunedOcasOracle

            class Spy(original):
                def __init__(self, *args, **kw):
                    super().__init__(*args, **kw)
                    made.append(self)
            ocas_solver.PrunedOcasOracle = Spy
            try:
                t = time.perf_counter()
                _, info = ocas_solver.train(ds, ocas_solver.OcasParams(
                    C=C, tol_rel=eps, margin_bounds=pruned))
                t = time.perf_counter() - t
            finally:
                ocas_solver.PrunedOcasOracle = original
            if pruned:
                holder["o"] = made[-1]
            return t, info.result
        ratio, res = interleaved(run)
        o = holder["o"]
        f = np.array(o.fractions) if o.fractions else np.ones(1)
        print(f"ocas    {name:5s} C={C:g} TolRel={eps:g}: iterations {res[False].iterations}/"
              f"{res[True].iterations}, objective rel diff "
              f"{rel(res[True].primal, res[False].primal):.1e}; computed mean {f.mean():.3f}, "
              f"last 10 {f[-10:].mean():.3f}; sorts {o.resorts}, steps past w_t "
              f"{o.fallbacks}; plain/pruned time {ratio:.2f}x", flush=True)


def warm(data, a):
    ds = Dataset(data.X[:300], data.y[:300])
    m = 300
    huber_gd(SortedMargins(ds.X, ds.y, np.full(m, 1.0 / m), loss=HUBER, h=0.01), 1e-2, 1e-2)
    run_sgd(_SparseRows(ds.X), ds.y, SGDSettings(lam=1e-2, star=True, intercept=False,
                                                  batch=10, epochs=1, margin_bounds=True),
            np.random.default_rng(0))
    cp_train(ds, StructParams(C=1.0, algorithm=3, margin_bounds=True))
    ocas_solver.train(ds, ocas_solver.OcasParams(C=1.0, margin_bounds=True))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", default="a9a,dna,art,text")
    p.add_argument("--parts", default="gd,pegasos,cp,ocas")
    p.add_argument("--art-n", type=int, default=20000)
    p.add_argument("--art-d", type=int, default=500)
    p.add_argument("--text-n", type=int, default=50000)
    p.add_argument("--text-d", type=int, default=20000)
    p.add_argument("--lam", type=float, default=1e-4)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--gd-cap", type=int, default=20000)
    p.add_argument("--cp-C", type=float, default=100.0)
    p.add_argument("--cp-cap", type=int, default=3000)
    p.add_argument("--ocas-C", type=float, default=1.0)
    a = p.parse_args()
    data = datasets(a)
    print(f"margin bounds: load avg {os.getloadavg()[0]:.1f}; sets "
          + ", ".join(f"{k} {v.X.shape[0]}x{v.X.shape[1]} ({v.X.nnz / v.X.shape[0]:.0f} "
                      f"nnz/row)" for k, v in data.items()), flush=True)
    warm(next(iter(data.values())), a)
    parts = {"gd": gd_part, "pegasos": pegasos_part, "cp": cp_part, "ocas": ocas_part}
    for part in a.parts.split(","):
        for name, ds in data.items():
            parts[part](name, ds, a)


if __name__ == "__main__":
    main()
