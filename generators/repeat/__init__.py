"""The string tasks of Jelassi et al., "Repeat After Me" (ICML 2024): copy, prefix and suffix n-gram
lookup, duplicate n-gram. strings.py (the kernel of all four), tasks.py (their configs and task
records), authors.py (sjelassi/transformers_ssm_copy's rows replayed under a declared seed).
Definition: docs/tasks/repeat.md; twins: tests/naive/repeat.py; tests: tests/test_repeat.py.
"""
