"""cpsvm's layers, from the top to the bottom: what tests/test_imports.py checks the
imports against, and the order of docs/ARCHITECTURE.md's list of layers.

A layer is one package (``io/``) or one top-level module (``data.py``) of cpsvm;
``__init__.py`` is the package's own module. A module imports only modules of its own
layer or of the layers below it, imports inside functions included.
"""

LAYERS = (
    "cli/",
    "cluster/",
    "sklearn/",
    "reporting/",
    "solvers/",
    "params/",
    "selection/",
    "problems/",
    "options.py",
    "plotting.py",
    "io/",
    "data.py",
    "models.py",
    "decoding/",
    "engine/",
    "approx.py",
    "measures.py",
    "kernel_rows.py",
    "kernel_row_loops.py",
    "kernels.py",
    "sparse_ops.py",
    "columns.py",
    "memory.py",
    "conventions.py",
    "threads.py",
    "compiled/",
    "errors.py",
    "__init__.py",
)
