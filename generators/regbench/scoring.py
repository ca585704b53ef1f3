"""RegBench's score and its no-training control (docs/tasks/regbench.md, "DFA accuracy" and "The n-gram
control").

- ``dfa_accuracy``: the authors' metric (seq_icl's ``train.py`` ``_get_dfa_accuracy``): at each scored
  position (a target that is not ``|``), a prediction counts when it is a letter the row's DFA allows
  next, from the state its current string has reached; ``|`` or ``.`` never counts.
- ``ngram_predictions``: the in-context n-gram predictor of their ``ngram.py`` (order 3, Katz-style
  backoff, no smoothing), counted on the row's own text before each position: what a model that learnt
  nothing but counting can score.
"""
import numpy as np
from numba import njit


@njit(cache=True)
def _dfa_row(inp, tgt, table, pred, sep):
    """(correct, scored) of one row: inp, tgt, pred [T], table [states, letters]."""
    q, correct, scored = 0, 0, 0
    for i in range(inp.shape[0]):
        t = inp[i]
        if t == sep:
            q = 0
        elif t > 0 and q >= 0:
            q = table[q, t - 1]  # -1: a letter the DFA has no edge for (a row and a DFA that do not belong)
        if tgt[i] < 0:
            continue
        scored += 1
        p = pred[i]
        if q >= 0 and 0 < p < sep and table[q, p - 1] >= 0:
            correct += 1
    return correct, scored


@njit(cache=True)
def _dfa_rows(inputs, targets, tables, preds, sep, out):
    for b in range(inputs.shape[0]):
        c, n = _dfa_row(inputs[b], targets[b], tables[b], preds[b], sep)
        out[b, 0] = c
        out[b, 1] = n


def dfa_accuracy(inputs, targets, dfa, predictions):
    """int64 [rows, 2]: (correct, scored) of each row, for rows ``inputs``, ``targets`` [B, T] (a batch of
    regbench), their ``dfa`` tables [B, states, letters] and a model's ``predictions`` [B, T] (the token it
    gives the highest score at each position)."""
    inputs, targets, predictions = (np.ascontiguousarray(a, dtype=np.int64) for a in (inputs, targets, predictions))
    tables = np.ascontiguousarray(dfa, dtype=np.int64)
    out = np.zeros((inputs.shape[0], 2), dtype=np.int64)
    _dfa_rows(inputs, targets, tables, predictions, tables.shape[2] + 1, out)
    return out


@njit(cache=True)
def _backoff(p_low, p_high, seen_high, vocab, L):
    """p_high over the letters of ``vocab``: the seen ones keep their conditional probability, the unseen share
    what is left (beta) in proportion to p_low."""
    beta, rest = 1.0, 0.0
    for c in range(L):
        if vocab[c]:
            if seen_high[c]:
                beta -= p_high[c]
            else:
                rest += p_low[c]
    for c in range(L):
        if vocab[c] and not seen_high[c]:
            p_high[c] = beta * p_low[c] / rest if rest > 0 else 0.0


@njit(cache=True)
def _ngram_row(inp, sep, L, pred):
    """pred[i] <- the order-3 prediction after inputs 0..i (a letter token), for a row's inputs [T]."""
    pad = L
    c1 = np.zeros(L + 1)
    c2 = np.zeros((L + 1, L + 1))
    c3 = np.zeros((L + 1, L + 1, L + 1))
    vocab = np.zeros(L, dtype=np.bool_)
    p1, p2, p3 = np.zeros(L), np.zeros(L), np.zeros(L)
    s2, s3 = np.zeros(L, dtype=np.bool_), np.zeros(L, dtype=np.bool_)
    total = 0.0
    a, b = pad, pad  # the context: the current text's last two symbols, padded
    c1[pad] += 2.0  # the first text: its two pads and their pair
    c2[pad, pad] += 1.0
    total += 2.0
    for i in range(inp.shape[0]):
        t = inp[i]
        if t == 0:
            pred[i] = 0
            continue
        if t == sep:
            c1[pad] += 2.0
            c2[pad, pad] += 1.0
            total += 2.0
            a, b = pad, pad
        else:
            x = t - 1
            c1[x] += 1.0
            total += 1.0
            c2[b, x] += 1.0
            c3[a, b, x] += 1.0
            vocab[x] = True
            a, b = b, x
        for c in range(L):
            p1[c] = c1[c] / total
            s2[c] = c2[b, c] > 0
            p2[c] = c2[b, c] / c1[b] if s2[c] else 0.0
            s3[c] = c3[a, b, c] > 0
            p3[c] = c3[a, b, c] / c2[a, b] if s3[c] else 0.0
        _backoff(p1, p2, s2, vocab, L)
        _backoff(p2, p3, s3, vocab, L)
        best, arg = -1.0, -1
        for c in range(L):
            if vocab[c] and p3[c] > best:
                best, arg = p3[c], c
        pred[i] = 1 + arg


@njit(cache=True)
def _ngram_rows(inputs, sep, L, out):
    for r in range(inputs.shape[0]):
        _ngram_row(inputs[r], sep, L, out[r])


def ngram_predictions(inputs, vocab_size):
    """int64 [B, T]: the in-context order-3 n-gram's prediction at each input position of rows ``inputs`` [B, T]
    (regbench tokens of ``vocab_size``), 0 at the padding."""
    inputs = np.ascontiguousarray(inputs, dtype=np.int64)
    out = np.zeros(inputs.shape, dtype=np.int64)
    _ngram_rows(inputs, vocab_size - 1, vocab_size - 2, out)
    return out


@njit(cache=True)
def _allowed_row(inp, table, sep, out):
    q = 0
    for i in range(inp.shape[0]):
        t = inp[i]
        if t == sep:
            q = 0
        elif t > 0 and q >= 0:
            q = table[q, t - 1]
        mask = 0
        if q >= 0:
            for a in range(table.shape[1]):
                if table[q, a] >= 0:
                    mask |= 1 << a
        out[i] = mask


@njit(cache=True)
def _allowed_rows(inputs, tables, sep, out):
    for b in range(inputs.shape[0]):
        _allowed_row(inputs[b], tables[b], sep, out[b])


def allowed_letters(inputs, dfa):
    """int64 [B, T]: at each input position, the letters the row's DFA allows next as a bit mask (bit a: letter
    token a + 1), from the state the current string has reached: what ``dfa_accuracy`` asks of a prediction,
    for a harness that scores predictions as they come (models_ref/training/eval_pass.py)."""
    inputs = np.ascontiguousarray(inputs, dtype=np.int64)
    tables = np.ascontiguousarray(dfa, dtype=np.int64)
    out = np.zeros(inputs.shape, dtype=np.int64)
    _allowed_rows(inputs, tables, tables.shape[2] + 1, out)
    return out
