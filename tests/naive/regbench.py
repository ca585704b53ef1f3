"""Twin of regbench (docs/tasks/regbench.md), written from the page's definition: the DFA drawn edge by
edge into dicts, its minimal DFA by the table-filling algorithm (pairs of states told apart by a letter,
to a fixpoint) rather than the kernel's partition refinement, and the row built as a list of tokens."""
import numpy as np

from .core import SPLITS, Stream, _token_dtype


def _shuffled_prefix(st, items, k):
    """The first k items after k steps of a Fisher-Yates shuffle of a copy of ``items``."""
    items = list(items)
    for i in range(k):
        j = i + st.below(len(items) - i)
        items[i], items[j] = items[j], items[i]
    return items[:k]


def _draw(st, max_nodes, letters, max_edges):
    """(n, edges [{letter: state}] of each state)."""
    n = max_edges + st.below(max_nodes - max_edges + 1)
    m = max_edges + st.below(letters - max_edges + 1)
    alphabet = _shuffled_prefix(st, range(letters), m)
    edges = []
    for v in range(n):
        k = 1 + st.below(max_edges - 1)
        alpha, others = list(alphabet), [u for u in range(n) if u != v]
        chosen_letters, chosen_states = [], []
        for i in range(k):  # the two shuffles step by step, interleaved as the definition draws them
            j = i + st.below(len(alpha) - i)
            alpha[i], alpha[j] = alpha[j], alpha[i]
            j = i + st.below(len(others) - i)
            others[i], others[j] = others[j], others[i]
            chosen_letters.append(alpha[i])
            chosen_states.append(others[i])
        edges.append(dict(zip(chosen_letters, chosen_states)))
    return n, edges


def minimal_dfa(n, edges, letters):
    """The minimal DFA of n all-accepting states 0..n-1 with partial ``edges``, start 0: [{letter: state}]
    numbered breadth-first from the start over ascending letters."""
    SINK = n
    step = [lambda a, v=v: edges[v].get(a, SINK) for v in range(n)] + [lambda a: SINK]
    states = range(n + 1)
    apart = {(u, v) for u in states for v in states if (u == SINK) != (v == SINK)}
    grew = True
    while grew:
        grew = False
        for u in states:
            for v in states:
                if (u, v) not in apart and any((step[u](a), step[v](a)) in apart for a in range(letters)):
                    apart.add((u, v))
                    grew = True
    cls = {}
    for v in states:
        cls[v] = next(u for u in states if (u, v) not in apart)  # the smallest state equivalent to v
    number, order = {cls[0]: 0}, [cls[0]]
    for c in order:  # grows while it is walked: breadth first
        for a in range(letters):
            d = cls[step[c](a)]
            if d != cls[SINK] and d not in number:
                number[d] = len(order)
                order.append(d)
    return [{a: number[cls[step[c](a)]] for a in range(letters) if cls[step[c](a)] != cls[SINK]} for c in order]


def regbench(seed, split, index, vocab_size=20, max_num_nodes=12, min_num_in_context_examples=10,
             max_num_in_context_examples=20, max_outgoing_edges=4, max_len_per_example=50, input_seq_len=4096):
    st = Stream(seed, SPLITS[split], index)
    letters = vocab_size - 2
    n, edges = _draw(st, max_num_nodes, letters, max_outgoing_edges)
    dfa = minimal_dfa(n, edges, letters)
    tokens = []
    for w in range(min_num_in_context_examples + st.below(max_num_in_context_examples - min_num_in_context_examples)):
        length = 1 + st.below(max_len_per_example - 1)
        if w:
            tokens.append(vocab_size - 1)
        q = 0
        for _ in range(length):
            a = sorted(dfa[q])[st.below(len(dfa[q]))]
            tokens.append(1 + a)
            q = dfa[q][a]
    most = (max_num_in_context_examples - 1) * (max_len_per_example - 1) + max_num_in_context_examples - 2
    width = min(most, (input_seq_len + 1) // 2)
    tokens = tokens[:width]
    inputs = np.zeros(width - 1, dtype=np.int64)
    targets = np.full(width - 1, -100, dtype=np.int64)
    inputs[: len(tokens) - 1] = tokens[:-1]
    targets[: len(tokens) - 1] = [t if t != vocab_size - 1 else -100 for t in tokens[1:]]
    table = np.full((max_num_nodes, letters), -1, dtype=np.int8)
    for q, out in enumerate(dfa):
        for a, d in out.items():
            table[q, a] = d
    dt = _token_dtype(vocab_size)
    return {"inputs": inputs.astype(dt), "targets": targets.astype(dt), "dfa": table}
