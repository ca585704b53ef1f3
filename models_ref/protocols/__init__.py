"""The papers' protocols, the built-in models' presets and the papers' figures, as data, one
module per task family (the generators' grouping: generators/atomic/, listops/, ...):

- ``atomic``: the DLR paper's atomic tasks (Tables 1, 2, 4, 5) and their positive controls;
- ``listops``: ListOps-Subtrees (DLR paper Table 6) and LRA ListOps (S4's setting);
- ``pathfinder``: Pathfinder-Segmentation (DLR paper Table 6), LRA Pathfinder and Path-X;
- ``recall``: zoology's MQAR, H3's synthetics, Mamba's selective copying and induction heads;
- ``state``: Grazzi et al.'s parity and modular arithmetic, Merrill et al.'s word problems;
- ``mad``: MAD's six tasks at their settings, and its task scores.

Each family module fills the same tables, each entry citing its source (docs/models.md
"Presets" says how they are used):

- ``PROTOCOLS[(protocol, scale)]``: what a suite fixes whatever the model is - data, loss
  (objective), readout, causality, batch, steps, schedule, evaluation - and the default
  learning rate a model without its own entry trains at. ``scale="paper"`` holds the
  papers' values; ``scale="tiny"`` the same recipe shrunk to run on one CPU core in minutes.
- ``ARCHITECTURES[(protocol, scale, model)]``: a built-in model's ``ModelConfig`` fields
  (the data's channels come from the ModelSpec), its learning rate and, where its layers
  match another column of the paper than the protocol's, the protocol of those ``figures``.
- ``PAPER[protocol][column]``: the papers' test figures as fractions, per task for the atomic
  suite, with ``PAPER_SOURCE[protocol]``; a column's key is the built-in that reproduces it,
  ``PAPER_NAMES[protocol][column]`` the row as the paper names it and
  ``PAPER_FROM[protocol][column]`` where the figure comes from (a table, or a plot read to
  +-0.03).
- ``SUITES``: the groups ``--suite`` accepts, [(protocol, task)].

``registry`` merges them into the tables the harness reads and answers the questions asked
of them (``architecture``, ``paper_figures``, ...); ``controls`` holds the certificates'
positive controls. ``tokens`` (what the token protocols share) and ``s4_family`` (the S4, S4D
and eSSM presets' shared pieces) serve several families.
"""
