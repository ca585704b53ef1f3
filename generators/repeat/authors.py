"""The authors' rows of the four string tasks: sjelassi/transformers_ssm_copy @ 1188c47,
``synthetic_exps/data_utils.py``, replayed draw for draw (docs/tasks/repeat.md, "The authors'
rows").

``authors_stream("repeat-...", n, seed=s, split="train")`` is what ``CopyDataset`` returns, batch
after batch, after ``np.random.seed(s); random.seed(s)`` (their ``main.py`` never seeds: s is
declared); ``split="test"`` what ``EvalCopyDataset`` returns, with min_length = min_eval_len and
max_length = max_eval_len. A row is theirs (input_ids [C] and mask [C]) laid out as ours:
inputs = input_ids[:-1], targets = input_ids[1:] where mask[1:] is 1, -100 elsewhere, the loss
their train_utils computes. The batch size does not change the rows: every row is drawn in turn
from the two global generators.

The draws, as their code makes them: a string of n letters is ``np.random.choice(letters, n)``
(n ``randint(0, vocab_size)``); an example's n is ``np.random.randint(lo, hi + 1)``; a lookup's
string is redrawn until one of its n-grams (starts 0 .. max_limit - 1) is alone in that list (the
10th string is refused even so: their counter raises after its check), and its query is
``list_ngrams[np.random.randint(0, len - 1)]``, answered after the query's first occurrence;
duplicate's two n-grams are ``random.sample(list_ngrams, 2)`` (Python's ``random``), then
``str.replace``. Their refusals before any draw are ours (min_train_len must pass n_gram +
length_answer; context_len twice the longest example's letters), and their failures are refused
in one line with the row: no unique n-gram in 10 strings, ``randint(0, 0)`` where the list holds
one n-gram (an example of n_gram + length_answer + 2 letters), and training on duplicate n-gram
(their CopyDataset has no mask for it).
"""
import string

import numpy as np

from longsynth.errors import LongsynthError
from longsynth.generators._authors import Authors, Stream, block_rows
from longsynth.generators.chomsky.mt19937 import np_randint, np_randint_fill, numpy_state, py_randbelow, python_state
from longsynth.generators.repeat.strings import COPY, DUPLICATE, PREFIX, SUFFIX, markers
TRIES = 10  # their generate_str_unique_ngram's counter_max_ngram


class _Draws:
    """NumPy's and Python's global generators after ``np.random.seed(seed); random.seed(seed)``."""

    def __init__(self, seed):
        self.np, self.py = numpy_state(seed), python_state(seed)

    def randint(self, low, high):
        if high <= low:
            raise LongsynthError(f"the authors' code fails here: np.random.randint({low}, {high}) (high <= low)")
        return int(np_randint(self.np, low, high))

    def letters(self, n, vocab_size):
        out = np.empty(n, dtype=np.int64)
        np_randint_fill(self.np, 0, vocab_size, out)
        return "".join(string.ascii_lowercase[i] for i in out)

    def sample2(self, population):
        """``random.sample(population, 2)`` (CPython 3.11's: a pool for populations of at most 21,
        else a set of drawn indices)."""
        n = len(population)
        if n < 2:
            raise LongsynthError(f"the authors' code fails here: random.sample of 2 from {n} n-gram(s)")
        if n <= 21:
            pool = list(population)
            out = []
            for i in range(2):
                j = int(py_randbelow(self.py, n - i))
                out.append(pool[j])
                pool[j] = pool[n - i - 1]
            return out
        chosen, out = set(), []
        for _ in range(2):
            j = int(py_randbelow(self.py, n))
            while j in chosen:
                j = int(py_randbelow(self.py, n))
            chosen.add(j)
            out.append(population[j])
        return out


def _unique_ngram_string(d, n, g, la, vs):
    """Their ``generate_str_unique_ngram``: (string, its list of n-grams)."""
    for attempt in range(TRIES):
        s = d.letters(n, vs)
        limit = n - g - la - 1 if la > 0 else n - g - 1
        grams = [s[i : i + g] for i in range(limit)]
        if attempt == TRIES - 1:  # their counter reaches its maximum here and raises, found or not
            break
        if any(grams.count(x) == 1 for x in grams):
            return s, grams
    raise LongsynthError(f"the authors' code fails here: no unique {g}-gram in {TRIES} strings of length {n} "
                         f"(their ValueError)")


def _example(d, kind, n, g, la, vs):
    """Their ``sample_str``: the example string."""
    if kind == COPY:
        s = d.letters(n, vs)
        return f"${s}|{s[:la] if la > 0 else s}."
    s, grams = _unique_ngram_string(d, n, g, la, vs)
    if kind == DUPLICATE:
        new, old = d.sample2(grams)
        s = s.replace(old, new)
        return f"${s}|{s}."
    q = grams[d.randint(0, len(grams) - 1)]
    rest = s[s.index(q) + len(q):]
    answer = rest[:la] if la > 0 else rest
    return f"${q}|{s}|{answer}." if kind == PREFIX else f"${s}|{q}{answer}."


def _scored_from(kind, n, g):
    """Where their mask's ones start in an example of n letters."""
    return {COPY: n + 2, DUPLICATE: n + 2, PREFIX: n + g + 3, SUFFIX: n + g + 2}[kind]


def _ids(vocab_size):
    """Their tokenizer's map: the letters, then $ | . * (``strings.markers``)."""
    ids = {c: i for i, c in enumerate(string.ascii_lowercase[:vocab_size])}
    ids.update(zip("$|.*", markers(vocab_size)))
    return ids


def _row(d, kind, cfg, test, ids):
    """(ids [C], mask [C]) of one row of their CopyDataset (train) or EvalCopyDataset (test); ``ids``: ``_ids``."""
    vs, C = cfg.vocab_size, cfg.context_len
    g, la = getattr(cfg, "n_gram", 0), cfg.length_answer
    if test:
        n = d.randint(cfg.min_eval_len, cfg.max_eval_len + 1)
        text = _example(d, kind, n, g, la, vs)
        mask = [0] * _scored_from(kind, n, g) + [1] * (len(text) - _scored_from(kind, n, g))
        text, mask = text + "*" * (C - len(text)), mask + [0] * (C - len(text))
    else:
        text, mask = "", []
        while len(text) < C:
            n = d.randint(cfg.min_train_len, cfg.max_train_len + 1)
            example = _example(d, kind, n, g, la, vs)
            if len(text) + len(example) > C:
                mask += [0] * (C - len(text))
                text += example[: C - len(text)]
                break
            text += example
            mask += [0] * _scored_from(kind, n, g) + [1] * (len(example) - _scored_from(kind, n, g))
    return np.array([ids[c] for c in text], dtype=np.int64), np.array(mask, dtype=bool)


def _blocks(kind, cfg, count, seed, split, block):
    d, ids = _Draws(seed), _ids(cfg.vocab_size)
    for lo in range(0, count, block):
        m = min(block, count - lo)
        inputs = np.empty((m, cfg.context_len - 1), dtype=np.int64)
        targets = np.empty_like(inputs)
        for r in range(m):
            try:
                row, mask = _row(d, kind, cfg, split == "test", ids)
            except LongsynthError as e:
                raise LongsynthError(f"{e} (row {lo + r} of the {split} stream)") from None
            inputs[r] = row[:-1]
            targets[r] = np.where(mask[1:], row[1:], -100)
        yield {"inputs": inputs, "targets": targets}


def _their_checks(cfg, split):
    """The refusal their CopyDataset makes before any draw (copy's n_gram is their command line's 0).
    Their other, context_len above twice the longest example's letters, is within our config's check
    (a test example of n letters takes 2n + 3 characters and more)."""
    need = getattr(cfg, "n_gram", 0) + cfg.length_answer
    if split == "train" and cfg.min_train_len <= need:
        raise LongsynthError(f"min_train_len: their CopyDataset refuses {cfg.min_train_len}, not above n_gram + "
                             f"length_answer ({need})")


def authors_rows(kind):
    """The task's ``Authors``: ``open(cfg, count, seed, split)`` checks the split and the seed, and
    returns the rows as a Stream (nothing is carried from row to row but the two generators)."""
    def open_(cfg, count, seed, split):
        if split == "val":
            raise LongsynthError("split: the authors make train rows (CopyDataset) and test rows (EvalCopyDataset), "
                                 "no val: name the splits (--splits train=10000,test=1000)")
        if kind == DUPLICATE and split == "train":
            raise LongsynthError("split: the authors never train on duplicate n-gram (their CopyDataset has no mask "
                                 "for it): its authors' rows are the test split's (--splits test=1000)")
        if not 0 <= int(seed) < 2**32:
            raise LongsynthError(f"seed: np.random.seed takes [0, 2^32), got {seed}")
        _their_checks(cfg, split)
        T = cfg.context_len - 1
        return Stream(count, _blocks(kind, cfg, count, seed, split, block_rows((T,))), (T,))
    return Authors(open_, splits=("test",) if kind == DUPLICATE else ("train", "test"))
