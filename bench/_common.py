"""What every benchmark records about the machine it ran on, under the same keys.

    from _common import machine, finish
    results = {"machine": machine(), ...}   # at the start
    finish(results["machine"])              # at the end: the load average then

Scripts run as ``python bench/NAME.py``, so this folder is on ``sys.path``. The keys:
``host`` (node name), ``processor``, ``cpus`` (os.cpu_count()), ``platform``, ``python``,
``numpy``, ``numba``, ``longsynth`` (version), ``load_avg_start`` / ``load_avg_end`` (1, 5,
15 min; the machine may be shared), and whatever a script adds (``torch``, ``device``).
"""
import json
import os
import platform

import numba
import numpy as np

import longsynth


def machine(**extra):
    """The machine record (a dict) of a benchmark starting now; ``extra`` keys are added."""
    return {"host": platform.node(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__, "longsynth": longsynth.__version__,
            "load_avg_start": list(os.getloadavg()), **extra}


def finish(record):
    """Add the load average at the end of the run to a record from machine(); returns it."""
    record["load_avg_end"] = list(os.getloadavg())
    return record


def write_json(path, results):
    """``results`` as JSON at ``path`` (its folder made), said in one line."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {path}")


def write_fixtures(path, fixtures, sha256):
    """The authors' fixtures of a model comparison and the SHA-256 of the sources that made them, as one npz."""
    fixtures.update({f"sha256/{f}": np.array(h) for f, h in sha256.items()})
    np.savez_compressed(path, **fixtures)
    print(f"wrote {path} ({os.path.getsize(path):,} bytes)")
