"""Moved: the field's token suites live in models_ref/protocols/ (recall.py: MQAR, H3's synthetics,
selective copying, induction heads; state.py: parity, modular arithmetic, word problems; mad.py:
MAD; controls.py: their certificates' controls). This module keeps their old names importable
(the command line reads ``GROUPS`` from here), with the tables of those three families alone;
new code imports from models_ref/protocols/.
"""
from __future__ import annotations

from longsynth.models_ref.protocols import mad, recall, state
from longsynth.models_ref.protocols.controls import CONTROL_TINY, NO_CONTROL, VALIDATE
from longsynth.models_ref.protocols.mad import (GROUP_NAMES, GROUP_PAPER, GROUP_SOURCE, GROUPS, INCOMPARABLE,
                                                MAD_BATCH, MAD_CHANGES, MAD_EPOCHS, MAD_LRS, MAD_TEST, MAD_TRAIN,
                                                MAD_WEIGHT_DECAYS, mad_settings)
from longsynth.models_ref.protocols.recall import MQAR_GRID, ZOOLOGY_LRS

__all__ = ["ARCHITECTURES", "CONTROL_TINY", "GROUP_NAMES", "GROUP_PAPER", "GROUP_SOURCE", "GROUPS", "INCOMPARABLE",
           "MAD_BATCH", "MAD_CHANGES", "MAD_EPOCHS", "MAD_LRS", "MAD_TEST", "MAD_TRAIN", "MAD_WEIGHT_DECAYS",
           "MQAR_GRID", "NO_CONTROL", "PAPER", "PAPER_FROM", "PAPER_NAMES", "PAPER_SOURCE", "PROTOCOLS", "SUITES",
           "VALIDATE", "ZOOLOGY_LRS", "mad_settings"]



def _tokens(table):
    """One table of the three token families, merged."""
    return {**getattr(recall, table), **getattr(state, table), **getattr(mad, table)}


PROTOCOLS, ARCHITECTURES, PAPER, PAPER_SOURCE, SUITES, PAPER_NAMES, PAPER_FROM = (
    _tokens(t) for t in ("PROTOCOLS", "ARCHITECTURES", "PAPER", "PAPER_SOURCE", "SUITES", "PAPER_NAMES", "PAPER_FROM"))
