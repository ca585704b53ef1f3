"""MAD's six token tasks (Poli et al. 2024, "Mechanistic Design and Scaling of Hybrid
Architectures"; athms/mad-lab @ 0f49a452, mad/data/instances.py), one file each, in the order
`longsynth list` shows them: recall.py (in-context recall and noisy in-context recall),
fuzzy.py, copying.py (selective copying), compression.py, memorization.py; common.py holds what
they share, authors.py the authors' port (MAD's own streams and its training pipeline's data
sets). Definitions: docs/tasks/mad.md; twins: tests/naive/mad.py; tests: tests/test_mad.py;
protocol and MAD's figures: models_ref/protocols/mad.py.
"""
from longsynth.generators.mad import compression, copying, fuzzy, memorization, recall

TASKS = [*recall.TASKS, *fuzzy.TASKS, *copying.TASKS, *compression.TASKS, *memorization.TASKS]
