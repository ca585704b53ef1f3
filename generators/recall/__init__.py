"""The field's recall and copying tasks: mqar.py (zoology's multi-query associative recall, and
zoology's own streams and pipeline seeds), safari.py (H3's associative recall and induction
head as safari makes them), copying.py (Mamba's selective copying, S4's generator). Definitions:
docs/tasks/mqar.md, safari.md, selective-copying.md; twins: tests/naive/recall.py; tests:
tests/test_mqar.py, test_safari.py, test_copying.py; protocols and the papers' figures:
models_ref/protocols/recall.py.
"""
