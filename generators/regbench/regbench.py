"""regbench: in-context language learning of Akyürek et al. (docs/tasks/regbench.md).

A row is the strings of one random DFA, separated by ``|``; a model learns the language from its context.
One row, drawn from stream(seed, split, index) in this order (the law of berlino/seq_icl's
``src/dataloaders/dfa.py``, its bounds exclusive where theirs are):

1. n states, uniform in max_outgoing_edges..max_num_nodes; an alphabet of m letters, m uniform in
   max_outgoing_edges..vocab_size - 2, a uniform m-subset of the vocab_size - 2 letters (a partial
   Fisher-Yates shuffle of the letters, m steps);
2. for each state v in order: k edges, k uniform in 1..max_outgoing_edges - 1, on k distinct letters of the
   alphabet (a partial shuffle of the alphabet, k steps) to k distinct other states (a partial shuffle of the
   states but v, k steps), the i-th letter to the i-th state; every state accepts, the start is state 0, a
   missing edge rejects;
3. the minimal DFA of that language (Moore's partition refinement with a sink for the missing edges), its
   states numbered in breadth-first order from the start, letters in ascending order, the sink left out:
   the row's ``dfa`` table;
4. c strings, c uniform in min_num_in_context_examples..max_num_in_context_examples - 1; each of length l
   uniform in 1..max_len_per_example - 1, a walk from the start state that takes one of the state's letters
   uniformly (below(number of letters), in ascending order) at each step.

Tokens: ``.`` 0 (padding), letters 1..vocab_size - 2, ``|`` vocab_size - 1. The row is the strings joined by
``|``, cut to its first (input_seq_len + 1) // 2 tokens (the authors' input_seq_len counts characters of the
text with a space between tokens); ``inputs`` its tokens but the last, ``targets`` the next token, -100 where
it is ``|``; both padded (``.`` and -100) to the widest row the parameters allow.

Worked example (vocab_size 6: letters a b c d as 1 2 3 4, ``|`` 5): a DFA with start state 0 --a--> 1,
1 --b--> 0 and strings "ab", "a":

    tokens   1  2  5  1
    inputs   1  2  5
    targets  2  .  1        (. = -100)
    dfa      [[ 1, -1, -1, -1],
              [-1,  0, -1, -1], ...]   (rows past the states: -1)
"""

import numpy as np
from numba import njit, prange

from longsynth.generators._tokens import IGNORE, REVISION, token_dtype
from longsynth.generators.regbench.authors import authors
from longsynth.generators.regbench.config import RegBenchConfig, check, tokens_per_row
from longsynth.rng import below, stream
from longsynth.task import KeySpec, Task

CITATION = """@inproceedings{akyurek2024icll,
  title     = {In-Context Language Learning: Architectures and Algorithms},
  author    = {Aky{\\"u}rek, Ekin and Wang, Bailin and Kim, Yoon and Andreas, Jacob},
  booktitle = {ICML},
  year      = {2024}
}"""
@njit(cache=True)
def _draw_dfa(s, max_nodes, n_letters, max_edges, delta):
    """Steps 1-2: the number of states n; delta [max_nodes + 1, n_letters] <- the drawn edges, n (the sink)
    where there is none."""
    n = max_edges + below(s, max_nodes - max_edges + 1)
    m = max_edges + below(s, n_letters - max_edges + 1)
    letters = np.arange(n_letters)
    for i in range(m):  # alphabet = letters[:m]
        j = i + below(s, n_letters - i)
        letters[i], letters[j] = letters[j], letters[i]
    delta[: n + 1, :] = n
    alpha = np.empty(m, dtype=np.int64)
    others = np.empty(n - 1, dtype=np.int64)
    for v in range(n):
        k = 1 + below(s, max_edges - 1)
        for i in range(m):
            alpha[i] = letters[i]
        for i in range(n - 1):
            others[i] = i if i < v else i + 1
        for i in range(k):
            j = i + below(s, m - i)
            alpha[i], alpha[j] = alpha[j], alpha[i]
            j = i + below(s, n - 1 - i)
            others[i], others[j] = others[j], others[i]
            delta[v, alpha[i]] = others[i]
    return n


@njit(cache=True)
def _minimal(n, n_letters, delta, table):
    """Step 3: table [max_nodes, n_letters] <- the minimal DFA of delta's n states (state n the sink), numbered
    in breadth-first order from the start over ascending letters, -1 for the sink; returns its state count."""
    cls = np.zeros(n + 1, dtype=np.int64)
    cls[n] = 1  # the sink: the one state that rejects
    count = 2
    new = np.empty(n + 1, dtype=np.int64)
    while True:  # Moore: split classes by the classes the letters lead to, until nothing splits
        k = 0
        for v in range(n + 1):
            new[v] = -1
            for u in range(v):
                same = cls[u] == cls[v]
                a = 0
                while same and a < n_letters:
                    same = cls[delta[u, a]] == cls[delta[v, a]]
                    a += 1
                if same:
                    new[v] = new[u]
                    break
            if new[v] < 0:
                new[v] = k
                k += 1
        cls[:] = new
        if k == count:
            break
        count = k
    rep = np.full(count, -1, dtype=np.int64)  # a state of each class
    for v in range(n + 1):
        if rep[cls[v]] < 0:
            rep[cls[v]] = v
    number = np.full(count, -1, dtype=np.int64)  # class -> breadth-first number
    order = np.empty(count, dtype=np.int64)
    sink = cls[n]
    number[cls[0]] = 0
    order[0] = cls[0]
    found, head = 1, 0
    while head < found:
        c = order[head]
        head += 1
        for a in range(n_letters):
            d = cls[delta[rep[c], a]]
            if d != sink and number[d] < 0:
                number[d] = found
                order[found] = d
                found += 1
    table[:, :] = -1
    for q in range(found):
        c = order[q]
        for a in range(n_letters):
            d = cls[delta[rep[c], a]]
            if d != sink:
                table[q, a] = number[d]
    return found


@njit(cache=True)
def regbench_one(seed, split, index, max_nodes, n_letters, min_ic, max_ic, max_edges, max_len, width, inp, tgt,
                 table):
    """inp, tgt [width - 1], table [max_nodes, n_letters] of one row."""
    s = stream(seed, split, index)
    delta = np.empty((max_nodes + 1, n_letters), dtype=np.int64)
    n = _draw_dfa(s, max_nodes, n_letters, max_edges, delta)
    _minimal(n, n_letters, delta, table)
    sep = n_letters + 1
    enabled = np.empty(n_letters, dtype=np.int64)
    strings = min_ic + below(s, max_ic - min_ic)
    pos, prev = 0, -1  # tokens written; the token before the next (-1: none yet)
    for w in range(strings):
        length = 1 + below(s, max_len - 1)
        if w > 0:
            if pos < width:  # the separator
                if prev >= 0:
                    inp[pos - 1] = prev
                    tgt[pos - 1] = IGNORE
                prev = sep
                pos += 1
        q = 0
        for _ in range(length):
            deg = 0
            for a in range(n_letters):
                if table[q, a] >= 0:
                    enabled[deg] = a
                    deg += 1
            a = enabled[below(s, deg)]
            q = table[q, a]
            if pos < width:
                if prev >= 0:
                    inp[pos - 1] = prev
                    tgt[pos - 1] = 1 + a
                prev = 1 + a
                pos += 1
    for i in range(pos - 1, width - 1):
        inp[i] = 0
        tgt[i] = IGNORE


@njit(cache=True, parallel=True)
def regbench_fill(seed, split, start, max_nodes, n_letters, min_ic, max_ic, max_edges, max_len, width, inp, tgt,
                  table):
    for b in prange(inp.shape[0]):
        regbench_one(seed, split, start + b, max_nodes, n_letters, min_ic, max_ic, max_edges, max_len, width, inp[b],
                     tgt[b], table[b])


def _keys(cfg):
    dt = token_dtype(cfg.vocab_size)
    n = tokens_per_row(cfg) - 1
    return {"inputs": KeySpec(dt, (n,), doc="a row's tokens but the last: '.' 0, letters 1.., '|' vocab_size - 1; "
                                            "padded with 0"),
            "targets": KeySpec(dt, (n,), doc="the next token, -100 where it is '|' and in the padding"),
            "dfa": KeySpec("int8", (cfg.max_num_nodes, cfg.vocab_size - 2),
                           doc="the row's minimal DFA: table[state, letter] = next state, -1 none; start state 0, "
                               "every state accepting, rows past its states -1")}


def _fill(cfg, seed, split, start, out, fixed):
    if TASK.own_rows_problem(cfg):
        from longsynth.errors import LongsynthError

        raise LongsynthError(TASK.own_rows_problem(cfg))
    regbench_fill(seed, split, start, cfg.max_num_nodes, cfg.vocab_size - 2, cfg.min_num_in_context_examples,
                  cfg.max_num_in_context_examples, cfg.max_outgoing_edges, cfg.max_len_per_example,
                  tokens_per_row(cfg), out["inputs"], out["targets"], out["dfa"])


_AUTHORS = authors()
TASK = Task(
    name="regbench",
    config=RegBenchConfig,
    check=check,
    summary="Akyürek et al.'s in-context language learning: strings of one random DFA a row, learn its language",
    keys=_keys,
    fill=_fill,
    family="tokens",
    revision=REVISION,
    vocab_size=lambda cfg: cfg.vocab_size,
    vocab=lambda cfg: ["."] + [chr(97 + i) for i in range(cfg.vocab_size - 2)] + ["|"],
    citation=CITATION,
    authors=_AUTHORS[0],
    authors_pipeline=_AUTHORS[1],
    authors_params=("hash_seed",),
    default_num_samples=5500,  # the authors' 5,000 training DFAs and 500 held out: --splits train=5000,val=250,test=250
    card="Each row holds 10-19 strings of one random DFA (4-12 states, an alphabet of 4-18 of the letters a..r, 1-3 "
         "edges a state, every state accepting), separated by '|'; strings are random walks of 1-49 letters from the "
         "start state. Targets are the next token, not scored at '|'; the row's minimal DFA is stored beside it "
         "(`dfa`), which the DFA accuracy needs. Akyürek et al., In-Context Language Learning: Architectures and "
         "Algorithms (ICML 2024).",
)
