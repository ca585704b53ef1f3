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


def ngram(inputs, vocab_size, N=3):
    """The in-context n-gram's prediction at each input position (docs/tasks/regbench.md, "The n-gram control"),
    from the definition: at each position the row's text so far is split at '|', every n-gram (n <= N) of each
    string left-padded with N - 1 pads counted anew, and the next letter's probability taken by backoff over the
    letters seen so far; the most probable letter (the first of equals), 0 at the padding."""
    from collections import Counter

    sep, out = vocab_size - 1, []
    text = []
    for t in [int(v) for v in inputs]:
        if t == 0:
            out.append(0)
            continue
        text.append("|" if t == sep else chr(96 + t))
        texts = "".join(text).split("|")
        counts = {n: Counter() for n in range(1, N + 1)}
        for s in texts:
            s = "_" * (N - 1) + s
            for n in range(1, N + 1):
                for i in range(len(s) - n + 1):
                    counts[n][s[i:i + n]] += 1
        vocab = sorted(set("".join(texts)))
        context = ("_" * (N - 1) + texts[-1])[-(N - 1):]

        def prob(context, n):
            """{letter: P_n(letter | the context's last n - 1 symbols)} over the vocabulary."""
            ctx = context[len(context) - (n - 1):] if n > 1 else ""
            if n == 1:
                total = sum(counts[1].values())
                return {c: counts[1][c] / total for c in vocab}
            p = {c: counts[n][ctx + c] / counts[n - 1][ctx] for c in vocab if counts[n][ctx + c]}
            unseen = [c for c in vocab if c not in p]
            if unseen:
                low = prob(context, n - 1)
                rest = sum(low[c] for c in unseen)
                beta = 1 - sum(p.values())
                p.update({c: beta * low[c] / rest for c in unseen})
            return p

        p = prob(context, N)
        best = max(vocab, key=lambda c: (p[c], -ord(c)))
        out.append(ord(best) - 96)
    return np.array(out, dtype=np.int64)


def dfa_accuracy(inputs, targets, table, predictions, vocab_size):
    """(correct, scored) of one row: at each position whose target is scored, the current string (the letters
    since the last '|') with the prediction appended is walked from the start state; it counts when every
    letter has an edge."""
    sep, correct, scored, current = vocab_size - 1, 0, 0, []
    for t, y, p in zip(inputs.tolist(), targets.tolist(), predictions.tolist()):
        current = [] if t == sep else current + [t] if t else current
        if y == -100:
            continue
        scored += 1
        q = 0
        for letter in current + [p]:
            if not 0 < letter < sep or q < 0 or table[q][letter - 1] < 0:
                q = -1
                break
            q = table[q][letter - 1]
        correct += q >= 0
    return correct, scored
