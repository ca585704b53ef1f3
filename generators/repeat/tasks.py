"""repeat-copy, repeat-prefix-ngram, repeat-suffix-ngram, repeat-duplicate-ngram: the string
tasks of Jelassi et al., "Repeat After Me" (docs/tasks/repeat.md; the kernel is ``strings.py``).

Characters are ids: the vocab_size letters 0..vocab_size-1, then ``$ | . *`` (the authors'
tokenizer). An example of n letters s:

    repeat-copy             $ s | a .        a = s, or its first length_answer letters
    repeat-prefix-ngram     $ q | s | a .    q: an n_gram of s found once in s; a: what follows it
    repeat-suffix-ngram     $ s | q a .      (the whole rest, or length_answer letters)
    repeat-duplicate-ngram  $ s' | s' .      s' = s with every copy of one n-gram of it replaced by another

The scored characters are those after the last ``|`` (suffix: after ``| q``), the ``.``
included. Worked example (repeat-suffix-ngram, vocab_size 4, n_gram 2, one test row of n 5,
context_len 16): s = b a d c a, limit 2, q = a d (start 1, found once), a = c a:

    c        $  b  a  d  c  a  |  a  d  c  a  .  *  *  *  *     ($ 4, | 5, . 6, * 7)
    inputs   4  1  0  3  2  0  5  0  3  2  0  6  7  7  7
    targets  .  .  .  .  .  .  .  .  2  0  6  .  .  .  .        (. = -100)
"""
from dataclasses import dataclass

import numpy as np

from longsynth.errors import LongsynthError
from longsynth.generators._tokens import REVISION, token_dtype
from longsynth.generators.repeat import strings as K
from longsynth.generators.repeat.authors import authors_rows
from longsynth.rng import SPLITS
from longsynth.task import KeySpec, Task, param

MAX_LEN = 1 << 16
MAX_CONTEXT = 1 << 20

CITATION = """@inproceedings{jelassi2024repeat,
  title     = {Repeat After Me: Transformers are Better than State Space Models at Copying},
  author    = {Jelassi, Samy and Brandfonbrener, David and Kakade, Sham M. and Malach, Eran},
  booktitle = {ICML},
  year      = {2024}
}"""

_V = param(26, "letters the strings are drawn from, uniformly (the authors' vocab_size; at most 26, a-z)", lo=2, hi=26)
_ANSWER = param(0, "letters of the answer: 0 the whole rest (the authors' length_answer)", lo=0, hi=MAX_LEN)
_CONTEXT = param(220, "characters of a row (the authors' context_len): train rows pack examples into it, a test "
                      "row is one example padded with '*'; inputs and targets hold context_len - 1", lo=8,
                 hi=MAX_CONTEXT)
_LENGTHS = dict(
    min_train_len=param(5, "fewest letters of a train (and val) example (the authors' min_train_len)", lo=1,
                        hi=MAX_LEN),
    max_train_len=param(20, "most letters of a train (and val) example (the authors' max_train_len)", lo=1,
                        hi=MAX_LEN),
    min_eval_len=param(10, "fewest letters of a test example (the authors' min_eval_len)", lo=1, hi=MAX_LEN),
    max_eval_len=param(20, "most letters of a test example (the authors' max_eval_len)", lo=1, hi=MAX_LEN),
)
_NGRAM = param(3, "letters of the n-gram (the authors' n_gram; their CopyDataset's default, 3)", lo=1, hi=MAX_LEN)


@dataclass(frozen=True)
class CopyConfig:
    vocab_size: int = _V
    length_answer: int = _ANSWER
    context_len: int = _CONTEXT
    min_train_len: int = _LENGTHS["min_train_len"]
    max_train_len: int = _LENGTHS["max_train_len"]
    min_eval_len: int = _LENGTHS["min_eval_len"]
    max_eval_len: int = _LENGTHS["max_eval_len"]


@dataclass(frozen=True)
class _NgramConfig(CopyConfig):
    n_gram: int = _NGRAM


@dataclass(frozen=True)
class LookupConfig(_NgramConfig):
    ambiguous_query: bool = param(False, "the authors' query: any n-gram of their list but its last, answered after "
                                         "its first occurrence, so it may occur twice (docs/tasks/repeat.md gives the "
                                         "rate); by default the query occurs once in the string")


@dataclass(frozen=True)
class DuplicateConfig(_NgramConfig):
    length_answer: int = param(0, "shortens the starts the two n-grams are drawn among, as the authors' max_limit "
                                  "(the answer is always the whole string)", lo=0, hi=MAX_LEN)
    min_train_len: int = param(10, "fewest letters of a train (and val) example: 10, the fewest where any 3-gram start "
                                   "leaves another that does not overlap it (the authors never train on this task; "
                                   "their min_eval_len is 10)", lo=1, hi=MAX_LEN)


KINDS = {"repeat-copy": K.COPY, "repeat-prefix-ngram": K.PREFIX, "repeat-suffix-ngram": K.SUFFIX,
         "repeat-duplicate-ngram": K.DUPLICATE}


def _ngram(cfg):
    return getattr(cfg, "n_gram", 0)


def _check(kind):
    def check(cfg):
        for which in ("train", "eval"):
            lo, hi = getattr(cfg, f"min_{which}_len"), getattr(cfg, f"max_{which}_len")
            if lo > hi:
                raise LongsynthError(f"min_{which}_len: {lo} exceeds max_{which}_len ({hi})")
            if kind != K.COPY:  # a query's start (two for the authors' draw and duplicate's) must fit
                starts = 2 if kind == K.DUPLICATE or cfg.ambiguous_query else 1
                if K.query_limit(lo, cfg.n_gram, cfg.length_answer) < starts:
                    need = cfg.n_gram + cfg.length_answer + 1 + starts
                    what = "two n-gram starts" if starts == 2 else "an n-gram query"
                    raise LongsynthError(f"min_{which}_len: an example of {lo} letters leaves no room for {what} "
                                         f"and its answer (n_gram {cfg.n_gram}, length_answer {cfg.length_answer}); "
                                         f"it must be at least {need}")
            longest = K.longest_example(kind, hi, _ngram(cfg), cfg.length_answer)
            if longest > cfg.context_len:
                raise LongsynthError(f"context_len: an example of max_{which}_len = {hi} letters takes up to "
                                     f"{longest} characters, more than context_len ({cfg.context_len})")
    return check


def _keys(cfg):
    dt = token_dtype(cfg.vocab_size + 4)
    T = cfg.context_len - 1
    return {"inputs": KeySpec(dt, (T,), doc="characters 0..C-2: letters, then $ | . * as vocab_size + 0..3"),
            "targets": KeySpec(dt, (T,), doc="the next character where it is scored (the answer and its '.'), "
                                             "-100 elsewhere")}


def _fill(kind):
    def fill(cfg, seed, split, start, out, fixed):
        test = split == SPLITS["test"]
        lo, hi = (cfg.min_eval_len, cfg.max_eval_len) if test else (cfg.min_train_len, cfg.max_train_len)
        count = out["inputs"].shape[0]
        failed = np.zeros(count, dtype=np.bool_)
        K.fill(seed, split, start, kind, _ngram(cfg), cfg.length_answer, cfg.vocab_size,
               bool(getattr(cfg, "ambiguous_query", False)), not test, lo, hi,
               max(cfg.max_train_len, cfg.max_eval_len), out["inputs"], out["targets"], failed)
        if failed.any():
            row = start + int(np.flatnonzero(failed)[0])
            raise LongsynthError(f"row {row}: no string of {K.MAX_TRIES} drawn had an n-gram found once (vocab_size "
                                 f"{cfg.vocab_size}, n_gram {cfg.n_gram}): raise vocab_size or n_gram")
    return fill


def _vocab(cfg):
    return [chr(ord("a") + i) for i in range(cfg.vocab_size)] + ["$", "|", ".", "*"]


def _task(name, config, summary, card):
    kind = KINDS[name]
    return Task(name=name, config=config, summary=summary, keys=_keys, fill=_fill(kind), check=_check(kind),
                family="tokens", revision=REVISION, vocab_size=lambda cfg: cfg.vocab_size + 4, vocab=_vocab,
                authors=authors_rows(kind), citation=CITATION, card=card + _CARD)


_CARD = (" Train and val rows pack examples of min_train_len..max_train_len letters into context_len characters (the "
         "last cut and unscored); a test row is one example of min_eval_len..max_eval_len letters padded with '*'. "
         "inputs are characters 0..C-2, targets the next character where scored. Jelassi et al., Repeat After Me "
         "(ICML 2024), sjelassi/transformers_ssm_copy synthetic_exps/data_utils.py.")

TASKS = [
    _task("repeat-copy", CopyConfig, "Repeat After Me's copy: $ s | s . (the answer scored)",
          "An example is $ s | a . with s uniform letters and a = s (or its first length_answer letters)."),
    _task("repeat-prefix-ngram", LookupConfig, "Repeat After Me's prefix-key n-gram lookup: $ q | s | a .",
          "An example is $ q | s | a . : q an n_gram of s found once in s, a the letters after it."),
    _task("repeat-suffix-ngram", LookupConfig, "Repeat After Me's suffix-key n-gram lookup: $ s | q a .",
          "An example is $ s | q a . : q an n_gram of s found once in s, a the letters after it."),
    _task("repeat-duplicate-ngram", DuplicateConfig,
          "Repeat After Me's duplicate n-gram copy: copy a string where one n-gram replaced another",
          "An example is $ s' | s' . : s' is s with every occurrence of one of its n-grams replaced by another of "
          "its n-grams."),
]
