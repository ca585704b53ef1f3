"""Twin of the flip-flop language (docs/tasks/flipflop.md), written from the page's definition."""
import numpy as np

from .core import SPLITS, Stream, _token_dtype


def flipflop(seed, split, index, T=256, p_ignore=0.8):
    """One string of FFL(T, p_ignore) laid out as docs/tasks/flipflop.md says."""
    st = Stream(seed, SPLITS[split], index)
    tokens, scored, written = [], [], None
    for t in range(T):
        if t == 0:
            op = "w"
        elif t == T - 1:
            op = "r"
        else:
            u = st.uniform()
            op = "i" if u < p_ignore else "w" if u < p_ignore + (1 - p_ignore) / 2 else "r"
        bit = written if op == "r" else st.below(2)
        if op == "w":
            written = bit
        tokens += [{"w": 0, "r": 1, "i": 2}[op], 3 + bit]
        scored += [False, op == "r"]
    tokens = np.array(tokens)
    dtype = _token_dtype(5)
    targets = np.where(np.array(scored[1:]), tokens[1:], -100)
    return {"inputs": tokens[:-1].astype(dtype), "targets": targets.astype(dtype)}
