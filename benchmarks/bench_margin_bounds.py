"""Benchmark margin-change bounds (Guillory & Bilmes, *Practical Methods for Exploiting
Bounds on Change in the Margin*): each solver with and without them, in the same run.

Data: a9a, dna.scale made binary (class 3 against the others), heart_scale and
satimage.scale made binary (class 6 against the others) from shared/data, and the
repository's data/samples/a9a3k.train ('a9a3k');
MNIST class 8 against the rest ('mnist8': the first --mnist-n rows of
shared/data/mnist/mnist10k.scale.xz, the paper's Table 2 set); the dense 'artificial'
sets of bench_ocas (benchmarks/artificial.py): 'art' (--art-n x --art-d) and 'dense'
(--dense-n x --dense-d, 200k x 50 by default); a sparse text-like set generated here
(--text-n rows, Zipf-distributed words over --text-d, ~50 a row, unit-norm rows, labels
from a sparse linear rule with 5% flipped). λ per set: mnist8 and heart 1e-3 (mnist8:
the paper's), dense 1e-5, the others 1e-4 (--lam overrides all).

Measures, per data set:
1. Huber gradient descent (the paper's Table 2 shape; asset_learn --method gd): h = 0.01,
   ε in --gd-eps: iterations with and without bounds, objective (relative difference;
   and, as a control of how far rounding alone moves a run, the plain run at
   λ·(1 + 1e-14)), mean share of margins computed per evaluation and over the last 20,
   sorts, and the time with bounds over the time without. At the middle ε also the
   share computed by the §5 variants at one fixed sort period (the default run's mean):
   the paper's bound (ball around the origin, each class's largest radius), both
   centers (origin and class mean, each row the tighter) with the class's largest
   radius, and with each row's own radius (the default).
2. Pegasos (Table 3 shape; asset_learn --approx none --star -k K): k = 100 and 1000,
   --pegasos-epochs epochs: rows skipped, refreshes, whether the model is bitwise the
   same, time ratio.
3. cp_learn -w 3 (binary cut) and ocas_learn (-m 1): ε (cp_learn -e, ocas_learn TolRel
   -r) = 0.1, 0.01, 0.001: iterations, objective difference, share of margins computed
   per iteration (mean, last 10), sorts, time ratio.

Each pair runs --repeats times interleaved (plain, bounds, bounds, plain, ...) after a
warm-up; times are CPU seconds of the process (process_time: what the machine is shared
with moves them less than wall time) on --threads numba threads, and the ratio is
reported as min and median over the repeats, with the load. The machine may be shared:
read the ratios, not the seconds.

Usage: .venv/bin/python benchmarks/bench_margin_bounds.py
       [--sets mnist8,a9a,dense,text,dna,art,a9a3k,heart,satimage]
       [--parts gd,pegasos,cp,ocas] [--repeats 3]
       [--gd-eps 1e-4,1e-5,1e-6] [--pegasos-epochs 10,50] [--lam L] [--threads 1]
       [--mnist-n 5000] [--art-n 20000] [--art-d 500] [--dense-n 200000] [--dense-d 50]
       [--text-n 50000] [--text-d 20000]
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
from cpsvm.engine.gradient_descent import huber_gd  # noqa: E402
from cpsvm.engine.margin_bounds import HUBER, ResortPolicy, SortedMargins  # noqa: E402
from cpsvm.engine.sgd import SGDSettings, run_sgd  # noqa: E402
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


LAMBDA = {"mnist8": 1e-3, "heart": 1e-3, "dense": 1e-5}  # the others: 1e-4


def datasets(a):
    out = {}
    for name in a.sets.split(","):
        if name == "a9a":
            out[name] = read_svmlight(DATA / "a9a")
        elif name == "dna":
            d = read_svmlight(DATA / "dna.scale")
            out[name] = Dataset(d.X, np.where(d.y == 3, 1.0, -1.0))
        elif name == "a9a3k":
            out[name] = read_svmlight(REPO / "data" / "samples" / "a9a3k.train")
        elif name == "heart":
            out[name] = read_svmlight(DATA / "heart_scale")
        elif name == "satimage":
            d = read_svmlight(DATA / "satimage.scale")
            out[name] = Dataset(d.X, np.where(d.y == 6, 1.0, -1.0))
        elif name == "mnist8":
            d = read_svmlight(DATA / "mnist" / "mnist10k.scale.xz")
            out[name] = Dataset(d.X[: a.mnist_n], np.where(d.y[: a.mnist_n] == 8, 1.0, -1.0))
        elif name == "art":
            out[name] = Dataset(*artificial.load(a.art_n, a.art_d))
        elif name == "dense":
            out[name] = Dataset(*artificial.load(a.dense_n, a.dense_d))
        elif name == "text":
            out[name] = Dataset(*text_like(a.text_n, a.text_d))
        else:
            raise SystemExit(f"unknown set {name!r}")
    return out


def lam_of(name, a):
    return a.lam if a.lam is not None else LAMBDA.get(name, 1e-4)


def interleaved(run, repeats):
    """run(pruned) -> (cpu seconds, result), plain and pruned alternating (plain, pruned,
    pruned, plain, ...); the ratios pruned/plain of each pair: (min, median), results."""
    seconds = {False: [], True: []}
    results = {}
    for r in range(repeats):
        for pruned in (False, True) if r % 2 == 0 else (True, False):
            t, res = run(pruned)
            seconds[pruned].append(t)
            results[pruned] = res
    ratios = [b / p for p, b in zip(seconds[False], seconds[True])]
    return (min(ratios), float(np.median(ratios))), results, seconds


def timed(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def load_note():
    return f"load {os.getloadavg()[0]:.1f}"


TABLE = []  # rows of the summary


def gd_part(name, ds, a):
    X, y = ds.X, ds.y
    m = len(y)
    lam = lam_of(name, a)
    eps_list = [float(e) for e in a.gd_eps.split(",")]
    for eps in eps_list:

        def run(pruned, **kw):
            mb = SortedMargins(X, y, np.full(m, 1.0 / m), loss=HUBER, h=0.01, prune=pruned, **kw)
            t, r = timed(lambda: huber_gd(mb, lam, eps, max_iterations=a.gd_cap))
            return t, (r, mb)

        (lo, med), res, sec = interleaved(run, a.repeats)
        (rp, _), (rb, mb) = res[False], res[True]
        f = np.array(mb.fractions)
        # Control: the plain run with λ·(1 + 1e-14), how far rounding alone moves it.
        control = huber_gd(
            SortedMargins(X, y, np.full(m, 1.0 / m), loss=HUBER, h=0.01, prune=False),
            lam * (1 + 1e-14),
            eps,
            max_iterations=a.gd_cap,
        )
        print(
            f"gd      {name:6s} lam={lam:g} eps={eps:g}: iterations {rp.iterations}/"
            f"{rb.iterations} evaluations {rp.evaluations}/{rb.evaluations}, objective "
            f"{rp.objective:.10g} (rel diff {rel(rb.objective, rp.objective):.1e}; plain "
            f"at λ(1+1e-14): {control.iterations} iterations, rel diff "
            f"{rel(control.objective, rp.objective):.1e}); computed mean {f.mean():.3f}, "
            f"last 20 {f[-20:].mean():.3f}; sorts {mb.resorts}; plain "
            f"{min(sec[False]):.2f} s; time with/without bounds min {lo:.2f} median "
            f"{med:.2f} ({load_note()})",
            flush=True,
        )
        TABLE.append(
            (
                f"Huber GD {name} λ={lam:g} ε={eps:g}",
                f"{rp.iterations}",
                f"{f.mean():.3f}",
                f"{mb.resorts}",
                f"{min(sec[False]):.2f}",
                f"{lo:.2f}/{med:.2f}",
                load_note(),
            )
        )
        if eps == eps_list[len(eps_list) // 2]:
            # The bounds compared at one sort schedule (the default run's mean period).
            period = max(1, round(rb.evaluations / max(mb.resorts, 1)) - 1)
            shares = {}
            for label, kw in (
                ("paper: origin, class radius", dict(center=False, per_row=False)),
                ("both centers, class radius", dict(per_row=False)),
                ("both centers, own radius (default)", {}),
            ):
                t, (_, v) = run(True, policy=ResortPolicy(period=period), **kw)
                shares[label] = (np.mean(v.fractions), t)
            print(
                f"gd      {name:6s} eps={eps:g} §5, a sort every {period + 1} evaluations: "
                "share computed (time with/without bounds) "
                + "; ".join(
                    f"{k} {s:.3f} ({t / min(sec[False]):.2f})" for k, (s, t) in shares.items()
                ),
                flush=True,
            )


def pegasos_part(name, ds, a):
    source = _SparseRows(ds.X)
    m = ds.n_examples
    lam = lam_of(name, a)
    for epochs in (int(e) for e in a.pegasos_epochs.split(",")):
        for k in (100, 1000):

            def run(pruned):
                st = SGDSettings(
                    lam=lam,
                    star=True,
                    intercept=False,
                    batch=k,
                    epochs=epochs,
                    radius=1 / np.sqrt(lam),
                    margin_bounds=pruned,
                )
                return timed(lambda: run_sgd(source, ds.y, st, np.random.default_rng(0)))

            (lo, med), res, sec = interleaved(run, a.repeats)
            rb = res[True]
            same = np.array_equal(res[True].gamma, res[False].gamma)
            skipped = rb.rows_skipped / max(rb.rows_visited, 1)
            print(
                f"pegasos {name:6s} lam={lam:g} k={k} epochs={epochs}: {-(-m // k)} "
                f"iterations an epoch; rows skipped {skipped:.3f}; refreshes "
                f"{rb.refreshes}; same model {same}; plain {min(sec[False]):.3f} s; time "
                f"with/without bounds min {lo:.2f} median {med:.2f} ({load_note()})",
                flush=True,
            )
            TABLE.append(
                (
                    f"Pegasos {name} λ={lam:g} k={k} {epochs} epochs",
                    "",
                    f"{1 - skipped:.3f}",
                    f"{rb.refreshes}",
                    f"{min(sec[False]):.2f}",
                    f"{lo:.2f}/{med:.2f}",
                    load_note(),
                )
            )


def cp_part(name, ds, a):
    C = a.cp_C
    for eps in (0.1, 0.01, 0.001):
        holder = {}

        def run(pruned):
            import cpsvm.problems.binary.problem as binary

            made = []
            original = binary.BinaryProblem.__init__

            def init(self, *args, **kw):
                original(self, *args, **kw)
                made.append(self)

            binary.BinaryProblem.__init__ = init
            try:
                t, (_, info) = timed(
                    lambda: cp_train(
                        ds,
                        StructParams(
                            C=C,
                            epsilon=eps,
                            algorithm=3,
                            margin_bounds=pruned,
                            max_iterations=a.cp_cap,
                        ),
                    )
                )
            finally:
                binary.BinaryProblem.__init__ = original
            if pruned:
                holder["mb"] = made[-1]._bounds[2]
            return t, info.result

        (lo, med), res, sec = interleaved(run, a.repeats)
        f = np.array(holder["mb"].fractions)
        print(
            f"cp -w3  {name:6s} C={C:g} eps={eps:g}: iterations {res[False].iterations}/"
            f"{res[True].iterations}, objective rel diff "
            f"{rel(res[True].primal, res[False].primal):.1e}; computed mean {f.mean():.3f}, "
            f"last 10 {f[-10:].mean():.3f}; sorts {holder['mb'].resorts}; time "
            f"with/without bounds min {lo:.2f} median {med:.2f} ({load_note()})",
            flush=True,
        )
        TABLE.append(
            (
                f"cp_learn -w 3 {name} C={C:g} -e {eps:g}",
                f"{res[False].iterations}",
                f"{f.mean():.3f}",
                f"{holder['mb'].resorts}",
                f"{min(sec[False]):.2f}",
                f"{lo:.2f}/{med:.2f}",
                load_note(),
            )
        )


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
                t, (_, info) = timed(
                    lambda: ocas_solver.train(
                        ds, ocas_solver.OcasParams(C=C, tol_rel=eps, margin_bounds=pruned)
                    )
                )
            finally:
                ocas_solver.PrunedOcasOracle = original
            if pruned:
                holder["o"] = made[-1]
            return t, info.result

        (lo, med), res, sec = interleaved(run, a.repeats)
        o = holder["o"]
        f = np.array(o.fractions) if o.fractions else np.ones(1)
        print(
            f"ocas    {name:6s} C={C:g} TolRel={eps:g}: iterations {res[False].iterations}/"
            f"{res[True].iterations}, objective rel diff "
            f"{rel(res[True].primal, res[False].primal):.1e}; computed mean {f.mean():.3f}, "
            f"last 10 {f[-10:].mean():.3f}; sorts {o.resorts}, steps past w_t "
            f"{o.fallbacks}; time with/without bounds min {lo:.2f} median {med:.2f} "
            f"({load_note()})",
            flush=True,
        )
        TABLE.append(
            (
                f"ocas_learn {name} C={C:g} -r {eps:g}",
                f"{res[False].iterations}",
                f"{f.mean():.3f}",
                f"{o.resorts}",
                f"{min(sec[False]):.2f}",
                f"{lo:.2f}/{med:.2f}",
                load_note(),
            )
        )


def warm(data):
    ds = Dataset(data.X[:300], data.y[:300])
    m = 300
    huber_gd(SortedMargins(ds.X, ds.y, np.full(m, 1.0 / m), loss=HUBER, h=0.01), 1e-2, 1e-2)
    run_sgd(
        _SparseRows(ds.X),
        ds.y,
        SGDSettings(lam=1e-2, star=True, intercept=False, batch=10, epochs=1, margin_bounds=True),
        np.random.default_rng(0),
    )
    cp_train(ds, StructParams(C=1.0, algorithm=3, margin_bounds=True))
    ocas_solver.train(ds, ocas_solver.OcasParams(C=1.0, margin_bounds=True))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sets", default="mnist8,a9a,dense,text,dna,art")
    p.add_argument("--parts", default="gd,pegasos,cp,ocas")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--mnist-n", type=int, default=5000)
    p.add_argument("--art-n", type=int, default=20000)
    p.add_argument("--art-d", type=int, default=500)
    p.add_argument("--dense-n", type=int, default=200000)
    p.add_argument("--dense-d", type=int, default=50)
    p.add_argument("--text-n", type=int, default=50000)
    p.add_argument("--text-d", type=int, default=20000)
    p.add_argument("--lam", type=float, default=None)
    p.add_argument("--gd-eps", default="1e-4,1e-5,1e-6")
    p.add_argument("--gd-cap", type=int, default=100000)
    p.add_argument("--pegasos-epochs", default="10,50")
    p.add_argument("--cp-C", type=float, default=100.0)
    p.add_argument("--cp-cap", type=int, default=3000)
    p.add_argument("--ocas-C", type=float, default=1.0)
    a = p.parse_args()
    import numba

    numba.set_num_threads(a.threads)
    data = datasets(a)
    print(
        f"margin bounds: {load_note()}; {a.threads} thread(s); sets "
        + ", ".join(
            f"{k} {v.X.shape[0]}x{v.X.shape[1]} ({v.X.nnz / v.X.shape[0]:.0f} nnz/row)"
            for k, v in data.items()
        ),
        flush=True,
    )
    warm(next(iter(data.values())))
    parts = {"gd": gd_part, "pegasos": pegasos_part, "cp": cp_part, "ocas": ocas_part}
    for part in a.parts.split(","):
        for name, ds in data.items():
            parts[part](name, ds, a)
    print(
        "\nrun | iterations | margins computed | sorts/refreshes | plain cpu s | "
        "time with/without bounds (min/median) | load"
    )
    for row in TABLE:
        print(" | ".join(row))


if __name__ == "__main__":
    main()
