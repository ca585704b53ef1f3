"""The models' builders (docs/models.md): the reference stack (``stack.py``), the built-in
factories ``longsynth evaluate`` names (``factories.py``), and the models that stand outside the
stack, the Chomsky paper's (``chomsky.py``) and zoology's (``zoology.py``, ``zoology_mixers.py``).
The layers they assemble are in ``models_ref/layers/``."""
