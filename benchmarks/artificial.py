"""The 'artificial' data set of the OCAS benchmarks (Franc & Sonnenburg, ICML 2008, Table 1):
two Gaussians with different diagonal covariances, dense features, labels +1/-1.

Class +1 ~ N(+mu, diag(s_plus^2)), class -1 ~ N(-mu, diag(s_minus^2)); the per-dimension
scales s are log-uniform over [0.1, 10] (two decades, drawn independently per class), and
mu_j = sep * z_j * (s_plus_j + s_minus_j) / 2 / sqrt(d) (z standard normal), so the
classes overlap (error of the best linear rule ~ 9% for the default sep = 1.5) and the
features differ in scale by up to 100x. Everything is then divided by a constant so that
E|x|^2 = 1 (otherwise E|x|^2 ~ 4800 and C = 0.1 would already be a very hard problem for
every solver). Means are symmetric about 0, so no bias is needed. Rows are drawn in
chunks of 10,000 with per-chunk seeds: the first n rows are the same for every total n.

The result is a CSR matrix (float64 data, int32 indices) built without a dense copy of the
index structure; ``load`` caches data/labels as .npy under /tmp/cpsvm-bench.

Usage: .venv/bin/python benchmarks/artificial.py N D [OUT.svm]  (stats, or write SVMlight)
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

CHUNK = 10_000
WORK = Path(tempfile.gettempdir()) / "cpsvm-bench"


def parameters(d, seed=0, sep=1.5, lo=0.1, hi=10.0, unit_norm=True):
    rng = np.random.default_rng([seed, d])
    scales = np.exp(rng.uniform(np.log(lo), np.log(hi), (2, d)))  # rows: class +1, -1
    mu = sep * rng.standard_normal(d) * scales.mean(axis=0) / np.sqrt(d)
    if unit_norm:
        r = np.sqrt(np.sum(mu**2 + (scales**2).mean(axis=0)))  # sqrt(E|x|^2)
        mu, scales = mu / r, scales / r
    return mu, scales


def dense(n, d, seed=0, **kw):
    """(X dense float64 (n, d), y float64 (n,)) — classes balanced in expectation."""
    mu, scales = parameters(d, seed, **kw)
    X = np.empty((n, d))
    y = np.empty(n)
    for c, start in enumerate(range(0, n, CHUNK)):
        rng = np.random.default_rng([seed, d, c + 1])
        m = min(CHUNK, n - start)
        yc = np.where(rng.random(m) < 0.5, 1.0, -1.0)
        Xc = X[start : start + m]
        rng.standard_normal(out=Xc)
        Xc *= np.where(yc[:, None] > 0, scales[0], scales[1])
        Xc += yc[:, None] * mu
        y[start : start + m] = yc
    return X, y


def to_csr(X):
    """CSR view of a dense array (all entries stored; Gaussian samples are never 0)."""
    n, d = X.shape
    idx = np.int32 if n * d < 2**31 else np.int64
    indptr = np.arange(0, n * d + 1, d, dtype=idx)
    indices = np.tile(np.arange(d, dtype=np.int32), n).astype(idx, copy=False)
    X = sp.csr_matrix((X.reshape(-1), indices, indptr), shape=(n, d))
    X.has_canonical_format = True  # as built: spares scipy a pass over the indices
    return X


def load(n, d, seed=0, cache=True):
    """(X CSR, y); the dense samples are cached as .npy (memory-mapped on reuse, then
    copied once into RAM)."""
    base = WORK / f"artificial-v2-n{n}-d{d}-s{seed}"
    fx, fy = base.with_suffix(".X.npy"), base.with_suffix(".y.npy")
    if cache and fx.exists() and fy.exists():
        X, y = np.array(np.load(fx, mmap_mode="r")), np.load(fy)
    else:
        X, y = dense(n, d, seed)
        if cache:
            WORK.mkdir(parents=True, exist_ok=True)
            np.save(fx.with_suffix(".tmp.npy"), X)
            Path(fx.with_suffix(".tmp.npy")).replace(fx)
            np.save(fy, y)
    return to_csr(X), y


if __name__ == "__main__":
    n, d = int(sys.argv[1]), int(sys.argv[2])
    X, y = load(n, d, cache=False)
    if len(sys.argv) > 3:
        from cpsvm.io.svmlight import write_svmlight

        write_svmlight(sys.argv[3], X, y)
    print(f"{n} x {d}, nnz {X.nnz}, positives {np.mean(y > 0):.3f}")
