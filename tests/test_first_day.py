"""A researcher's first day: what a new user meets before any paper-scale run (docs/evaluate.md)."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from click.testing import CliRunner

from longsynth.cli.main import cli

torch.set_num_threads(1)

POSITIONS = textwrap.dedent('''
    import torch
    from torch import nn


    class Tiny(nn.Module):
        def __init__(self, spec, n):
            super().__init__()
            self.emb = nn.Embedding(spec.vocab_size, 16)
            self.pos = nn.Embedding(n, 16)  # learned positions: an index past n fails
            self.out = nn.Linear(16, spec.d_output)

        def forward(self, x):
            t = torch.arange(x.shape[1])
            return self.out(torch.cumsum(self.emb(x) + self.pos(t), 1))


    def build(spec):
        return Tiny(spec, spec.seq_len)


    def build_longest(spec):
        return Tiny(spec, spec.longest)
''')


def test_positions_sized_by_the_training_length_are_refused_before_training(tmp_path):
    """The induction-head suite tests at lengths to 1,024 after training at 64: a model that
    sizes its positions by spec.seq_len fails in one line before the first step."""
    (tmp_path / "tinytf.py").write_text(POSITIONS)
    out = tmp_path / "r"
    r = CliRunner().invoke(cli, ["evaluate", f"{tmp_path / 'tinytf.py'}:build", "--suite", "induction-heads",
                                 "--scale", "tiny", "--steps", "3", "--out", str(out)])
    assert r.exit_code != 0
    assert "longest input of induction-heads failed (T = 1025" in r.output and "spec.max_seq_len" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) <= 3
    assert not (out / "runs").exists() or not any((out / "runs").rglob("metrics.json"))  # nothing trained


def test_spec_max_seq_len_is_the_longest_test_input_and_sized_models_run(tmp_path):
    from longsynth.models_ref.protocols.registry import PROTOCOLS  # noqa: F401 - registers the field's protocols
    from longsynth.models_ref.evaluation.harness import Job, prepare

    p = prepare(Job(model="x", protocol="induction-heads", task="induction-head", scale="tiny"))
    assert p.spec.seq_len == 65 and p.spec.max_seq_len == 1025 and p.spec.longest == 1025
    p = prepare(Job(model="x", protocol="atomic", task="cumsum", scale="tiny"))
    assert p.spec.max_seq_len == p.spec.seq_len  # no test sets: the training length
    (tmp_path / "tinytf.py").write_text(POSITIONS)
    r = CliRunner().invoke(cli, ["evaluate", f"{tmp_path / 'tinytf.py'}:build_longest", "--suite", "induction-heads",
                                 "--scale", "tiny", "--steps", "3", "--out", str(tmp_path / "r")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "r" / "report.md").exists()


def test_list_compiles_no_kernel(tmp_path):
    """`longsynth list` in a fresh Numba cache: it reads the registry and sizes the defaults from
    key shapes; no kernel compiles (a first list took minutes when it did)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_DEBUG_CACHE": "0"}
    code = ("import numba.core.dispatcher as d, sys\n"
            "seen = []\n"
            "orig = d.Dispatcher._compile_for_args\n"
            "def spy(self, *a, **k):\n"
            "    seen.append(self.py_func.__qualname__)\n"
            "    return orig(self, *a, **k)\n"
            "d.Dispatcher._compile_for_args = spy\n"
            "from click.testing import CliRunner\n"
            "from longsynth.cli.main import cli\n"
            "r = CliRunner().invoke(cli, ['list'])\n"
            "assert r.exit_code == 0, r.output\n"
            "print('compiled:', sorted(set(seen)))\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "compiled: []" in r.stdout, r.stdout


@pytest.mark.parametrize("args", [["--group", "Z1"], ["--group", "A5\n"], ["--group", "A4\nxZ5"]])
def test_degenerate_word_problem_groups_get_one_line(tmp_path, args):
    r = CliRunner().invoke(cli, ["gen", "word-problem", *args, "-n", "10", "--out", str(tmp_path / "d")])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert not (tmp_path / "d").exists()
