"""The learners' parameters: one dataclass per solver (its ``Params``), each field that a
flag sets declared with that flag (cpsvm.options), and the options every learner shares
(:mod:`.shared`). The solvers take these dataclasses; the commands are built from them.
Importing this package loads no numpy (the commands' ``-h`` reads it)."""
