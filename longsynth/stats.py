"""Statistics of a stored dataset's splits, streamed block by block: value moments per key,
token marginals and scored targets per row (token tasks), target class balance, and the rows'
lengths where they vary (parity, modular arithmetic). ``longsynth info`` (longsynth.store.checks)
and ``show DIR --stats`` (generators/_tokens.py) read them. NumPy only: it imports nothing of
longsynth, so any layer may use it.
"""
import numpy as np


def _ragged(col):
    """A longsynth.task.Ragged column (values and offsets), told by its fields."""
    return hasattr(col, "offsets") and hasattr(col, "values")


class _Moments:
    """min, max, mean and std of a stream of arrays (Chan et al.'s pairwise update)."""

    def __init__(self):
        self.n, self.mean, self.m2, self.lo, self.hi = 0, 0.0, 0.0, np.inf, -np.inf
        self.nonfinite = {"NaN": 0, "+inf": 0, "-inf": 0}  # counted, and left out of the moments

    def add(self, a):
        a = np.asarray(a, dtype=np.float64).ravel()
        finite = np.isfinite(a)
        if not finite.all():
            self.nonfinite["NaN"] += int(np.isnan(a).sum())
            self.nonfinite["+inf"] += int(np.isposinf(a).sum())
            self.nonfinite["-inf"] += int(np.isneginf(a).sum())
            a = a[finite]
        if not a.size:
            return
        mean = float(a.mean())
        m2 = float(((a - mean) ** 2).sum())
        n = self.n + a.size
        delta = mean - self.mean
        self.mean += delta * a.size / n
        self.m2 += m2 + delta * delta * self.n * a.size / n
        self.n = n
        self.lo, self.hi = min(self.lo, float(a.min())), max(self.hi, float(a.max()))

    def summary(self):
        if not self.n:  # every value was NaN or infinite
            out = {"min": float("nan"), "max": float("nan"), "mean": float("nan"), "std": float("nan")}
        else:
            out = {"min": self.lo, "max": self.hi, "mean": self.mean, "std": (self.m2 / self.n) ** 0.5}
        if any(self.nonfinite.values()):
            out["nonfinite"] = dict(self.nonfinite)
        return out


def row_lengths(task, cfg):
    """``lengths(targets [n, L]) -> int64 [n]`` (-1 for a row without a scored target) for the
    tasks whose rows vary in length (``task.row_length_offset``: n = the last scored index + offset,
    or the first where ``task.row_length_anchor`` is "first"), else None (every row of the others
    has one length)."""
    if task.row_length_offset is None:
        return None
    extra = int(task.row_length_offset(cfg))
    first = task.row_length_anchor == "first"

    def lengths(targets):
        t = np.asarray(targets)
        t = t.reshape(t.shape[0], -1)
        scored = t != -100
        at = (np.argmax(scored, axis=1) if first  # [n]  the first scored index
              else t.shape[1] - 1 - np.argmax(scored[:, ::-1], axis=1))  # [n]  the last scored index
        return np.where(scored.any(axis=1), at + extra, -1).astype(np.int64)

    return lengths


class SplitStatistics:
    """What ``info`` and ``show DIR --stats`` read from one split: value moments per key,
    token marginals and scored targets per row (token tasks), target class counts (integer
    targets of the other families) and row lengths (``row_lengths``)."""

    def __init__(self, ds):
        specs = ds.task.keys(ds.config)
        self.moments = {k: _Moments() for k in specs}
        target = specs.get("targets")
        self.tokens = _Tokens(ds.task.vocab_size(ds.config)) if ds.task.family == "tokens" else None
        self.counts = (np.zeros(256, dtype=np.int64) if target is not None and np.dtype(target.dtype).kind in "iub"
                       and self.tokens is None else None)
        self._lengths_of = row_lengths(ds.task, ds.config)
        self._lengths = []
        self.samples = 0

    def add(self, block):
        for k, col in block.items():
            self.moments[k].add(col.values if _ragged(col) else col)
        n = next(len(c.offsets) - 1 if _ragged(c) else c.shape[0] for c in block.values())
        self.samples += n
        if self.tokens is not None:
            self.tokens.add(block["inputs"], block["targets"])
        if self.counts is not None:
            t = block["targets"]
            v = np.asarray(t.values if _ragged(t) else t).astype(np.int64).ravel()
            v = v[(v >= 0) & (v < self.counts.size)]
            self.counts += np.bincount(v, minlength=self.counts.size)
        if self._lengths_of is not None:
            self._lengths.append(self._lengths_of(block["targets"]))
        return n

    @property
    def lengths(self):
        """int64 [rows]: the rows' lengths (rows without a scored target left out); None where undefined."""
        if self._lengths_of is None:
            return None
        v = np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype=np.int64)
        return v[v >= 0]

    def balance(self):
        if self.counts is None or not self.counts.sum():
            return None
        return {int(c): float(self.counts[c] / self.counts.sum()) for c in np.flatnonzero(self.counts)}

    def length_summary(self):
        v = self.lengths
        if v is None or not v.size:
            return None
        values, counts = np.unique(v, return_counts=True)
        return {"min": int(v.min()), "median": float(np.median(v)), "mean": float(v.mean()), "max": int(v.max()),
                "counts": {int(a): int(c) for a, c in zip(values, counts)}}


def split_statistics(ds, samples=None, progress=None):
    """{split: SplitStatistics} over every sample of each split of the open dataset ``ds``
    (or its first ``samples``), streamed block by block (each block checked); ``progress``
    follows the store's protocol."""
    take = {s: len(sp) if samples is None else min(samples, len(sp)) for s, sp in ds.splits.items()}
    if progress is not None:
        progress(None, total=sum(take.values()))
    out = {}
    for split, sp in ds.splits.items():
        st = out[split] = SplitStatistics(ds)
        for _, block in sp.iter_blocks(chunk=256, stop=take[split]):
            n = st.add(block)
            if progress is not None:
                progress(n)
    return out


class _Tokens:
    """Token marginals of ``inputs`` and of scored ``targets`` (ids outside [0, V) counted
    apart), and scored positions (targets != -100) per sample, for token tasks."""

    TOP = 8

    def __init__(self, vocab_size):
        self.V = int(vocab_size)
        self.counts = {"inputs": np.zeros(self.V, dtype=np.int64), "targets": np.zeros(self.V, dtype=np.int64)}
        self.outside = {"inputs": 0, "targets": 0}
        self.scored = []

    def add(self, inputs, targets):
        x = np.asarray(inputs).astype(np.int64)
        y = np.asarray(targets).astype(np.int64)
        keep = y != -100
        self.scored.append(keep.reshape(keep.shape[0], -1).sum(axis=1))
        for name, v in (("inputs", x.ravel()), ("targets", y[keep])):
            inside = (v >= 0) & (v < self.V)
            self.outside[name] += int(v.size - inside.sum())
            self.counts[name] += np.bincount(v[inside], minlength=self.V)

    def summary(self):
        per = np.concatenate(self.scored) if self.scored else np.zeros(0, dtype=np.int64)
        out = {"vocab_size": self.V,
               "scored_per_sample": {"min": int(per.min()) if per.size else 0, "max": int(per.max()) if per.size else 0,
                                     "mean": float(per.mean()) if per.size else 0.0, "total": int(per.sum())}}
        for name, c in self.counts.items():
            total = int(c.sum())
            top = np.argsort(-c, kind="stable")[: self.TOP]
            out[name] = {"distinct": int(np.count_nonzero(c)), "outside_vocab": self.outside[name],
                         "top": [[int(i), float(c[i] / total) if total else 0.0] for i in top if c[i]]}
        return out
