"""cpsvm: cutting-plane SVM training with SVMlight/SVMstruct/libocas-style tools."""

import os

__version__ = "0.1.0"

# The master QP works on small dense matrices: OpenBLAS threads beside numba's made its
# eigh calls 100-400 ms instead of 1-3 ms on 2 cores (benchmarks/bench_sampled.py,
# bench_cp_learn.py). Takes effect when cpsvm is imported before numpy, as the commands do.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

if "NUMBA_THREADING_LAYER" not in os.environ:
    # numba's OpenMP layer took 15 ms per parallel row loop here (0.5 ms with workqueue,
    # 0.8 ms serial) on a9a: its idle threads wake slowly. An explicit setting wins.
    from numba import config as _numba_config
    _numba_config.THREADING_LAYER = "workqueue"
