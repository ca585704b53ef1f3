"""ListOps: the DLR paper's ListOps-Subtrees (every subtree's value tagged at its `]`) and LRA's
classic ListOps, in tasks.py; the tree sampler and its Numba kernels in tree.py; pictures and the
dataset audit in show.py. Definitions: docs/tasks/listops.md; twins: tests/naive/listops.py;
tests: tests/test_listops.py; protocols: models_ref/protocols/listops.py; the authors' TSV
layout: longsynth/exports/lra_tsv.py.
"""
