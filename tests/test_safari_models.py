"""safari-s4d, h3 and safari-attention (models_ref/models/safari_s4d.py, zoology_mixers.py H3, zoology.py with
``state_mixer="mlp"``): H3 Table 1's models as HazyResearch/safari @ 02220c6 builds them (SimpleLMHeadModel of
src/models/sequence/simple_lm.py with the layer s4d.py S4D, h3.py H3, or its attention).

Their own models' logits from tests/data/safari_models.npz (bench/safari_models.py ran their code at the
h3-induction paper presets: d_model 32, 2 layers, d_inner 128, d_state 64, head_dim 1, ssm lr 5e-4; no checkout
needed), and their ``_optim`` marks (the SSM parameters' own lr, no weight decay) against ours."""
import json
import os

import numpy as np
import pytest
import torch  # a test dependency: its absence must fail, not skip

from longsynth.models_ref.models.zoology import ZoologyAttention, ZoologyConfig
from longsynth.models_ref.protocols.registry import architecture

torch.set_num_threads(1)
FIXTURE = os.path.join(os.path.dirname(__file__), "data", "safari_models.npz")  # safari @ 02220c6
OURS = {"s4d": "safari-s4d", "h3": "h3", "attention": "safari-attention"}  # their model: our preset
# their parameter counts at the experiment configs' settings (the tied lm_head once), from bench/safari_models.py
COUNTS = {"s4d": 24_128, "h3": 46_784, "attention": 27_136}
SOURCES = ("src/models/sequence/simple_lm.py", "src/models/sequence/h3.py", "src/models/sequence/ssm/s4d.py",
           "src/models/sequence/ssm/ss_kernel.py", "src/models/sequence/ssm/ss_kernel_diag.py",
           "src/models/sequence/ssm/ss_kernel_shift.py", "src/models/sequence/ssm/dplr.py",
           "src/models/sequence/ssm/hippo.py", "src/ops/vandermonde.py", "src/ops/krylov.py", "src/ops/toeplitz.py",
           "src/utils/__init__.py", "src/utils/config.py", "src/utils/train.py", "src/utils/registry.py")


def _arch(kind):
    return architecture("h3-induction", "paper", OURS[kind])["arch"]


def _loaded(kind):
    """Ours at the preset with their weights of the fixture (float16's grid: exact), float64, eval mode."""
    f = np.load(FIXTURE)
    assert json.loads(str(f[f"{kind}/arch"])) == dict(_arch(kind))  # the fixture ran at the preset itself
    sd = {k[len(f"{kind}/sd/"):]: torch.from_numpy(f[k].astype(np.float64))
          for k in f.files if k.startswith(f"{kind}/sd/")}
    m = ZoologyAttention(ZoologyConfig(vocab_size=20, **_arch(kind))).double().eval()
    m.load_state_dict(sd, strict=True)  # every tensor of theirs, by bench/safari_models.py's name map
    return m, f


@pytest.mark.parametrize("kind", ["s4d", "h3", "attention"])
def test_their_logits_in_float64(kind, monkeypatch):
    """Their eval-mode logits with their casts to float32 (their S4DKernel and SSKernelShift return ``k.float()``)
    made the identity on float64 tensors (``y_uncast``): the same numbers as ours in float64."""
    m, f = _loaded(kind)
    x, want = torch.from_numpy(f[f"{kind}/x"]), torch.from_numpy(f[f"{kind}/y_uncast"])
    cast = torch.Tensor.float
    monkeypatch.setattr(torch.Tensor, "float", lambda self, *a, **k: self if self.dtype == torch.float64
                        else cast(self, *a, **k))
    with torch.no_grad():
        got = m(x)
    assert got.shape == want.shape == (2, 31, 20)
    assert torch.allclose(got, want, rtol=0, atol=1e-12), float((got - want).abs().max())


@pytest.mark.parametrize("kind", ["s4d", "h3", "attention"])
def test_their_logits_as_their_code_runs(kind):
    """Their logits as their code gives them in float64 (the kernels rounded to float32, above): ours within
    float32's rounding of those terms (bench: 4.8e-8 s4d, 1.0e-7 h3 on logits up to 2.4; attention exact)."""
    m, f = _loaded(kind)
    x, want = torch.from_numpy(f[f"{kind}/x"]), torch.from_numpy(f[f"{kind}/y"])
    with torch.no_grad():
        got = m(x)
    atol = 1e-12 if kind == "attention" else 1e-6
    assert torch.allclose(got, want, rtol=0, atol=atol), float((got - want).abs().max())


@pytest.mark.parametrize("kind", ["s4d", "h3", "attention"])
def test_optim_marks_are_theirs(kind):
    """Their ``_optim`` dicts (s4d.py SSKernelDiag.register: log_dt, log_w_real, w_imag; train.py OptimModule:
    H3's shift B and diagonal log_dt, B, inv_A_real, A_imag; {"lr": 5e-4, "weight_decay": 0.0}) on the same
    parameters of ours, with the same values; none for attention."""
    m, f = _loaded(kind)
    theirs = json.loads(str(f[f"{kind}/optim_theirs"]))
    ours = {n: dict(p._optim) for n, p in m.named_parameters() if hasattr(p, "_optim")}
    assert ours == theirs
    assert len(ours) == {"s4d": 6, "h3": 10, "attention": 0}[kind]
    assert all(v == {"lr": 5e-4, "weight_decay": 0.0} for v in ours.values())


@pytest.mark.parametrize("kind", ["s4d", "h3", "attention"])
def test_parameter_counts_are_theirs(kind):
    m = ZoologyAttention(ZoologyConfig(vocab_size=20, **_arch(kind)))
    assert sum(p.numel() for p in m.parameters()) == COUNTS[kind]


def test_fixture_records_their_sources():
    f = np.load(FIXTURE)
    for src in SOURCES:
        digest = str(f[f"sha256/{src}"])
        assert len(digest) == 64 and int(digest, 16) >= 0
