"""In-context language learning of Akyürek, Wang, Kim and Andreas, "In-Context Language Learning:
Architectures and Algorithms" (ICML 2024), RegBench: regbench.py (the kernel and the task record).
Definition: docs/tasks/regbench.md; twin: tests/naive/regbench.py; tests: tests/test_regbench.py.
"""
