"""PNG preview shared by the atomic tasks: input and target channels of a few samples."""
from longsynth.plot import lines


def preview(samples, cfg, path):
    """Stacked line panels: per sample, its input channels, then its target channels.

    Inputs with one or two channels get one panel per channel; wider inputs (mips'
    rows (q_i, k_i, v_i)) get one panel per third. Returns None (nothing to summarise:
    the CLI reports the file it wrote).
    """
    panels = []
    for n, s in enumerate(samples):
        x, y = s["inputs"], s["targets"]
        extra = ", ".join(f"{k}={s[k].tolist()}" for k in sorted(s)
                          if k not in ("inputs", "targets") and s[k].ndim == 0)
        tag = f"sample {n}" + (f" ({extra})" if extra else "")
        if x.shape[1] <= 2:
            for c in range(x.shape[1]):
                panels.append((f"{tag}: input channel {c} [{x.shape[0]}]", x[:, c]))
        else:
            d = x.shape[1] // 3
            for c, part in enumerate("qkv"):
                panels.append((f"{tag}: inputs, {part} [{x.shape[0]} x {d}]", x[:, c * d : (c + 1) * d]))
        panels.append((f"{tag}: targets [{y.shape[0]} x {y.shape[1]}]", y))
    import dataclasses

    params = ", ".join(f"{k} = {v}" for k, v in dataclasses.asdict(cfg).items())
    count = f"{len(samples)} sample{'s' if len(samples) != 1 else ''}"
    lines(panels, path, title=f"{count} at {params}: inputs, then targets (x: position in the sequence)")
