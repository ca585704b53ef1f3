"""The authors' released data (synthseq/flipflop on the Hugging Face Hub) read as rows of ours,
and the language's law that ``import-hf`` and ``verify --deep`` check on every row
(docs/tasks/flipflop.md, "The Hub's data").

The Hub's files are parquet, one string column ``text``: a string is T instructions written
as two characters each, operation then bit (``w1i0r1...``, no separator), 512 characters for
T 256. Its splits are four draws of FFL(p) (data card): train and val at p 0.8, val_dense at
0.1, val_sparse at 0.98. A longsynth dataset has one configuration, so they become three
datasets: ``ffl-0.8`` (train, val), ``ffl-0.1`` (test: val_dense), ``ffl-0.98`` (test:
val_sparse).
"""
import math

import numpy as np

from longsynth.generators.flipflop.flipflop import IGNORE_OP, MAX_T, law, rows

REPO = "synthseq/flipflop"
TASK = "flipflop"
CHARS = "wri01"  # the data card's map: character k is token k (w 0, r 1, i 2, 0 3, 1 4)
COLUMN = "text"
MAX_WIDTH = 2 * MAX_T  # characters (one byte each) of the longest string a flip-flop string of T <= MAX_T is
# the Hub's split -> (our dataset folder, its p_ignore, our split)
SPLITS = {"train": ("ffl-0.8", 0.8, "train"), "val": ("ffl-0.8", 0.8, "val"),
          "val_dense": ("ffl-0.1", 0.1, "test"), "val_sparse": ("ffl-0.98", 0.98, "test")}
# a file's ignore share further than this many standard deviations from its p is not FFL(p): a file of 4,000
# strings at T 256 puts FFL(0.8) and FFL(0.98) hundreds of deviations apart; a true file passes but once in 10^9
Z_LIMIT = 6.0

_LUT = np.full(256, 255, dtype=np.uint8)
for _k, _c in enumerate(CHARS):
    _LUT[ord(_c)] = _k


def params(width, p):
    """The task's parameters of strings of ``width`` characters drawn at ``p``."""
    return {"T": width // 2, "p_ignore": p}


def convert(texts, dtype, width=None):
    """(rows {inputs, targets} in ``dtype``, tally [ignores, instructions]) of the Hub's strings ``texts``;
    ValueError(row, text) for the first string that is not a flip-flop string of ``width`` characters (the
    first string's length when None)."""
    tok = tokens(texts, width)
    bad = law(tok)
    if bad is not None:
        raise ValueError(*bad)
    return rows(tok, dtype), np.array(ignore_counts(tok), dtype=np.int64)


def file_problem(tally, p):
    """Why a file's tally [ignores, instructions] is not a draw of FFL(p), or None."""
    return frequency_problem(int(tally[0]), int(tally[1]), p)


def tokens(texts, width=None):
    """uint8 [n, 2T] of n strings of ``width`` characters (the first's when None): character k of CHARS
    is token k. ValueError(row, text) for a string of another length or another character, or strings
    of an odd length."""
    if not texts:
        return np.zeros((0, width or 0), dtype=np.uint8)
    width = len(texts[0]) if width is None and isinstance(texts[0], str) else width
    for i, s in enumerate(texts):
        if not isinstance(s, str) or len(s) != width:
            got = f"{len(s)} characters" if isinstance(s, str) else f"a {type(s).__name__}"
            raise ValueError(i, f"{got}, where the strings have {width}")
    if width < 4 or width % 2:
        raise ValueError(0, f"strings of {width} characters; a string is 2T characters, T >= 2")
    raw = np.frombuffer("".join(texts).encode("latin-1", errors="replace"), dtype=np.uint8).reshape(len(texts), width)
    tok = _LUT[raw]
    bad = np.argwhere(tok == 255)
    if len(bad):
        i, j = bad[0]
        raise ValueError(int(i), f"character {texts[i][j]!r} at {j} is none of {', '.join(CHARS)}")
    return tok


def ignore_counts(tok):
    """(ignores, instructions) among the instructions between the first and the last of token strings
    [n, 2T]: the draws that p_ignore decides."""
    middle = tok[:, 2:-2:2]
    return int((middle == IGNORE_OP).sum()), int(middle.size)


def frequency_problem(ignores, total, p):
    """Text saying why ``ignores`` of ``total`` instructions is not a draw of FFL(p), or None."""
    if total == 0 or p in (0.0, 1.0):
        return None if total == 0 or ignores == p * total else f"ignore share {ignores / total:.4f}, not {p}"
    z = (ignores - total * p) / math.sqrt(total * p * (1 - p))
    if abs(z) > Z_LIMIT:
        return (f"{ignores:,} ignores of {total:,} instructions ({ignores / total:.4f}) is {abs(z):.0f} standard "
                f"deviations from FFL({p})'s share {p}")
    return None
