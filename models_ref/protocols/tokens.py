"""What the field's token protocols share (recall.py, state.py, mad.py).

Every token protocol trains on token ids with cross-entropy at the scored positions (the -100
ignore index elsewhere) and reports accuracy over them (``TOKENS``). The built-ins run on them
as two prenorm residual blocks (``two_blocks``), as every paper here compares; each family
gives the width and the block's changes of its papers' runs, 64 at tiny scale at most; the
protocol's width grid (zoology) replaces the width through spec.d_model.
"""
from __future__ import annotations

TOKENS = dict(objective="tokens", readout="positions", causal=True, schedule="cosine", warmup_steps=0,
              weight_decay=0.0, splits=None)

BLOCKS = {
    "attention": dict(attention_heads=4),
    "dlr": dict(N=64, glu=True),
    "s4d": dict(N=64, glu=True, dt_min=1e-3, dt_max=1e-1),
    "s6": dict(N=16, dt_min=1e-3, dt_max=1e-1),  # mamba_simple.py: d_state 16, dt in [1e-3, 1e-1]
    "gru": dict(),
    "lstm": dict(),  # torch's nn.LSTM as the block's layer (models/factories.py, Chomsky)
}


def two_blocks(protocols, shape, lrs=None):
    """ARCHITECTURES rows of each built-in of ``BLOCKS`` on each of ``protocols``: two prenorm
    blocks of the width and block changes ``shape(name, scale, model)`` gives, at the protocol's
    lr (``lrs[(name, scale, model)]`` where a paper trained a model at its own)."""
    rows = {}
    for (name, scale), row in protocols.items():
        for model, block in BLOCKS.items():
            H, change = shape(name, scale, model)
            lr = (lrs or {}).get((name, scale, model), row["lr"])
            rows[(name, scale, model)] = dict(
                arch=dict(H=H, n_layers=2, prenorm=True, **{**block, **change}), lr=lr,
                source=f"two prenorm blocks of width {H} (models_ref/protocols/tokens.py), lr {lr:g} ({row['source']})")
    return rows
