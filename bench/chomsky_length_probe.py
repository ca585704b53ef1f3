"""Read a trained reverse-string model at every input length n from 1 to --max-n, and for a Tape-RNN set the
lengths it fails beside the jump orbit of its tape (docs/validation.md, "The whole suite at the tiny budget").

    python bench/chomsky_length_probe.py RUN/checkpoints/best.pt [--max-n 130] [--rows 32]

A reverse-string row of length n is n random bits, then n empty tokens whose targets are the bits reversed
(docs/tasks/chomsky.md, "Row layout"). A Tape-RNN jumps its head by n on a cyclic tape of m = max(256, 2n) cells
(models_ref/layers/tape_rnn.py), so the cells a run of jumps reaches from one cell number m / gcd(n, m): the
script prints, for each n read below --below, that number and whether it is smaller than n (too few cells for n
symbols stored one jump apart), and how many of the failing and passing lengths the rule sorts right. Nothing is
written.
"""
import argparse
import math

import torch

from longsynth.models_ref.training.checkpoints import load_model


def reverse_rows(bits, empty):
    """bits [rows, n] -> (inputs [rows, 2n], targets [rows, n]): the task's rows of length n, unpadded."""
    inputs = torch.cat([bits, torch.full_like(bits, empty)], dim=1)  # [rows, 2n]  inputs, then empty tokens
    return inputs, bits.flip(1)  # the targets of the n empty tokens


def orbit(n, m):
    """The cells a run of jumps by n reaches from one cell of a cyclic tape of m cells."""
    return m // math.gcd(n, m)


def accuracy(model, n, rows, generator):
    x, y = reverse_rows(torch.randint(0, 2, (rows, n), generator=generator), model.cfg.I)  # [rows, 2n], [rows, n]
    with torch.no_grad():
        pred = model(x)[:, n:, :model.cfg.O].argmax(-1)  # [rows, n]
    return (pred == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="a reverse-string run's checkpoints/best.pt (or last.pt)")
    ap.add_argument("--max-n", type=int, default=130, help="read every input length 1 .. max-n")
    ap.add_argument("--rows", type=int, default=32, help="random rows a length")
    ap.add_argument("--below", type=float, default=0.95, help="a length whose accuracy is below this fails")
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, _ = load_model(args.checkpoint)
    model.eval()
    if model.cfg.O != 2 or model.cfg.I != 2:
        raise SystemExit(f"{args.checkpoint}: not a reverse-string model (I {model.cfg.I}, O {model.cfg.O})")
    tape = model.cfg.core == "tape-rnn"
    generator = torch.Generator().manual_seed(0)
    agree = {True: [0, 0], False: [0, 0]}  # failed? -> [the rule says so, it does not]
    for n in range(1, args.max_n + 1):
        acc = accuracy(model, n, args.rows, generator)
        failed = acc < args.below
        line = f"n {n:4d}  accuracy {acc:.3f}" + ("  FAIL" if failed else "")
        if tape:
            m = max(model.cfg.arch["memory_size"], 2 * n)
            cells = orbit(n, m)
            agree[failed][0 if (cells < n) == failed else 1] += 1
            line += f"  tape {m}, orbit of jumps {cells}" + (" < n" if cells < n else "")
        if failed or not tape:
            print(line)
    if tape:
        print(f"failing lengths the rule 'orbit < n' marks: {agree[True][0]} of {sum(agree[True])}; "
              f"passing lengths it leaves unmarked: {agree[False][0]} of {sum(agree[False])}")


if __name__ == "__main__":
    main()
