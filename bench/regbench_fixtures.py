"""Fixtures of the authors' RegBench rows under declared hash seeds, made by running their code
(tests/data/regbench_authors.npz; tests/test_regbench_authors.py compares ``authors_dataset`` with them).

    pip install pythomata==0.3.2     # their DFA library (theirs only; longsynth never imports it)
    python bench/regbench_fixtures.py CHECKOUT [--out tests/data/regbench_authors.npz]

CHECKOUT is a checkout of berlino/seq_icl (9b9223d). Each case runs ``ICLDFADataModule(...).setup()`` in
a child Python started with ``PYTHONHASHSEED`` set (the same interpreter as this one: the hash of a str
changed in CPython 3.11), and keeps per split the inputs and labels exactly as setup() padded them and,
per row, its DFA as a table numbered breadth-first from the start over ascending letters (the task's
``dfa``), read from pythomata's transition function.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

# (hash_seed, seed, num_examples, num_test_examples, parameters besides the defaults of bench/regbench.py)
CASES = [
    (0, 0, 24, 6, {}),
    (1, 0, 24, 6, {}),
    (4242, 5, 30, 5, {"vocab_size": 10, "max_num_nodes": 7, "max_outgoing_edges": 3, "max_len_per_example": 12,
                      "input_seq_len": 61, "min_num_in_context_examples": 4, "max_num_in_context_examples": 9}),
]

CHILD = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import regbench as rb
dfa = rb.their_module(sys.argv[2])
case = json.loads(sys.argv[3])
kw = dict(rb.DEFAULTS)
kw.update(case["params"])
dm = dfa.ICLDFADataModule(num_examples=case["n"], num_test_examples=case["m"], seed=case["seed"], **kw)
dm.setup()
letters = kw["vocab_size"] - 2


def table(d):
    tf, start = d.dfa._transition_function, d.dfa._initial_state
    number, order = {start: 0}, [start]
    for q in order:
        for a in range(letters):
            nxt = tf.get(q, {}).get(chr(97 + a))
            if nxt is not None and nxt not in number:
                number[nxt] = len(order)
                order.append(nxt)
    t = np.full((kw["max_num_nodes"], letters), -1, dtype=np.int8)
    for q in order:
        for sym, nxt in tf.get(q, {}).items():
            t[number[q], ord(sym) - 97] = number[nxt]
    return t


out = {}
for s in ("train", "test", "val"):
    d = dm.dataset[s]
    out[s + "/inputs"] = d.inputs.numpy()
    out[s + "/targets"] = d.targets.numpy()
    out[s + "/dfa"] = np.stack([table(x) for x in d.dfas])
np.savez(sys.argv[4], **out)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", help="a checkout of berlino/seq_icl (9b9223d)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                  "regbench_authors.npz"), help="the fixture file to write")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    arrays, cases = {}, []
    for i, (hash_seed, seed, n, m, params) in enumerate(CASES):
        case = {"hash_seed": hash_seed, "seed": seed, "n": n, "m": m, "params": params}
        tmp = f"{args.out}.case{i}.npz"
        env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
        subprocess.run([sys.executable, "-c", CHILD, here, args.checkout, json.dumps(case), tmp], env=env, check=True)
        with np.load(tmp) as z:
            arrays.update({f"{i}/{k}": z[k] for k in z.files})
        os.remove(tmp)
        cases.append(case)
    arrays["cases"] = np.array(json.dumps(cases))
    np.savez_compressed(args.out, **arrays)
    print(f"{len(cases)} cases -> {args.out} ({os.path.getsize(args.out):,} bytes)")


if __name__ == "__main__":
    main()
