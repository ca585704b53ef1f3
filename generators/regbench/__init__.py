"""In-context language learning of Akyürek, Wang, Kim and Andreas, "In-Context Language Learning:
Architectures and Algorithms" (ICML 2024), RegBench: config.py (its parameters and row width), regbench.py (our
law's kernel and the task record), scoring.py (their DFA accuracy and in-context n-gram), and the authors' rows
under a declared hash seed: authors.py, with numpy_draws.py (NumPy's generator) and cpython_sets.py (CPython's
set orders). Definition: docs/tasks/regbench.md; twin: tests/naive/regbench.py; tests: tests/test_regbench.py,
tests/test_regbench_authors.py.
"""
