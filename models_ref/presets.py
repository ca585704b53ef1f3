"""Moved: the protocols, presets and papers' figures live in models_ref/protocols/, one module per
task family, merged by protocols/registry.py. This module keeps their old names importable
(the command line reads ``PROTOCOLS`` from here); new code imports from models_ref/protocols/.
"""
from __future__ import annotations

from longsynth.models_ref.protocols.atomic import LENGTH_OF, OUT_OF_TINY_BUDGET, SHIFT_LENGTHS, TABLE1
from longsynth.models_ref.protocols.controls import NO_CONTROL_BELOW as NO_CONTROL
from longsynth.models_ref.protocols.controls import positive_control
from longsynth.models_ref.protocols.registry import (ARCHITECTURES, ATOMIC_TASKS, COLUMNS, DEFAULT_NAMES,
                                                     EXTRA_COLUMNS, PAPER, PAPER_FROM, PAPER_NAMES, PAPER_SOURCE,
                                                     PROTOCOLS, SUITES, TOLERANCE, VARIANTS, architecture,
                                                     column_name, column_source, own_figures, paper_figures,
                                                     paper_split, preset_lr, protocol_of, suite_members, task_of)

__all__ = ["ARCHITECTURES", "ATOMIC_TASKS", "COLUMNS", "DEFAULT_NAMES", "EXTRA_COLUMNS", "LENGTH_OF", "NO_CONTROL",
           "OUT_OF_TINY_BUDGET", "PAPER", "PAPER_FROM", "PAPER_NAMES", "PAPER_SOURCE", "PROTOCOLS", "SHIFT_LENGTHS",
           "SUITES", "TABLE1", "TOLERANCE", "VARIANTS", "architecture", "column_name", "column_source", "own_figures",
           "paper_figures", "paper_split", "positive_control", "preset_lr", "protocol_of", "suite_members",
           "task_of"]
