"""A many-class, text-like data set (in the shape of LIBSVM's ``sector``: about a hundred
topics, tens of thousands of words, ~150 distinct words a document).

Every document is a bag of tokens drawn from a mixture: with probability ``topical`` a
word of its class's topic (a few hundred words picked per class from the whole
vocabulary, Zipf-weighted, so that topics overlap in their common words), otherwise a
word of the background (Zipf over the vocabulary). Its feature vector is log(1 + tf)·idf
over its distinct words, scaled to unit length, as text-categorisation sets are. Labels
1..k, classes of equal prior. The topics are the same for every ``--seed``: a file of
another seed is a test set of the same problem.

    python benchmarks/many_classes.py N OUT_FILE [--classes 100] [--features 50000]
        [--tokens 220] [--topic-words 400] [--topical 0.25] [--seed 0]

writes N documents in SVMlight format (~150 non-zeros a row at the defaults).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cpsvm.data import Dataset  # noqa: E402

CHUNK = 5000


def _zipf(m, exponent, rng):
    """Zipf weights 1/r^exponent over m items in a random order, summing to 1."""
    weights = 1.0 / np.arange(1, m + 1) ** exponent
    return rng.permutation(weights / weights.sum())


def many_classes(
    n: int,
    n_classes: int = 100,
    n_features: int = 50_000,
    tokens: int = 220,
    topic_words: int = 400,
    topical: float = 0.25,
    seed: int = 0,
) -> Dataset:
    """n documents of ``n_classes`` topics (see the module docstring)."""
    # The topics do not depend on ``seed``: files of other seeds are test sets.
    rng = np.random.default_rng([n_classes, n_features, topic_words])
    background = np.cumsum(_zipf(n_features, 1.05, rng))
    topic_vocab = np.stack(
        [rng.choice(n_features, topic_words, replace=False) for _ in range(n_classes)]
    )
    topic_cdf = np.cumsum(_zipf(topic_words, 0.8, rng))
    y = np.random.default_rng([seed, n_classes, n_features]).integers(1, n_classes + 1, n)
    rows, cols = [], []
    for c, start in enumerate(range(0, n, CHUNK)):
        crng = np.random.default_rng([seed, n_classes, n_features, c + 1])
        m = min(CHUNK, n - start)
        length = np.maximum(crng.poisson(tokens, m), 10)
        doc = np.repeat(np.arange(start, start + m), length)
        total = len(doc)
        words = np.minimum(np.searchsorted(background, crng.random(total)), n_features - 1)
        on_topic = crng.random(total) < topical
        pick = np.minimum(np.searchsorted(topic_cdf, crng.random(total)), topic_words - 1)
        words[on_topic] = topic_vocab[y[doc[on_topic]] - 1, pick[on_topic]]
        rows.append(doc)
        cols.append(words)
    doc, words = np.concatenate(rows), np.concatenate(cols)
    tf = sp.csr_matrix((np.ones(len(doc)), (doc, words)), shape=(n, n_features))
    tf.sum_duplicates()
    df = np.bincount(tf.indices, minlength=n_features)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    tf.data = np.log1p(tf.data) * idf[tf.indices]
    norms = np.sqrt(np.asarray(tf.multiply(tf).sum(axis=1)).ravel())
    X = sp.diags(1.0 / np.maximum(norms, 1e-300)) @ tf
    X = sp.csr_matrix(X)
    X.sort_indices()
    return Dataset(X, y.astype(np.float64), source=f"<many_classes n={n} seed={seed}>")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("out")
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--features", type=int, default=50_000)
    parser.add_argument("--tokens", type=int, default=220)
    parser.add_argument("--topic-words", type=int, default=400)
    parser.add_argument("--topical", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from cpsvm.io.svmlight import write_svmlight

    data = many_classes(
        args.n, args.classes, args.features, args.tokens, args.topic_words, args.topical, args.seed
    )
    write_svmlight(args.out, data.X, data.y)
    print(
        f"{args.out}: {data.X.shape[0]} documents, {data.X.shape[1]} features, "
        f"{data.X.nnz} non-zeros ({data.X.nnz / data.X.shape[0]:.0f} a row), "
        f"{args.classes} classes",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
