"""PNG preview shared by the atomic tasks: input and target channels of a few samples."""
from longsynth.plot import lines


def preview(samples, cfg, path):
    """Stacked line panels: per sample, its input channels, then its target channels.

    Inputs with one or two channels get one panel per channel; wider inputs (mips:
    q, k, v) get one panel with all channels. Returns ``path``.
    """
    panels = []
    for n, s in enumerate(samples):
        x, y = s["inputs"], s["targets"]
        extra = ", ".join(f"{k}={s[k].tolist()}" for k in sorted(s) if k not in ("inputs", "targets") and s[k].ndim == 0)
        tag = f"sample {n}" + (f" ({extra})" if extra else "")
        if x.shape[1] <= 2:
            for c in range(x.shape[1]):
                panels.append((f"{tag}: input channel {c} [{x.shape[0]}]", x[:, c]))
        else:
            panels.append((f"{tag}: inputs [{x.shape[0]} x {x.shape[1]}]", x))
        panels.append((f"{tag}: targets [{y.shape[0]} x {y.shape[1]}]", y))
    lines(panels, path, title=f"{type(cfg).__name__.removesuffix('Config')} {cfg}")
    return path
