"""Write a small synthetic learning-to-rank set (data/samples/toy.rank.train,
toy.rank.test) for the README's quick start and `make demo`, in SVMrank's format:
``<relevance> qid:<query> <index>:<value> ... # doc <i>``, graded relevance 0..4.

Each query has its own documents (a varying number of them); a document's relevance is
a noisy linear function of its features, cut into five grades at the query's own
quantiles (most documents 0, few 4). Dense features are shifted by a vector of the
query's own: pairs within a query cancel it, a classifier of the lines would not, so the
problem is a ranking one. ``generate`` is what benchmarks/bench_rank.py draws its larger
sets from. Deterministic (numpy Generator, --seed). Usage:
    .venv/bin/python benchmarks/make_toy_ranking.py [--train 60] [--test 30] [--noise 0.5]
        [--seed 0]
"""

import argparse
from pathlib import Path

import numpy as np
import scipy.sparse as sp

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"
# Shares of the grades 0..4 within a query.
GRADE_SHARES = (0.45, 0.25, 0.15, 0.10, 0.05)


def generate(
    n_queries, docs_per_query, n_features, *, density=1.0, noise=1.0, seed=0, decimals=None
):
    """(X CSR float64, y grades 0..4, qid 1..n_queries): each query has between half and
    one and a half times ``docs_per_query`` documents; features standard normal, a
    fraction ``density`` of them non-zero; relevance from the noisy score x·w* + offset."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(max(2, docs_per_query // 2), docs_per_query * 3 // 2 + 1, size=n_queries)
    n = int(sizes.sum())
    qid = np.repeat(np.arange(1, n_queries + 1), sizes)
    if density >= 1.0:
        shift = np.repeat(rng.standard_normal((n_queries, n_features)), sizes, axis=0)
        X = sp.csr_matrix(rng.standard_normal((n, n_features)) + shift)
    else:
        X = sp.random(
            n,
            n_features,
            density=density,
            format="csr",
            random_state=rng,
            data_rvs=rng.standard_normal,
        )
    if decimals is not None:
        X.data = np.round(X.data, decimals)
        X.eliminate_zeros()
    w_true = rng.standard_normal(n_features) / np.sqrt(max(1.0, density * n_features))
    latent = X @ w_true + noise * rng.standard_normal(n)
    y = np.empty(n)
    cuts = np.cumsum(GRADE_SHARES)[:-1]
    starts = np.concatenate(([0], np.cumsum(sizes)))
    for q in range(n_queries):
        lo, hi = starts[q], starts[q + 1]
        ranks = (np.argsort(np.argsort(latent[lo:hi])) + 1.0) / (hi - lo)
        y[lo:hi] = np.searchsorted(cuts, ranks, side="left")
    return X.tocsr(), y, qid


def write(path, X, y, qid):
    with open(path, "w") as out:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            features = " ".join(f"{j + 1}:{v:g}" for j, v in zip(X.indices[lo:hi], X.data[lo:hi]))
            out.write(f"{int(y[i])} qid:{qid[i]} {features} # doc {i + 1}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", type=int, default=60, help="queries in the training file")
    parser.add_argument("--test", type=int, default=30, help="queries in the test file")
    parser.add_argument("--docs", type=int, default=12, help="documents per query (mean)")
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument(
        "--noise",
        type=float,
        default=0.5,
        help="standard deviation of the noise on the relevance score",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    X, y, qid = generate(
        args.train + args.test,
        args.docs,
        args.features,
        seed=args.seed,
        noise=args.noise,
        decimals=3,
    )
    split = int(np.searchsorted(qid, args.train + 1))
    write(SAMPLES / "toy.rank.train", X[:split], y[:split], qid[:split])
    write(SAMPLES / "toy.rank.test", X[split:], y[split:], qid[split:])


if __name__ == "__main__":
    main()
