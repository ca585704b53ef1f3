"""Shared by the model tests: one short training run three ways (plain, checkpointed blocks,
bf16 autocast on the CPU), whose loss curves must agree."""
import pytest


def check_checkpoints_and_bf16(cfg, data, steps=5):
    """Train ``cfg`` on ``data(step)`` plain, with checkpointed blocks and under bf16 autocast:
    checkpointing gives the same losses, bf16 close ones (not the same: it ran)."""
    from longsynth.models_ref.training.trainer import TrainConfig, train

    runs = {}
    for name, kw in {"plain": {}, "ckpt": {"checkpoint_activations": True}, "bf16": {"amp": True}}.items():
        hist = train(cfg, TrainConfig(steps=steps, lr=5e-3, seed=1, **kw), data)["history"]
        runs[name] = [r["loss"] for r in hist["train"]]
    assert runs["ckpt"] == pytest.approx(runs["plain"], rel=1e-5)
    assert runs["bf16"] == pytest.approx(runs["plain"], rel=0.05) and runs["bf16"] != runs["plain"]
    return runs
