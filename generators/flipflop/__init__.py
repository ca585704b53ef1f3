"""The flip-flop language of Liu et al., "Exposing Attention Glitches with Flip-Flop Language Modeling"
(NeurIPS 2023): flipflop.py (the kernel and the task record). Definition: docs/tasks/flipflop.md;
twin: tests/naive/flipflop.py; tests: tests/test_flipflop.py.
"""
