"""cpsvm: cutting-plane SVM training with SVMlight/SVMstruct/libocas-style tools."""

import os

__version__ = "0.1.0"

if "NUMBA_THREADING_LAYER" not in os.environ:
    # numba's OpenMP layer took 15 ms per parallel row loop here (0.5 ms with workqueue,
    # 0.8 ms serial) on a9a: its idle threads wake slowly. An explicit setting wins.
    from numba import config as _numba_config
    _numba_config.THREADING_LAYER = "workqueue"
