"""State tracking: word_problem.py (Merrill et al.'s group word problems) and
formal_language.py (Grazzi et al.'s parity and modular arithmetic, with brackets). Definitions:
docs/tasks/state-tracking.md; twins: tests/naive/state.py; tests: tests/test_state_tracking.py;
protocols and the papers' figures: models_ref/protocols/state.py. The Chomsky hierarchy's tasks
are their own family (generators/chomsky/).
"""
