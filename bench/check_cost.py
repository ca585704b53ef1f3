"""What the per-sample checksum check costs a bare read, in one process.

    python bench/check_cost.py DIR [DIR ...] [--reads 1500] [--rounds 4]

For each stored dataset: ``longsynth.open(DIR)["train"][i]`` over shuffled indices, per
CPU second, alternating rounds with the check on and with ``checksum.matches_at``
replaced by ``True``; prints the medians, their ratio and the cost per sample.
"""
import argparse
import time

import numpy as np

import longsynth
from longsynth import checksum


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="+", help="stored dataset directories")
    ap.add_argument("--reads", type=int, default=1500, help="samples read per round")
    ap.add_argument("--rounds", type=int, default=4, help="rounds per setting")
    args = ap.parse_args()
    real = checksum.matches_at
    print("| dataset | check off | check on | ratio | cost per sample |")
    for root in args.roots:
        sp = longsynth.open(root)["train"]
        idx = np.random.default_rng(0).permutation(len(sp))[: args.reads].tolist()
        for i in idx[:50]:
            sp[i]
        rates = {"on": [], "off": []}
        try:
            for _ in range(args.rounds):
                for mode in ("on", "off"):
                    checksum.matches_at = real if mode == "on" else (lambda *a: True)
                    c0 = time.process_time()
                    for i in idx:
                        sp[i]
                    rates[mode].append(len(idx) / (time.process_time() - c0))
        finally:
            checksum.matches_at = real
        on, off = float(np.median(rates["on"])), float(np.median(rates["off"]))
        print(f"| {root} | {off:,.0f} | {on:,.0f} | {on / off:.2f} | {1e6 / on - 1e6 / off:.1f} us |")


if __name__ == "__main__":
    main()
