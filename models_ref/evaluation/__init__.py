"""``longsynth evaluate`` and ``validate`` (docs/evaluate.md): the bounds of their options
(``limits.py``, plain numbers, read without torch), a sweep's plan (``plan.py``), its finished runs
(``finished.py``), its estimate (``dry_run.py``), the sweep itself (``sweep.py``), a protocol
resolved for one task (``protocol.py``), one run (``harness.py``, with the model's checks in
``checks.py`` and the record of its files in ``files.py``) and validate (``validate.py``)."""
