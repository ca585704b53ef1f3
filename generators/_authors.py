"""The authors' streams, made block by block (docs/adding-a-task.md, "The authors' stream").

An authors' generator is sequential: row i depends on every draw before it, and some draw a
pass over every row before the next (zoology draws all rows' keys, then all rows' values,
then the query slots). A task registers ``Authors(open)``, where ``open(cfg, count, seed,
split)`` validates its arguments at once (a refusal is one LongsynthError line, before any
draw) and returns a ``Stream``: the same rows, made on demand in blocks, keeping only what
the draws carry from row to row (``side_bytes``: mqar's keys and values of every row,
O(count x kv), never O(count x L)). Called, an ``Authors`` returns the whole split, as the
authors' function does. ``gen --authors-stream`` advances one Stream across a split's shards
(longsynth.api.authors_block), so its memory does not grow with the split.
"""
import numpy as np

BLOCK_BYTES = 4 << 20  # int64 bytes of the inputs and targets of one block a stream makes at a time
KEYS = ("inputs", "targets")


def block_rows(row_shape):
    """Rows per block of a stream whose rows have ``row_shape`` (inputs and targets, int64)."""
    return max(1, BLOCK_BYTES // (2 * 8 * max(1, int(np.prod(row_shape, dtype=np.int64)))))


class Stream:
    """``count`` rows of an authors' stream, made in order: ``blocks`` is an iterator of
    {"inputs", "targets"} blocks (int64 [m, *row_shape], m >= 1) whose concatenation is the
    split, and of the keys of ``extra`` ({key: row shape}: RegBench's DFA tables) beside them;
    nothing is drawn before the first ``take`` or ``skip``. ``side_bytes``: about the
    most bytes the stream keeps besides its current block, ``side_doc`` what they hold;
    ``block_bytes``: its block's bytes where one block is more than a small one (BLOCK_BYTES): a
    stream drawn whole, as a Chomsky call is, holds every row at once while a writer takes them
    shard by shard. Once every row is handed out the blocks' state (and so the side arrays) is
    released."""

    def __init__(self, count, blocks, row_shape, side_bytes=0, side_doc="", extra=None, block_bytes=0):
        self.count, self.row_shape, self.side_bytes = int(count), tuple(row_shape), int(side_bytes)
        self.block_bytes = int(block_bytes)
        self.shapes = {**{k: self.row_shape for k in KEYS}, **{k: tuple(v) for k, v in (extra or {}).items()}}
        self.side_doc = side_doc
        self.position = 0  # rows handed out (taken or skipped) so far
        self._blocks = blocks if self.count else None
        self._block, self._at = None, 0  # the current block and the rows of it handed out

    def _next_block(self):
        if self._blocks is None:
            raise ValueError("the stream failed earlier; open it again")
        try:
            self._block, self._at = next(self._blocks), 0
        except BaseException:
            self._blocks = self._block = None  # a generator that raised is finished: never read it again
            raise
        return self._block["inputs"].shape[0]

    def _advance(self, n, out):
        if not 0 <= n <= self.count - self.position:
            raise ValueError(f"{n} rows asked at row {self.position} of a stream of {self.count}")
        done = 0
        while done < n:
            have = self._block["inputs"].shape[0] - self._at if self._block is not None else 0
            if have == 0:
                have = self._next_block()
            m = min(have, n - done)
            if out is not None:
                for k in self.shapes:
                    out[k][done : done + m] = self._block[k][self._at : self._at + m]
            self._at += m
            done += m
        self.position += n
        if self.position == self.count:  # the generator's frame holds the side arrays: let them go
            self._blocks = self._block = None
        return out

    def take(self, n, dtypes=None):
        """The next ``n`` rows: {key: C array [n, *shape]} ("inputs", "targets" and the extra keys), int64 or of
        ``dtypes`` ({key: dtype}: each block cast as it is copied, as ``astype`` casts)."""
        dtypes = dtypes or {}
        out = {k: np.empty((n,) + shape, dtype=dtypes.get(k, np.int64)) for k, shape in self.shapes.items()}
        return self._advance(n, out)

    def skip(self, n):
        """Make the next ``n`` rows and drop them (a resumed write passes the rows it kept)."""
        self._advance(n, None)

    def rows(self):
        """Every row left, as ``take`` gives them. A first block that holds every row, as ``take`` would give
        it, is handed over as it is (no second copy of the split beside it: a Chomsky call's block is the split)."""
        if self.position == 0 and self._block is None and self.count:
            if self._next_block() == self.count and self._whole(self._block):
                block, self._blocks, self._block, self.position = self._block, None, None, self.count
                return {k: block[k] for k in self.shapes}
        return self.take(self.count - self.position)

    def _whole(self, block):
        """Whether ``block`` is every row as ``take`` gives them: each key's own C array, int64 [count, *shape]."""
        for k, shape in self.shapes.items():
            a = block.get(k)
            if not (isinstance(a, np.ndarray) and a.dtype == np.int64 and a.shape == (self.count,) + shape
                    and a.flags.c_contiguous and a.base is None):
                return False
        return True


class Authors:
    """An authors' stream as a task registers it (``Task(authors=...)``, and
    ``Task(authors_pipeline=...)`` with that field's arguments): ``open(*args)`` gives the
    ``Stream``; calling it gives the whole split, what the authors' function returns."""

    def __init__(self, opener, doc=None, splits=("train", "val", "test"), card=None):
        self.open = opener
        self.splits = tuple(splits)  # the splits the authors' code makes (the others are refused by open)
        self.card = card  # how a dataset of it was drawn, for its cards, where the generic sentence would be wrong
        self.__doc__ = doc or opener.__doc__

    def __call__(self, *args):
        return self.open(*args).rows()
