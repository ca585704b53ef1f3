"""bench/chomsky_length_probe.py: its rows are the task's rows, and its orbit count is the tape's (no training)."""
import importlib.util
import os

import numpy as np
import pytest
import torch

import longsynth
from longsynth.models_ref.layers.tape_rnn import roll_index

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "chomsky_length_probe.py")
spec = importlib.util.spec_from_file_location("chomsky_length_probe", PATH)
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)


@pytest.mark.parametrize("n", [1, 7, 32])
def test_rows_are_the_reverse_string_tasks_rows(n):
    b = longsynth.batch("chomsky-reverse-string", 0, 6, seed=3, length=n, max_length=n)
    inputs, targets = np.asarray(b["inputs"]), np.asarray(b["targets"])  # [6, 2n] each
    x, y = probe.reverse_rows(torch.as_tensor(inputs[:, :n].astype(np.int64)), empty=2)
    assert np.array_equal(x.numpy(), inputs)
    assert np.array_equal(y.numpy(), targets[:, n:])
    assert (targets[:, :n] == -100).all()


@pytest.mark.parametrize("n, m", [(32, 256), (40, 256), (101, 256), (100, 256), (129, 258), (5, 7)])
def test_orbit_counts_the_cells_the_tapes_jumps_reach(n, m):
    jump = roll_index(torch.tensor([n]), m, 1)[0, :, 0]  # cell j <- cell (j - n) mod m: one jump of the tape
    tape = torch.arange(m)
    seen = set()
    for _ in range(m):
        seen.add(int(tape[0]))  # the cell under the head after each jump
        tape = tape[jump]
    assert probe.orbit(n, m) == len(seen)
