"""Slow, independent NumPy / pure-Python twins of every longsynth kernel.

Written from the task definitions in docs/tasks/ and the documented reproducibility contract (the key ->
stream construction in ``longsynth/rng.py``'s docstring and each generator's documented
draw order), never from the kernels' code. Pure Python integers throughout the RNG, so
an error in the Numba uint64 arithmetic cannot hide here.

A package by task family: ``core`` (the keyed stream and split codes every twin draws
from), ``atomic``, ``pathfinder``, ``listops``, ``state`` (state tracking), ``recall``
(MQAR, Safari, selective copying), ``repeat`` (Repeat After Me's strings), ``flipflop``,
``regbench`` (in-context language learning) and
``mad``. Tests ``import naive`` and call ``naive.mqar(...)``: every name is re-exported here.
"""
from .core import (
    FIXED, M64, mix, rotl, SPLITS, Stream, _token_dtype, _ziggurat_edges, ZR, ZX,
)
from .atomic import (
    context_shift, cummax, cumsum, exact_int, floyd, haar, mips, mips_argmax, mips_scores, _noise, reverse, select,
    select_fixed, select_fixed_positions, _select_sample, shift, solve, solve_fixed, solve_fixed_matrix,
    _solve_sample, solve_size, sort, sort_order, _unit,
)
from .pathfinder import (
    components8, lra_pathfinder_compose, pathfinder_compose, scipy_bytescale,
)
from .listops import (
    listops_apply, LISTOPS_CLOSE, listops_evaluate, listops_longest, listops_reference, listops_sample,
    listops_tree, LISTOPS_VOCAB,
)
from .state import (
    _bracket_expression, _cycle_parity, group_elements, group_multiply, HalfDraws, _lengths, modular_arithmetic,
    modular_arithmetic_brackets, parity, _scored, word_problem,
)
from .flipflop import flipflop
from .regbench import minimal_dfa, regbench
from .regbench import dfa_accuracy as regbench_dfa_accuracy, ngram as regbench_ngram
from .repeat import repeat
from .recall import (
    associative_recall, induction_head, mqar, _safari_targets, selective_copying,
)
from .mad import (
    mad_compression, mad_fuzzy_recall, MAD_IGNORE, mad_memorization, mad_memorization_map, _mad_motif, _mad_out,
    _mad_pairs, mad_recall, mad_selective_copying,
)

__all__ = [
    "associative_recall", "_bracket_expression", "components8", "context_shift", "cummax", "cumsum",
    "_cycle_parity", "exact_int", "FIXED", "floyd", "group_elements", "group_multiply", "haar", "HalfDraws",
    "flipflop", "regbench", "minimal_dfa", "regbench_dfa_accuracy", "regbench_ngram", "induction_head",
    "_lengths", "listops_apply", "LISTOPS_CLOSE",
    "listops_evaluate",
    "listops_longest",
    "listops_reference", "listops_sample", "listops_tree", "LISTOPS_VOCAB", "lra_pathfinder_compose", "M64",
    "mad_compression", "mad_fuzzy_recall", "MAD_IGNORE", "mad_memorization", "mad_memorization_map", "_mad_motif",
    "_mad_out", "_mad_pairs", "mad_recall", "mad_selective_copying", "mips", "mips_argmax", "mips_scores", "mix",
    "modular_arithmetic", "modular_arithmetic_brackets", "mqar", "_noise", "parity", "pathfinder_compose",
    "repeat", "reverse", "rotl", "_safari_targets", "scipy_bytescale", "_scored", "select", "select_fixed",
    "select_fixed_positions", "_select_sample", "selective_copying", "shift", "solve", "solve_fixed",
    "solve_fixed_matrix", "_solve_sample", "solve_size", "sort", "sort_order", "SPLITS", "Stream", "_token_dtype",
    "_unit", "word_problem", "_ziggurat_edges", "ZR", "ZX",
]
