"""Pathfinder: the DLR authors' Pathfinder-Segmentation and LRA's classic Pathfinder / Path-X.

One module per reason to change:

* ``records.py``: the process's constants, the preset / stamp / workspace records and the
  named counter slots;
* ``tables.py``: the stamp tables, drawn once per preset with PIL;
* ``resample.py``: ports of PIL's LANCZOS reduction (float and 8-bit fixed point);
* ``canvas.py``: the occupancy mask and image formation (stamps on the frame);
* ``process.py``: the placement process and the per-image kernels (its docstring states the
  process and its draw order);
* ``glue.py``: what both tasks share (geometry check, records of a config, batch rendering);
* ``seg.py`` (``pathfinder-seg``) and ``lra.py`` (``pathfinder``): the two tasks;
* ``fidelity.py``: image statistics for comparing ours with the reference generators.

Nothing is imported here, so importing one module loads only what it needs.
"""
