"""cpsvm: cutting-plane SVM training with SVMlight/SVMstruct/libocas-style tools.

Importing the package (or any library module) changes nothing in the process: no
environment variables, numba threading layer, thread count or umask. The commands set
what they need in their entry points (:func:`cpsvm.cli.common.configure_process`).
"""

__version__ = "0.1.0"
