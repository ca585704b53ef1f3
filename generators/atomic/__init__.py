"""The DLR paper's 11 atomic tasks (Gupta, Mehta and Berant, "Simplifying and Understanding
State Space Models with Diagonal Linear RNNs"): noise.py (shift, cumsum, cummax, reverse, sort,
context-shift), select.py (select, select-fixed), mips.py, solve.py (solve, solve-fixed).
Definitions: docs/tasks/atomic.md; twins: tests/naive/atomic.py; tests: tests/test_atomic.py;
protocol and the paper's tables: models_ref/protocols/atomic.py. The authors' generator is not
seeded per sample: `gen` gives their law (docs/authors-data.md).
"""
