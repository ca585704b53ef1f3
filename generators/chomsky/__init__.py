"""The 15 tasks of "Neural Networks and the Chomsky Hierarchy" (Deletang, Ruoss et al., ICLR 2023;
google-deepmind/neural_networks_chomsky_hierarchy), token tasks named chomsky-<their task name>
(docs/tasks/chomsky.md): our own seeded law of each of their samplers, laid out as their models
read a sample (the input, then one empty token per output position).

regular.py: even-pairs, parity-check, cycle-navigation, modular-arithmetic
dcf.py: modular-arithmetic-brackets, reverse-string, solve-equation, stack-manipulation
cs.py: duplicate-string, missing-duplicate-string, odds-first, bucket-sort
cs_arith.py: binary-addition, binary-multiplication, compute-sqrt
_common.py: the length parameters, the row layout, bit draws, bracketed expressions.
authors.py: the authors' own stream (authors_jax.py and jax_random.py replay their jitted tasks, authors_py.py
and mt19937.py the ones written in Python).
"""
from longsynth.generators.chomsky import authors, cs, cs_arith, dcf, regular
from longsynth.generators.chomsky._common import LAYOUTS

# the paper's order: regular, DCF, CS
TASKS = [*regular.TASKS, *dcf.TASKS, *cs_arith.TASKS, *cs.TASKS]
for _t in TASKS:  # the authors' own stream of each (authors.py; its replays load on first use)
    _t.authors, _t.authors_arrays = authors.register(_t.name.removeprefix("chomsky-"), LAYOUTS[_t.name])
