"""``lra-tsv``: ListOps datasets as the tab-separated files of the LRA / DLR authors' loaders.

listops-subtrees writes ``subtrees_{train,val,test}.tsv`` with the columns Source, Target,
SubTreeEvals, SubTreeLengths, SubTreeHeights, SubTreeOps, SubTreeInds, Id; classic listops
writes ``basic_{split}.tsv`` with Source and Target (docs/tasks/listops.md, "Export").
Rows are formatted byte by byte by a Numba kernel, as Python's csv module would write them
(tab, CRLF, nothing quoted): 10x faster than the csv module, 0.2 ms per paper-setting row.
The kernels check bounds and the row buffer is sized from the row's own tokens, never from
a parameter a manifest states: a crafted sample (a token id outside the vocabulary,
unbalanced brackets, a row longer than max_length) ends the export with one line.
"""
import os

import numpy as np
from numba import njit

from longsynth import values
from longsynth.errors import LongsynthError
from longsynth.generators.listops.tree import CLOSE, VOCAB
from longsynth.files import PendingFiles


@njit(cache=True, boundscheck=True)
def subtree_starts(tokens):
    """Position of the matching operator token for every `]`, in order."""
    out = np.empty(tokens.shape[0], dtype=np.int64)
    stack = np.empty(tokens.shape[0], dtype=np.int64)
    top = 0
    n = 0
    for i in range(tokens.shape[0]):
        t = tokens[i]
        if t < CLOSE:
            stack[top] = i
            top += 1
        elif t == CLOSE:
            top -= 1
            out[n] = stack[top]
            n += 1
    return out[:n]


def _iter_split(dataset, split, keys, chunk=256):
    """Samples of one split as dicts, read in chunks (memory stays flat) and checked against
    their stored checksums: a damaged shard stops the export with DamagedDataError."""
    yield from dataset[split].iter_samples(keys, chunk)


_VOCAB_BYTES = np.zeros((len(VOCAB), 4), dtype=np.uint8)
_VOCAB_LEN = np.array([len(w) for w in VOCAB], dtype=np.int64)
for _i, _w in enumerate(VOCAB):
    _VOCAB_BYTES[_i, : len(_w)] = np.frombuffer(_w.encode(), dtype=np.uint8)
_TAB, _SPACE = 9, 32


@njit(cache=True, boundscheck=True)
def _put_int(buf, p, value):
    """Decimal digits of value >= 0 at buf[p:]; returns the next free position."""
    if value < 0:
        raise ValueError("negative value")
    v = value
    q = p
    while True:
        buf[q] = 48 + v % 10
        q += 1
        v //= 10
        if v == 0:
            break
    i, j = p, q - 1
    while i < j:
        buf[i], buf[j] = buf[j], buf[i]
        i += 1
        j -= 1
    return q


@njit(cache=True, boundscheck=True)
def _put_tokens(buf, p, ids, table, lens):
    """Token strings of ids, separated by spaces, at buf[p:]; returns the next free position."""
    q = p
    for i in range(ids.shape[0]):
        if i:
            buf[q] = _SPACE
            q += 1
        t = ids[i]
        if t < 0 or t >= lens.shape[0]:
            raise IndexError("token id outside the vocabulary")
        for c in range(lens[t]):
            buf[q] = table[t, c]
            q += 1
    return q


@njit(cache=True, boundscheck=True)
def _put_ints(buf, p, values):
    q = p
    for i in range(values.shape[0]):
        if i:
            buf[q] = _SPACE
            q += 1
        q = _put_int(buf, q, values[i])
    return q


@njit(cache=True, boundscheck=True)
def _subtrees_row(tokens, targets, heights, operators, root, row_id, table, lens, buf):
    """One subtrees_*.tsv row (no field needs quoting); returns its byte length."""
    starts = subtree_starts(tokens)
    n = starts.shape[0]
    inds = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(tokens.shape[0]):
        if tokens[i] == CLOSE:
            inds[k] = i
            k += 1
    evals = np.empty(n, dtype=np.int64)
    lengths = np.empty(n, dtype=np.int64)
    for j in range(n):
        evals[j] = targets[inds[j]]
        lengths[j] = inds[j] - starts[j] + 1
    q = _put_tokens(buf, 0, tokens, table, lens)
    buf[q] = _TAB
    q = _put_int(buf, q + 1, root)
    buf[q] = _TAB
    q = _put_ints(buf, q + 1, evals)
    buf[q] = _TAB
    q = _put_ints(buf, q + 1, lengths)
    buf[q] = _TAB
    q = _put_ints(buf, q + 1, heights.astype(np.int64))
    buf[q] = _TAB
    q = _put_tokens(buf, q + 1, operators.astype(np.int64), table, lens)
    buf[q] = _TAB
    q = _put_ints(buf, q + 1, inds)
    buf[q] = _TAB
    q = _put_int(buf, q + 1, row_id)
    buf[q] = 13
    buf[q + 1] = 10
    return q + 2


def _export(dataset, out_dir, progress, subtrees):
    """TSV rows as Python's csv module writes them (tab, CRLF, as in the authors' files),
    formatted by a Numba kernel: no field holds a tab, quote or newline, so none is quoted."""
    prefix = "subtrees" if subtrees else "basic"
    header = ["Source", "Target"]
    keys = ["inputs", "targets"]
    if subtrees:
        header += ["SubTreeEvals", "SubTreeLengths", "SubTreeHeights", "SubTreeOps", "SubTreeInds", "Id"]
        keys += ["root", "heights", "operators"]
    buf = np.empty(0, dtype=np.uint8)
    row_id = 0
    with PendingFiles(out_dir) as pending:  # a failed export leaves no partial file under a final name
        for split in ("train", "val", "test"):
            if split in dataset.splits:
                row_id = _export_split(dataset, split, pending.path(os.path.join(out_dir, f"{prefix}_{split}.tsv")),
                                       header, keys, subtrees, buf, row_id, progress)


def _export_split(dataset, split, path, header, keys, subtrees, buf, row_id, progress):
    with open(path, "wb") as fh:
        fh.write(("\t".join(header) + "\r\n").encode())
        done = 0
        specs = dataset[split].specs
        for s in _iter_split(dataset, split, keys):
            values.check(specs, s, f"{split}[{done}]", dataset.root)
            tokens = s["inputs"].astype(np.int64)
            # per token <= 5 bytes ("[MIN "); per `]` (at most n/3 + 1) <= 22 bytes over the five lists
            if buf.shape[0] < 13 * tokens.shape[0] + 128:
                buf = np.empty(13 * tokens.shape[0] + 128, dtype=np.uint8)
            try:
                n = _row(s, tokens, subtrees, row_id, buf)
            except (IndexError, ValueError, OverflowError):
                raise LongsynthError(f"{dataset.root}: {split}[{done}] is not a ListOps sample this export can write "
                                     f"(tokens outside the vocabulary or brackets that do not match); run "
                                     f"`longsynth verify --deep {dataset.root}`") from None
            fh.write(buf[:n].tobytes())
            row_id += 1
            done += 1
            if progress is not None and done % 256 == 0:
                progress(256)
        if progress is not None and done % 256:
            progress(done % 256)
    return row_id


def _row(s, tokens, subtrees, row_id, buf):
    """One row of sample ``s`` into ``buf``; its length. IndexError for a malformed sample."""
    if subtrees:
        return _subtrees_row(tokens, s["targets"], s["heights"], s["operators"], int(s["root"]), row_id,
                             _VOCAB_BYTES, _VOCAB_LEN, buf)
    n = _put_tokens(buf, 0, tokens, _VOCAB_BYTES, _VOCAB_LEN)
    buf[n] = _TAB
    n = _put_int(buf, n + 1, int(s["targets"]))
    buf[n : n + 2] = (13, 10)
    return n + 2


def write(dataset, out_dir, progress):
    """Every split of a listops-subtrees or listops dataset as TSV files in out_dir."""
    _export(dataset, out_dir, progress, dataset.task.name == "listops-subtrees")
