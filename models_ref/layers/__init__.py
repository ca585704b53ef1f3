"""The sequence layers of the built-in models, one file each in its paper's symbols (docs/models.md):
``kernel`` (what the convolutional SSM layers share), ``dlr``, ``dss``, ``s4``, ``s4d``, ``essm``,
``attention`` and the recurrent ``s6`` (Mamba's selective SSM and its chunked scan), ``gru`` and ``torch_lstm``.
Only torch is imported here; the model stack is ``longsynth.models_ref.models.stack``, the harness the
rest of ``longsynth.models_ref``."""
