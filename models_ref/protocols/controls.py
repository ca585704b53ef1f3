"""The certificates' positive controls (``longsynth validate``): a certificate must be able to fail.

Atomic tasks (``positive_control``): where the reference DLR is expected to fail a task, the
model with the paper's best figure at the certificate's length trains beside it and must reach
that figure (less ``registry.TOLERANCE``). The tiny scale runs at L = 512, so its controls are
Table 1's L = 512 columns (``atomic.LENGTH_OF``). Below ``NO_CONTROL_BELOW`` the paper has no model
that learns the task.

Token tasks: ``longsynth validate TASK`` trains the positive control of the task's protocol
(``VALIDATE``, each family's merged), and the certificate passes when its test accuracy reaches
the threshold: at tiny scale ``CONTROL_TINY`` (0.9); at paper scale the control's paper figure
less the tolerance. Targets permuted across samples (--permute-targets) leave it at chance: the
certificate fails. ``NO_CONTROL``: the tasks without a certificate, and why.
"""
from __future__ import annotations

from longsynth.models_ref.protocols import atomic, chomsky, mad, recall, state
from longsynth.models_ref.protocols.registry import TOLERANCE, paper_figures

NO_CONTROL_BELOW = 0.6
CONTROL_TINY = 0.9
VALIDATE = {**recall.VALIDATE, **state.VALIDATE, **mad.VALIDATE, **chomsky.VALIDATE}  # task -> (protocol, control)
NO_CONTROL = {**recall.NO_CONTROL, **state.NO_CONTROL, **mad.NO_CONTROL, **chomsky.NO_CONTROL}  # task -> why none


def positive_control(protocol, scale, task, model="dlr"):
    """(control model, its paper figure, the figures' protocol) for a task the reference
    ``model`` fails in the paper; (None, best figure, ...) where no model of the paper
    learns it; None where ``model`` learns it itself (it is its own positive control)."""
    own = paper_figures(protocol, task).get(model, {}).get("r2")
    if own is None or own >= 1 - TOLERANCE:
        return None
    at = atomic.LENGTH_OF.get((protocol, scale), protocol)
    figures = {col: f["r2"] for col, f in paper_figures(at, task).items() if col not in ("dlr", model)}
    if not figures:
        return None
    order = ("attention", "dlr-6", "attention-ff")  # on a tie the cheaper model controls
    best = max(figures, key=lambda c: (figures[c], -order.index(c) if c in order else -len(order)))
    if scale == "tiny" and task in atomic.OUT_OF_TINY_BUDGET:
        return None, figures[best], at
    return (best if figures[best] >= NO_CONTROL_BELOW else None), figures[best], at
