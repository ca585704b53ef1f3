"""What a sweep or a run shows a reader (docs/evaluate.md, "Reading a report"): the report's rows
and verdicts (``report.py``), what it reads from certificates (``records.py``), its words
(``text.py``), its figures (``figures.py``), and a run's own figures (``curves.py``)."""
