"""The newer baselines' layers against DLR and S6: forward+backward time on the CPU, one thread.

    python bench/baselines.py [--lengths 512 2048] [--reps 5] [--json bench/results/baselines.json]

One layer each, float32, width H 64, batch 1 (as ``bench/layer.py --recurrent``): DLR at its paper's N 1024;
s6 (Mamba's block, N 16) and s6-nogate; s4d-nogate (S4D N 64 in the "No gate" block); deltanet (4 heads,
chunks of 64) and its recurrent form (the twin, step by step); zoology's mixers at Figure 2's settings with
l_max = L: base-conv (its layer-1 mixer, the implicit long convolution; layer 0's is 3 taps), hyena, h3
(d_state = L, head_dim 2). Time of ``layer(u).square().mean().backward()``; after a warm-up step the layers
run interleaved, ``--reps`` rounds, and each gets its median, so every ratio comes from one run on the same
(shared) machine. Prints a table and writes the JSON.
"""
import argparse
import os
import statistics
import time

import torch

from _common import finish, machine, write_json
from longsynth.models_ref.layers.deltanet import DeltaNet
from longsynth.models_ref.models.stack import ModelConfig, make_layer
from longsynth.models_ref.models.zoology_mixers import H3, BaseConv, Hyena


def layers(H, L):
    stack = dict(d_input=1, d_output=1, H=H)
    return {
        "dlr": lambda: make_layer(ModelConfig(layer="dlr", N=1024, **stack)),
        "s6": lambda: make_layer(ModelConfig(layer="s6", N=16, dt_min=1e-3, dt_max=1e-1, **stack)),
        "s6-nogate": lambda: make_layer(ModelConfig(layer="s6", N=16, dt_min=1e-3, dt_max=1e-1, no_gate=True, **stack)),
        "s4d-nogate": lambda: make_layer(ModelConfig(layer="s4d", N=64, dt_min=1e-3, dt_max=1e-1, no_gate=True,
                                                     **stack)),
        "deltanet": lambda: DeltaNet(H, heads=4, chunk=64),
        "deltanet (recurrent form)": lambda: DeltaNet(H, heads=4, form="recurrent"),
        "base-conv": lambda: BaseConv(H, L, kernel_size=-1),
        "hyena": lambda: Hyena(H, L),
        "h3": lambda: H3(H, L, d_state=L, head_dim=2),
    }


def step(layer, u):
    t0 = time.perf_counter()
    layer(u).square().mean().backward()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", type=int, nargs="+", default=[512, 2048])
    ap.add_argument("--H", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "baselines.json"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    results = {"machine": machine(torch=torch.__version__, device="cpu", threads=args.threads), "H": args.H,
               "batch": 1, "reps": args.reps, "runs": []}
    print(f"H {args.H}, batch 1, {args.threads} thread(s), median of {args.reps} interleaved fwd+bwd steps")
    print(f"{'L':>6}  {'layer':<26} {'s / step':>9} {'vs dlr':>7} {'vs s6':>7}")
    for L in args.lengths:
        torch.manual_seed(0)
        built = {name: make() for name, make in layers(args.H, L).items()}
        u = torch.randn(1, L, args.H)
        times = {name: [] for name in built}
        for name, layer in built.items():  # warm-up
            step(layer, u)
        for _ in range(args.reps):
            for name, layer in built.items():
                times[name].append(step(layer, u))
        med = {name: statistics.median(ts) for name, ts in times.items()}
        for name in built:
            run = {"L": L, "layer": name, "s_per_step": med[name], "vs_dlr": med[name] / med["dlr"],
                   "vs_s6": med[name] / med["s6"], "times": times[name],
                   "parameters": sum(p.numel() for p in built[name].parameters())}
            results["runs"].append(run)
            print(f"{L:>6}  {name:<26} {med[name]:>9.4f} {run['vs_dlr']:>7.2f} {run['vs_s6']:>7.2f}", flush=True)
    finish(results["machine"])
    write_json(args.json, results)


if __name__ == "__main__":
    main()
