"""The artificial checkerboard of Yu & Joachims (KDD 2008, §6.1).

Points drawn uniformly on the unit square, labelled by a 4×4 board of alternating
classes, then moved by Gaussian noise (σ = 0.02 per coordinate) so that points near
the cell borders can sit on the wrong side: the classes are not separable and the
kernel SVM has to learn the board.

    python benchmarks/checkerboard.py N OUT_FILE [--seed S] [--cells 4] [--noise 0.02]

writes N examples in SVMlight format (features 1 and 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cpsvm.data import Dataset  # noqa: E402


def checkerboard(n: int, seed: int = 0, cells: int = 4, noise: float = 0.02) -> Dataset:
    """n labelled points of a ``cells``×``cells`` board (labels +1/−1, alternating)."""
    rng = np.random.default_rng(seed)
    points = rng.random((n, 2))
    column, row = np.floor(cells * points).T
    y = np.where((column + row) % 2 == 0, 1.0, -1.0)
    X = points + noise * rng.standard_normal((n, 2))
    return Dataset(sp.csr_matrix(X), y, source=f"<checkerboard n={n} seed={seed}>")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cells", type=int, default=4)
    parser.add_argument("--noise", type=float, default=0.02)
    args = parser.parse_args(argv)
    from cpsvm.io.svmlight import write_svmlight

    data = checkerboard(args.n, args.seed, args.cells, args.noise)
    write_svmlight(args.out, data.X, data.y)


if __name__ == "__main__":
    main()
