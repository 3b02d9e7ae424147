"""The estimators renumber a huge column space (hashed features: a 2^40-column CSR) to its
distinct columns as the commands do: they fit and predict in a process whose address
space is capped at 3 GiB (a dense weight vector of that width is 8 TiB), coef_ is sparse
in X's columns, and the decision values are X·coef_ + intercept_."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

pytest.importorskip("sklearn")

SCRIPT = """
import json, resource
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
import numpy as np, scipy.sparse as sp
from cpsvm.sklearn import (ASSETClassifier, CuttingPlaneSVC, OCASClassifier,
                           OCASClassifierCV, SampledCutSVC)

rng = np.random.default_rng(0)
n, width = 120, 2**40
cols = np.sort(rng.choice(2**40, 40, replace=False))
idx = np.sort(rng.choice(cols, (n, 4)), axis=1)
X = sp.csr_matrix((np.ones(n * 4), (np.repeat(np.arange(n), 4), idx.ravel())), shape=(n, width))
X.sum_duplicates()
y = np.where(np.isin(idx, cols[:10]).any(axis=1), 1, -1)
y3 = np.where(y > 0, 2, np.where(np.isin(idx, cols[10:20]).any(axis=1), 1, 0))
out = {}
estimators = {
    "ocas": (OCASClassifier(), y),
    "ocas multiclass": (OCASClassifier(), y3),
    "ocas cv": (OCASClassifierCV(Cs=[0.1, 10], cv=2), y),
    "cp": (CuttingPlaneSVC(), y),
    "asset": (ASSETClassifier(kernel="linear", approximation="none"), y),
    "sampled": (SampledCutSVC(kernel="rbf"), y),
}
for name, (est, target) in estimators.items():
    est.fit(X, target)
    scores = est.decision_function(X)
    row = dict(accuracy=float(est.score(X, target)))
    if name != "sampled":
        W = est.coef_
        by_hand = np.zeros((n, W.shape[0]))
        for k in range(W.shape[0]):
            w = dict(zip(W.indices[W.indptr[k]:W.indptr[k + 1]].tolist(),
                         W.data[W.indptr[k]:W.indptr[k + 1]].tolist()))
            for i in range(n):
                lo, hi = X.indptr[i], X.indptr[i + 1]
                by_hand[i, k] = sum(w.get(int(j), 0.0) * v
                                    for j, v in zip(X.indices[lo:hi], X.data[lo:hi]))
        by_hand = by_hand + est.intercept_
        row["coef_shape"] = list(W.shape)
        row["sparse"] = sp.issparse(W)
        row["agrees"] = bool(np.allclose(scores, by_hand.reshape(scores.shape)))
    out[name] = row
print(json.dumps(out))
"""


def test_estimators_renumber_a_huge_column_space():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    for name, row in out.items():
        assert row["accuracy"] >= 0.9, (name, row)
        if name != "sampled":
            classes = 3 if name == "ocas multiclass" else 1
            assert row["coef_shape"] == [classes, 2**40] and row["sparse"], (name, row)
            assert row["agrees"], (name, row)
