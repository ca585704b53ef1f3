"""ListOps twins: the evaluator that recomputes every label from the tokens, the LRA
process by plain rejection, and the documented draw order of a sample."""
import numpy as np

from .core import Stream, mix


# ---------------------------------------------------------------- listops

LISTOPS_VOCAB = ["[MIN", "[MAX", "[MED", "[SM", "]"] + [str(d) for d in range(10)]
LISTOPS_CLOSE = 4


def listops_apply(op, args):
    """docs/tasks/listops.md: MIN, MAX, MED = int(numpy.median(args)), SM = sum mod 10."""
    name = LISTOPS_VOCAB[op]
    if name == "[MIN":
        return min(args)
    if name == "[MAX":
        return max(args)
    if name == "[MED":
        return int(np.median(args))
    return sum(args) % 10


def listops_evaluate(tokens):
    """Parse a token-id sequence (vocabulary above) and recompute everything from it.

    Returns targets (value at each `]`, -1 elsewhere), heights and operators per `]`,
    subtree token lengths and `]` positions, root value, length and the template hash
    (h = 0x9E3779B97F4A7C15; h = mix(h ^ (t + 1)) over the non-digit tokens t).
    Raises ValueError if the sequence is not one well-formed expression.
    """
    tokens = [int(t) for t in tokens]
    targets = [-1] * len(tokens)
    heights, operators, lengths, closes = [], [], [], []
    stack = []  # [op, start, child values, child max height]
    root = None
    h = 0x9E3779B97F4A7C15
    for i, t in enumerate(tokens):
        if root is not None:
            raise ValueError("tokens after the end of the expression")
        if t < LISTOPS_CLOSE:
            stack.append([t, i, [], 0])
            h = mix(h ^ (t + 1))
        elif t == LISTOPS_CLOSE:
            if not stack or len(stack[-1][2]) < 2:
                raise ValueError(f"`]` at {i} closes no operator with >= 2 arguments")
            op, start, args, hmax = stack.pop()
            value = listops_apply(op, args)
            height = hmax + 1
            targets[i] = value
            heights.append(height)
            operators.append(op)
            lengths.append(i - start + 1)
            closes.append(i)
            h = mix(h ^ (t + 1))
            if stack:
                stack[-1][2].append(value)
                stack[-1][3] = max(stack[-1][3], height)
            else:
                root = value
        elif t < len(LISTOPS_VOCAB):
            if not stack:
                raise ValueError("a bare digit is not an operator expression")
            stack[-1][2].append(t - 5)
        else:
            raise ValueError(f"token id {t} outside the vocabulary")
    if stack or root is None:
        raise ValueError("unterminated expression")
    return {"targets": targets, "heights": heights, "operators": operators, "lengths": lengths,
            "closes": closes, "root": root, "length": len(tokens), "template": h}


def listops_tree(rng, depth, max_depth, max_args):
    """One tree of the LRA process, straight from docs/tasks/listops.md (recursive, Python ``random``).

    Returns (tokens, operator of the root or None for a leaf, root arity, height).
    """
    if depth < max_depth and rng.random() < 0.25:
        arity = rng.randint(2, max_args)
        op = rng.randrange(4)
        tokens, height = [op], 0
        for _ in range(arity):
            sub, _, _, h = listops_tree(rng, depth + 1, max_depth, max_args)
            tokens += sub
            height = max(height, h)
        return tokens + [LISTOPS_CLOSE], op, arity, height + 1
    return [5 + rng.randrange(10)], None, 0, 0


def listops_reference(seed, n, min_length, max_length, max_args, max_depth):
    """n trees by plain rejection: keep a tree iff min_length < length < max_length.

    Returns (list of (root operator, root arity, height, length), trees drawn).
    """
    import random

    rng = random.Random(seed)
    out, drawn = [], 0
    while len(out) < n:
        drawn += 1
        tokens, op, arity, height = listops_tree(rng, 1, max_depth, max_args)
        if min_length < len(tokens) < max_length:
            out.append((op, arity, height, len(tokens)))
    return out, drawn


def listops_longest(max_args, max_depth):
    """M[d]: token length of the full tree below depth d (every node an operator with
    max_args arguments), d = 1 .. max_depth."""
    M = {max_depth: 1}
    for d in range(max_depth - 1, 0, -1):
        M[d] = 2 + max_args * M[d + 1]
    return M


def listops_sample(seed, split, index, min_length, max_length, max_args, max_depth):
    """Token ids of sample ``index``, straight from the documented draw order (revision 2)
    in generators/listops/tree.py: node by node in pure Python, the tree built level by level,
    then written out recursively in preorder and labelled from a bit reservoir."""
    rng = Stream(seed, split, index)
    M = listops_longest(max_args, max_depth)
    m = max_args - 1
    k = m.bit_length() - 1 if m & (m - 1) == 0 else None  # None: not a power of two

    def lemire(next16, n):
        while True:
            c = next16()
            if (c * n) % 65536 >= 65536 % n:
                return (c * n) >> 16

    def attempt():
        levels, z, length = [], 1, 1
        for d in range(1, max_depth):
            words = [rng.u64() for _ in range((z + 31) // 32)]
            is_op = [(words[j // 32] >> (2 * (j % 32))) & 3 == 0 for j in range(z)]
            x = sum(is_op)
            if k is not None and k >= 1:
                per = 64 // k
                words = [rng.u64() for _ in range((x + per - 1) // per)]
                us = [(words[i // per] >> (k * (i % per))) & (m - 1) for i in range(x)]
            elif k == 0:
                us = [0] * x
            else:
                chunks = []

                def next16():
                    if not chunks:
                        w = rng.u64()
                        chunks.extend((w >> (16 * c)) & 0xFFFF for c in range(4))
                    return chunks.pop(0)
                us = [lemire(next16, m) for _ in range(x)]
            it = iter(us)
            level = [2 + next(it) if op else 0 for op in is_op]
            levels.append(level)
            z = sum(level)
            length += sum(a + 1 for a in level if a)
            if length >= max_length or length + z * (M[d + 1] - 1) <= min_length:
                return None
            if z == 0:
                break
        return levels

    levels = None
    while levels is None:
        levels = attempt()

    reservoir = {"word": 0, "left": 0}

    def bits(n):
        if reservoir["left"] < n:
            reservoir["word"], reservoir["left"] = rng.u64(), 64
        v = reservoir["word"] & ((1 << n) - 1)
        reservoir["word"] >>= n
        reservoir["left"] -= n
        return v

    cursors = [0] * len(levels)
    tokens = []

    def write(d):  # the next unvisited node of level d, in preorder
        arity = 0
        if d <= len(levels):
            arity = levels[d - 1][cursors[d - 1]]
            cursors[d - 1] += 1
        if arity:
            tokens.append(bits(2))
            for _ in range(arity):
                write(d + 1)
            tokens.append(LISTOPS_CLOSE)
        else:
            tokens.append(5 + lemire(lambda: bits(16), 10))

    write(1)
    return tokens
