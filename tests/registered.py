"""Test-only tasks in longsynth's registry for the duration of a ``with`` block."""
import contextlib

import pytest

from longsynth import registry


@contextlib.contextmanager
def registered(*tasks):
    """The registry with ``tasks`` added (by name); restored on exit."""
    mp = pytest.MonkeyPatch()
    found = dict(registry.all_tasks())
    found.update({t.name: t for t in tasks})
    mp.setattr(registry, "_TASKS", found)
    try:
        yield
    finally:
        mp.undo()
