"""A second hostile retest: the fixes of the first retest's faults (escaping, checkpoint bounds,
on-the-fly and batch bounds, run-folder checks, verify --authors, the pydantic records, validate's memory
checks) attacked as new surfaces. Each test is a break it found, fixed since."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from longsynth import escape, fields
from longsynth.errors import LongsynthError
from test_hostile_retest import invoke, one_error_line

torch.set_num_threads(1)


LINEAR = textwrap.dedent('''
    from torch import nn


    def build(spec):
        return nn.Linear(spec.d_input, spec.d_output)
''')


# ---------------------------------------------------------------- names: escape.py and model files


def test_a_model_file_named_with_a_byte_that_is_not_utf8_is_no_traceback(tmp_path):
    path = os.fsdecode(os.path.join(os.fsencode(str(tmp_path)), b"m\xff.py"))
    with open(path, "w") as f:
        f.write(LINEAR)
    r = invoke("evaluate", path + ":build", "--suite", "cumsum", "--dry-run", "--out", tmp_path / "out")
    assert "Traceback" not in r.output and (r.exception is None or isinstance(r.exception, SystemExit)), \
        repr(r.exception)


@pytest.mark.parametrize("how", ["visible", "markdown", "drawn"])
def test_escaped_text_with_a_lone_surrogate_can_be_written_as_utf8(how):
    getattr(escape, how)("m\udcff.py").encode("utf-8")


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200b", "\ufeff"])
def test_visible_spells_out_reordering_and_invisible_characters(char):
    from longsynth.cli.common import shown

    assert char not in shown(f"a{char}b")  # the CLI's own escaping spells it out
    assert char not in escape.visible(f"a{char}b")


def test_markdown_escapes_dollar_signs():
    assert "$x^2$" not in escape.markdown("a$x^2$.py")


# ---------------------------------------------------------------- the pydantic records


def test_a_record_error_naming_a_hostile_key_is_one_line():
    from longsynth.models_ref.evaluation.files import FilesRecord

    with pytest.raises(LongsynthError) as e:
        fields.parse(FilesRecord, {"sha256": {"metrics.json": "a" * 64, "x\x1b]0;t\x07\nINJECTED": "a" * 64}},
                     "files.json", "files.json")
    assert "\n" not in str(e.value) and "\x1b" not in str(e.value), repr(str(e.value))


def _tape_rnn():
    from longsynth.models_ref.models.chomsky import ChomskyConfig, ChomskyModel

    cfg = ChomskyConfig(core="tape-rnn", I=2, O=2, vocab_size=4, arch={"H": 8, "memory_size": 8, "cell": 8,
                                                                         "mlp": (8, 8)})
    return cfg, ChomskyModel(cfg)


def test_a_tape_rnn_checkpoint_loads(tmp_path):
    from longsynth.models_ref.training.checkpoints import load_model

    cfg, model = _tape_rnn()
    torch.save({"model_config": cfg.to_dict(), "model": model.state_dict()}, tmp_path / "c.pt")
    load_model(str(tmp_path / "c.pt"))


# ---------------------------------------------------------------- checkpoints: stored numbers


def test_a_sparse_weight_is_one_checkpoint_error(tmp_path):
    from longsynth.models_ref.models.stack import Model, ModelConfig
    from longsynth.models_ref.training.checkpoints import CheckpointError, load_model

    cfg = ModelConfig(d_input=2, d_output=2, H=8, N=8, n_layers=1)
    weights = Model(cfg).state_dict()
    weights["encoder.weight"] = weights["encoder.weight"].to_sparse()
    torch.save({"model_config": cfg.to_dict(), "model": weights}, tmp_path / "c.pt")
    with pytest.raises(CheckpointError):
        load_model(str(tmp_path / "c.pt"))


# ---------------------------------------------------------------- validate's memory checks


def test_checkpoint_activations_do_not_skip_the_memory_check(tmp_path, monkeypatch):
    from longsynth import api

    monkeypatch.setattr(api, "memory_available", lambda read=None: 2 << 20)  # the data of 16 fits, its training not
    plain = invoke("validate", "cumsum", "--batch-size", "16", "--steps", "1", "--report-dir", tmp_path / "a")
    assert "--batch-size:" in one_error_line(plain) and "--checkpoint-activations" in plain.output
    r = invoke("validate", "cumsum", "--batch-size", "16", "--steps", "1", "--checkpoint-activations",
               "--report-dir", tmp_path / "b")
    assert "--batch-size:" in one_error_line(r)


# ---------------------------------------------------------------- the on-the-fly stream


def test_a_stream_state_without_a_step_is_one_line():
    from longsynth.torch import OnTheFlyDataset

    ds = OnTheFlyDataset("cumsum", L=8, batch_size=2)
    state = {**ds.state_dict(0), "step": None}
    with pytest.raises(LongsynthError):
        ds.load_state_dict(state)


# ---------------------------------------------------------------- verify --authors

EXITS = textwrap.dedent('''
    import os


    def multiquery_ar(vocab_size, num_examples, input_seq_len, seed, power_a, num_kv_pairs, num_passes,
                      random_non_queries):
        os._exit({code})  # a checkout whose code ends the process without unwinding
''')
RAISES = textwrap.dedent('''
    def multiquery_ar(vocab_size, num_examples, input_seq_len, seed, power_a, num_kv_pairs, num_passes,
                      random_non_queries):
        raise GeneratorExit("theirs")
''')


@pytest.fixture(scope="module")
def mqar(tmp_path_factory):
    data = tmp_path_factory.mktemp("mqar") / "d"
    r = invoke("gen", "mqar", "--input-seq-len", "32", "--num-kv-pairs", "2", "--vocab-size", "64", "--seed", "100",
               "--splits", "train=4,test=2", "--authors-stream", "--out", data)
    assert r.exit_code == 0, r.output
    return data


def _checkout(root, source):
    pkg = root / "zoology" / "data"
    pkg.mkdir(parents=True)
    (root / "zoology" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "multiquery_ar.py").write_text(source)
    return root


def test_a_checkout_that_ends_the_process_is_not_a_passing_verify(mqar, tmp_path):
    co = _checkout(tmp_path / "co", EXITS.format(code=0))
    r = subprocess.run([sys.executable, "-m", "longsynth", "verify", str(mqar), "--authors", str(co)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 or "OK: all" in r.stdout, r.stdout + r.stderr


def test_a_checkout_raising_another_base_exception_is_one_line(mqar, tmp_path):
    co = _checkout(tmp_path / "co", RAISES)
    one_error_line(invoke("verify", mqar, "--authors", co))
