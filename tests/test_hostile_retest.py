"""A hostile retest of the house regrouping, the schema language, the data traps and the hostile-input
items (293 attacks, 21 broke: 14 faults): a test for each fault it found, written to fail on the code it
was found in and fixed since, and a few attacks that held and are not tested elsewhere."""
import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch
from click.testing import CliRunner

import longsynth
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError
from test_evaluate_hostile import EVAL as HOSTILE_EVAL, LINEAR
from test_evaluate_hostile import copied, finished  # noqa: F401 (fixtures: a finished run, a copy to edit)
from untrusted_fixtures import *  # noqa: F403 (its __all__: the fixtures clean, ds and listops_subtrees)
from untrusted_fixtures import edit_manifest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what escape.visible spells out, newlines aside

torch.set_num_threads(1)


def invoke(*args, color=False):
    r = CliRunner().invoke(cli, [str(a) for a in args], color=color)  # color: keep escapes, as a terminal gets them
    torch.set_num_threads(1)
    return r


def one_error_line(r):
    lines = [line for line in r.output.splitlines() if line.startswith("Error:")]
    assert r.exit_code not in (0, None) and len(lines) == 1, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit), r.output
    return lines[0]


# ---------------------------------------------------------------- the house


def test_every_name_the_docs_import_is_importable_there():
    import importlib

    missing = []
    for dirpath, _, names in os.walk(os.path.join(ROOT, "docs")):
        for name in names:
            if not name.endswith(".md"):
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                text = f.read()
            for mod, what in re.findall(r"^from (longsynth[\w.]*) import ([\w, ]+)$", text, re.M):
                module = importlib.import_module(mod)
                missing += [f"{name}: {mod}.{n.strip()}" for n in what.split(",") if not hasattr(module, n.strip())]
    assert not missing, missing


def test_the_docs_name_no_module_the_regrouping_renamed():
    old = ("trainer_checkpoints", "trainer_config", "trainer_eval", "trainer_forward", "harness_checks",
           "harness_files", "harness_figures", "evaluate_dry_run", "evaluate_plan", "report_figures",
           "report_records", "report_text")
    found = []
    for dirpath, _, names in os.walk(os.path.join(ROOT, "docs")):
        for name in names:
            if name.endswith(".md"):
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    found += [f"{name}: {w}" for w in re.findall(r"\b(" + "|".join(old) + r")\.\w+", f.read())]
    assert not found, found


def test_no_tracker_numbers_in_code_or_tests():
    pattern = re.compile(r"\bissues? ?#?[0-9]+\b|\(#[0-9]+\)", re.I)
    me = os.path.abspath(__file__)
    cited = []
    for top in ("bench", "cli", "generators", "longsynth", "models_ref", "tests"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                path = os.path.join(dirpath, name)
                if name.endswith(".py") and path != me:
                    with open(path, encoding="utf-8") as f:
                        cited += [f"{os.path.relpath(path, ROOT)}: {m.group()}" for m in pattern.finditer(f.read())]
    assert not cited, cited


# ---------------------------------------------------------------- one schema language


@pytest.mark.parametrize("value", [1.0, True])
def test_format_version_is_the_integer_one(ds, value):
    edit_manifest(ds, lambda m: m.update(format_version=value))
    with pytest.raises(LongsynthError, match="format"):
        longsynth.open(str(ds))


def test_a_manifest_integer_past_python_s_digit_limit_is_one_line(ds):
    path = os.path.join(ds, "manifest.json")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(re.sub(r'"seed": \d+', '"seed": ' + "9" * 5000, text))
    line = one_error_line(invoke("info", ds))
    assert "not valid JSON" in line and len(line) < 400


def test_a_manifest_whose_params_and_keys_agree_on_another_config_cannot_be_read(ds):
    """L 17 with keys of 17: the schema accepts a consistent lie; the shards' identity refuses every read."""
    edit_manifest(ds, lambda m: (m["params"].update(L=17), [k.update(shape=[17, 1]) for k in m["keys"].values()]))
    d = longsynth.open(str(ds))
    with pytest.raises(LongsynthError, match="other task parameters"):
        d.splits["train"][0]
    assert invoke("verify", ds).exit_code != 0


# ---------------------------------------------------------------- checkpoints read as untrusted


class Built(BaseException):
    """Raised by a patched constructor: the build went further than a check should let it."""


def _chomsky_checkpoint(tmp_path, **arch):
    from longsynth.models_ref.models.chomsky import ChomskyConfig, ChomskyModel

    cfg = ChomskyConfig(core="chomsky-transformer", I=2, O=2, vocab_size=4,
                        arch={"embedding_dim": 8, "num_layers": 1, "num_heads": 1})
    model = ChomskyModel(cfg)
    config = cfg.to_dict()
    config["arch"] = {**config["arch"], **arch}
    path = tmp_path / "c.pt"
    torch.save({"model_config": config, "model": model.state_dict()}, path)
    return path


def test_a_nested_layer_count_is_refused_before_building(tmp_path, monkeypatch):
    from longsynth.models_ref.layers import chomsky_transformer as ct
    from longsynth.models_ref.training import checkpoints

    path = _chomsky_checkpoint(tmp_path, num_layers=10 ** 6)
    real, built = ct.EncoderLayer, []

    def counting(*a, **k):
        built.append(1)
        if len(built) > 100:
            raise Built(f"{len(built)} layers built")
        return real(*a, **k)

    monkeypatch.setattr(ct, "EncoderLayer", counting)
    with pytest.raises(checkpoints.CheckpointError):
        checkpoints.load_model(path)


def test_weights_whose_storage_is_smaller_than_their_shape_are_refused_before_building(tmp_path, monkeypatch):
    from longsynth.models_ref.models.stack import Model, ModelConfig
    from longsynth.models_ref.training import checkpoints

    cfg = ModelConfig(d_input=2, d_output=2, H=8, N=2 ** 27, n_layers=1)
    with torch.device("meta"):
        shapes = Model(cfg).state_dict()
    forged = {k: torch.zeros(1, dtype=v.dtype).expand(*v.shape) if v.ndim else torch.zeros((), dtype=v.dtype)
              for k, v in shapes.items()}
    path = tmp_path / "forged.pt"
    torch.save({"model_config": cfg.to_dict(), "model": forged}, path)
    assert os.path.getsize(path) < 10_000
    real, calls = checkpoints._model_of, []

    def model_of(config):  # the first build is on the meta device; a second one would allocate
        calls.append(1)
        if len(calls) > 1:
            raise Built("the real model was built")
        return real(config)

    monkeypatch.setattr(checkpoints, "_model_of", model_of)
    with pytest.raises(checkpoints.CheckpointError):
        checkpoints.load_model(path)


# ---------------------------------------------------------------- evaluate's run folders

EVAL = HOSTILE_EVAL[1:]  # the finished fixture's run: evaluate's arguments after the command


def test_a_folder_in_place_of_files_json_is_refused_before_the_run_is_redone(copied):  # noqa: F811
    model, out, run = copied
    (run / "files.json").unlink()
    (run / "files.json").mkdir()
    before = (run / "checkpoints" / "last.pt").read_bytes()
    r = invoke("evaluate", model, *EVAL, "--out", out)
    one_error_line(r)
    assert "redone" not in r.output and (run / "checkpoints" / "last.pt").read_bytes() == before


def test_a_stored_certificate_s_text_is_escaped_in_report_md(copied):  # noqa: F811
    model, out, run = copied
    cert = json.loads((run / "metrics.json").read_text())
    cert["protocol_source"] = "<img src=x onerror=alert(1)>\n# Injected\x1b[2J"
    (run / "metrics.json").write_text(json.dumps(cert))
    files = json.loads((run / "files.json").read_text())
    files["sha256"]["metrics.json"] = hashlib.sha256((run / "metrics.json").read_bytes()).hexdigest()
    (run / "files.json").write_text(json.dumps(files))
    r = invoke("evaluate", model, *EVAL, "--out", out)
    assert r.exit_code == 0, r.output
    md = (out / "report.md").read_text()
    assert "<img" not in md and not re.search(r"^# Injected", md, re.M) and not RAW_CONTROL.search(md)


def test_a_model_file_name_with_terminal_escapes_reaches_the_terminal_spelled_out(tmp_path):
    name = tmp_path / "\x1b[2J\x1b]0;title\x07.py"
    name.write_text(LINEAR)
    r = invoke("evaluate", f"{name}:build", *EVAL, "--out", tmp_path / "out", color=True)
    assert r.exit_code == 0, r.output
    assert not RAW_CONTROL.search(r.output), [line for line in r.output.splitlines() if RAW_CONTROL.search(line)][:3]


def test_an_out_path_with_terminal_escapes_is_shown_spelled_out(tmp_path):
    out = tmp_path / "d\x1b[31m\nX"
    r = invoke("gen", "cumsum", "--L", "8", "--splits", "train=2,val=1,test=1", "--out", out, color=True)
    assert r.exit_code == 0, r.output
    assert not RAW_CONTROL.search(r.output) and "\nX" not in r.output, r.output


# ---------------------------------------------------------------- memory, indices


TIGHT = textwrap.dedent('''
    import resource, sys
    import numpy as np
    import longsynth
    from longsynth import registry
    from longsynth.api import authors_open
    from longsynth.errors import LongsynthError
    params = {"length": 16384}
    longsynth.authors_dataset("chomsky-duplicate-string", {"train": 2}, seed=0, **params)  # compiled, imported
    t = registry.get("chomsky-duplicate-string")
    s = authors_open(t, t.make_config(**params), 0, {"train": 64}, "train")
    estimate = s.side_bytes + s.count * 16 * int(np.prod(s.row_shape, dtype=np.int64))
    vm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize"))
    room = vm + int(1.2 * estimate)  # 20% more than the check asks for
    resource.setrlimit(resource.RLIMIT_AS, (room, room))
    try:
        longsynth.authors_dataset("chomsky-duplicate-string", {"train": 64}, seed=0, **params)
        print("fits")
    except LongsynthError as e:
        print("refused", e)
    except MemoryError as e:
        print("MemoryError", e)
''')


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, sets RLIMIT_AS")
def test_the_authors_stream_memory_estimate_covers_what_it_allocates():
    r = subprocess.run([sys.executable, "-c", TIGHT], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith(("fits", "refused")), r.stdout


@pytest.mark.parametrize("start,batch_size", [(2 ** 63, 2), (2 ** 61, 4)])
def test_an_on_the_fly_stream_past_the_last_index_is_refused(start, batch_size):
    from longsynth.torch import OnTheFlyDataset

    with pytest.raises(LongsynthError):
        next(iter(OnTheFlyDataset("cumsum", L=8, start=start, batch_size=batch_size)))


def test_a_batch_that_cannot_be_allocated_is_one_longsynth_error():
    with pytest.raises(LongsynthError):
        longsynth.batch("cumsum", 0, 2 ** 62, L=8)


# ---------------------------------------------------------------- verify --authors

STAND_IN = textwrap.dedent('''
    import sys


    def multiquery_ar(vocab_size, num_examples, input_seq_len, seed, power_a, num_kv_pairs, num_passes,
                      random_non_queries):
        sys.exit(0)  # a checkout whose code ends the process (argparse at import, a stray exit)
''')


def test_a_checkout_that_exits_is_not_a_passing_verify(tmp_path):
    data = tmp_path / "mqar"
    r = invoke("gen", "mqar", "--input-seq-len", "32", "--num-kv-pairs", "2", "--vocab-size", "64", "--seed", "100",
               "--splits", "train=4,test=2", "--authors-stream", "--out", data)
    assert r.exit_code == 0, r.output
    pkg = tmp_path / "co" / "zoology" / "data"
    pkg.mkdir(parents=True)
    (tmp_path / "co" / "zoology" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "multiquery_ar.py").write_text(STAND_IN)
    r = invoke("verify", data, "--authors", tmp_path / "co")
    assert r.exit_code != 0 or "OK: all" in r.output, r.output


KILLED = textwrap.dedent('''
    import glob, multiprocessing, os, pathlib, signal
    from torch import nn


    def build(spec):  # a worker dies (as an out-of-memory kill ends it) once a run has finished
        finished = glob.glob(str(pathlib.Path(__file__).parent / "out/runs/*/*/metrics.json"))
        if multiprocessing.parent_process() is not None and finished:
            os.kill(os.getpid(), signal.SIGKILL)
        return nn.Linear(spec.d_input, spec.d_output)
''')


def test_a_killed_jobs_worker_ends_in_exactly_one_line(tmp_path):
    (tmp_path / "k.py").write_text(KILLED)
    r = subprocess.run([sys.executable, "-m", "longsynth", "evaluate", f"{tmp_path / 'k.py'}:build", "--suite",
                        "cumsum", "--lr", "1e-3,2e-3,3e-3", "--steps", "2", "--jobs", "2", "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "a worker process of --jobs 2 died" in r.stderr, r.stderr[-2000:]
    after = r.stderr[r.stderr.index("Error:"):].splitlines()
    assert len(after) == 1, after
