"""Peak memory and time of one training step of the reference model.

    python bench/memory.py --layers 1 2 --checkpoint both [--batch 2] [--L 262144] [--json PATH]

Default model: the paper's Pathfinder-512 model (Table 6): 12 blocks of bidirectional DLR,
H = 64, N = 2048, kernel length 32K, GLU, 3 classes, on L = 512 * 512 = 262,144 pixels.
One step = forward, cross-entropy, backward and an AdamW step, on random inputs and labels.
Each (layers, checkpointing) point runs in a fresh subprocess. CPU: peak RSS during the step
minus the RSS after building the model and the batch (ru_maxrss; includes allocator caching);
CUDA: torch.cuda.max_memory_allocated minus the allocation before the step. Memory per layer
is the difference between layer counts, so the 12-layer figure can be extrapolated from
points that fit.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

from _common import finish, machine


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def one(layers, ckpt, batch, L, device, threads, amp):
    import torch
    import torch.nn.functional as F

    from longsynth.models_ref.models.stack import Model, ModelConfig
    from longsynth.models_ref.training.trainer import TrainConfig, build_optimizer

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cfg = ModelConfig(d_input=1, d_output=3, H=64, N=2048, n_layers=layers, glu=True, bidirectional=True,
                      dt_min=1e-4, dt_max=1e-1, max_kernel_length=32768)
    model = Model(cfg).to(device)
    model.checkpoint_activations = ckpt
    opt = build_optimizer(model, TrainConfig(steps=1, lr=1e-5))
    x = torch.rand(batch, L, 1, device=device)  # [B, L, 1]
    y = torch.randint(0, 3, (batch, L), device=device)  # [B, L]
    base = rss_bytes()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base_cuda = torch.cuda.memory_allocated()
    t = time.perf_counter()
    with torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=amp):
        out = model(x).float()  # [B, L, 3]
    loss = F.cross_entropy(out.reshape(-1, 3), y.reshape(-1))
    loss.backward()
    opt.step()
    if device == "cuda":
        torch.cuda.synchronize()
    sec = time.perf_counter() - t
    r = {"layers": layers, "checkpoint_activations": ckpt, "amp": amp, "batch": batch, "L": L, "device": device,
         "threads": threads, "step_s": round(sec, 2), "loss": float(loss),
         "params": sum(p.numel() for p in model.parameters())}
    if device == "cuda":
        r["peak_bytes"] = torch.cuda.max_memory_allocated() - base_cuda
    else:
        r["peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    print(json.dumps(r))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--checkpoint", choices=["on", "off", "both"], default="both")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--L", type=int, default=512 * 512)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--amp", action="store_true", help="bf16 autocast")
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "memory.json"))
    ap.add_argument("--one", nargs=2, type=int, metavar=("LAYERS", "CKPT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    record = machine()
    if args.one:
        one(args.one[0], bool(args.one[1]), args.batch, args.L, args.device, args.threads, args.amp)
        return
    ckpts = {"on": [1], "off": [0], "both": [0, 1]}[args.checkpoint]
    results = []
    for layers in args.layers:
        for c in ckpts:
            cmd = [sys.executable, __file__, "--one", str(layers), str(c), "--batch", str(args.batch),
                   "--L", str(args.L),
                   "--device", args.device, "--threads", str(args.threads)] + (["--amp"] if args.amp else [])
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode == 0:
                r = json.loads(p.stdout.strip().splitlines()[-1])
            else:
                r = {"layers": layers, "checkpoint_activations": bool(c), "failed": f"exit {p.returncode}: "
                     + ((p.stderr.strip().splitlines() or ["killed (out of memory?)"])[-1][:200])}
            results.append(r)
            peak = f"{r['peak_bytes'] / 2**30:6.2f} GiB" if "peak_bytes" in r else r["failed"]
            print(f"layers {layers:2d} checkpoint {'on ' if c else 'off'}  "
                  f"{r.get('step_s', float('nan')):7.1f} s  peak {peak}", flush=True)
    meta = {"machine": finish(record), "command": " ".join(sys.argv),
            "time": time.strftime("%Y-%m-%d %H:%M:%S"), "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(meta, f, indent=2)
    print("wrote", args.json)


if __name__ == "__main__":
    main()
