"""Inference shared by the problems (training) and the models (prediction), below both:
Viterbi over SVMhmm's layout (:mod:`~cpsvm.decoding.viterbi`), CKY over a weighted
grammar (:mod:`~cpsvm.decoding.grammar`, kernels in :mod:`~cpsvm.decoding.cky`) and its
parse trees (:mod:`~cpsvm.decoding.trees`), and the segment helpers both use
(:mod:`~cpsvm.decoding.segments`). Nothing here imports :mod:`cpsvm.problems`,
:mod:`cpsvm.models` or :mod:`cpsvm.io`."""
