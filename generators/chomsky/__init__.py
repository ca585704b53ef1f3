"""The 15 tasks of "Neural Networks and the Chomsky Hierarchy" (Deletang, Ruoss et al., ICLR 2023;
google-deepmind/neural_networks_chomsky_hierarchy), token tasks named chomsky-<their task name>
(docs/tasks/chomsky.md): our own seeded law of each of their samplers, laid out as their models
read a sample (the input, then one empty token per output position).

regular.py: even-pairs, parity-check, cycle-navigation, modular-arithmetic
dcf.py: modular-arithmetic-brackets, reverse-string, solve-equation, stack-manipulation
cs.py: duplicate-string, missing-duplicate-string, odds-first, bucket-sort
cs_arith.py: binary-addition, binary-multiplication, compute-sqrt
_common.py: the length parameters, the row layout, bit draws, bracketed expressions.
"""
from longsynth.generators.chomsky import cs, cs_arith, dcf, regular

# the paper's order: regular, DCF, CS
TASKS = [*regular.TASKS, *dcf.TASKS, *cs_arith.TASKS, *cs.TASKS]
