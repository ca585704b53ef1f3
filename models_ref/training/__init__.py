"""Training one model (docs/models.md, "Training"): the loop (``trainer.py``), its configuration
and schedule (``config.py``), a batch through the model (``forward.py``), the evaluation pass
(``eval_pass.py``), the papers' metrics (``metrics.py``), checkpoints (``checkpoints.py``) and the
one line for a failed write (``write_errors.py``)."""
