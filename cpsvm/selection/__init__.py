"""Model selection: k-fold cross-validation and paths over C (``--cv``, ``--c-path``).

:mod:`.grid` reads the values of a path, :mod:`.folds` splits a dataset into folds of
whole units (an example, a query, a sentence, a tree; stratified by class where the
problem has classes), :mod:`.path` trains each fold along the values, warm where the
solver keeps state between values (a cut of the empirical risk does not depend on C),
and scores the held-out fold with the problem's own measure (its entry's
``selection.cv_measure``). Nothing here reads files or prints: the commands do
(cpsvm/cli/selection.py).
"""
