"""Twins of "Repeat After Me"'s string tasks (docs/tasks/repeat.md), written from the page's
definition and draw order with Python strings and lists."""
import numpy as np

from .core import SPLITS, Stream, _token_dtype


def _limit(n, n_gram, length_answer):
    return n - n_gram - (length_answer if length_answer > 0 else 0) - 1


def _example(st, task, n, vocab_size, n_gram, length_answer, ambiguous):
    """(example as a list of ids, where its scored part starts)."""
    dollar, bar, dot = vocab_size, vocab_size + 1, vocab_size + 2
    limit = _limit(n, n_gram, length_answer)
    if task in ("prefix", "suffix"):
        for _ in range(1000):
            s = [st.below(vocab_size) for _ in range(n)]
            windows = [tuple(s[i : i + n_gram]) for i in range(n - n_gram + 1)]
            among = windows[:limit] if ambiguous else windows
            once = [i for i in range(limit) if among.count(windows[i]) == 1]
            if once:
                break
        else:
            raise ValueError("no query")
        if ambiguous:
            j = st.below(limit - 1)
            i = windows.index(windows[j])
        else:
            i = once[st.below(len(once))]
        q = s[i : i + n_gram]
        rest = s[i + n_gram :]
        a = rest[:length_answer] if length_answer > 0 else rest
        if task == "prefix":
            return [dollar] + q + [bar] + s + [bar] + a + [dot], n + n_gram + 3
        return [dollar] + s + [bar] + q + a + [dot], n + n_gram + 2
    s = [st.below(vocab_size) for _ in range(n)]
    if task == "copy":
        a = s[:length_answer] if length_answer > 0 else s
        return [dollar] + s + [bar] + a + [dot], n + 2
    i = st.below(limit)
    apart = [t for t in range(limit) if abs(t - i) >= n_gram] or [t for t in range(limit) if t != i]
    j = apart[st.below(len(apart))]
    letters = "".join(chr(ord("a") + x) for x in s)
    new, old = letters[i : i + n_gram], letters[j : j + n_gram]
    s2 = [ord(ch) - ord("a") for ch in letters.replace(old, new)]
    return [dollar] + s2 + [bar] + s2 + [dot], n + 2


def repeat(task, seed, split, index, vocab_size=26, n_gram=3, length_answer=0, context_len=220, min_train_len=5,
           max_train_len=20, min_eval_len=10, max_eval_len=20, ambiguous_query=False):
    """One row of repeat-<task> (task: copy, prefix, suffix, duplicate) as docs/tasks/repeat.md defines it."""
    st = Stream(seed, SPLITS[split], index)
    C = context_len
    test = split == "test"
    lo, hi = (min_eval_len, max_eval_len) if test else (min_train_len, max_train_len)
    c, mask = [], []
    while len(c) < C:
        n = lo + st.below(hi - lo + 1)
        ex, start = _example(st, task, n, vocab_size, n_gram, length_answer, ambiguous_query)
        if len(c) + len(ex) > C:
            mask += [0] * (C - len(c))
            c += ex[: C - len(c)]
            break
        c += ex
        mask += [0] * start + [1] * (len(ex) - start)
        if test:
            mask += [0] * (C - len(c))
            c += [vocab_size + 3] * (C - len(c))
    c, mask = np.array(c), np.array(mask, dtype=bool)
    dtype = _token_dtype(vocab_size + 4)
    return {"inputs": c[:-1].astype(dtype), "targets": np.where(mask[1:], c[1:], -100).astype(dtype)}
