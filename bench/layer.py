"""DLR layer benchmark: forward+backward tokens/s and peak memory, chunked vs materialising,
and against the authors' own layer; and the S4 family against DLR.

    python bench/layer.py [--device cpu|cuda] [--reps 2] [--json bench/results/layer.json]
    python bench/layer.py --authors-src /tmp/dlr-src [--json bench/results/layer_authors.json]
    python bench/layer.py --family [--json bench/results/layer_family.json]
    python bench/layer.py --baselines [--json bench/results/layer_baselines.json]
    python bench/layer.py --recurrent [--json bench/results/layer_recurrent.json]

``--family``: S4, S4D and eSSM (docs/models.md) against DLR at L = 1024, 4096, 16K (Path-X) and 64K,
H = 128, batch 1, each at its paper's state size (DLR N 1024, DLR paper Table 6; S4 and S4D
N 64, S4 paper Table 11; eSSM N 256 over 8 heads, eSSM paper Table 10), unidirectional; the
forward alone (no autograd) is timed beside forward+backward. ``--baselines``: the DLR paper's
ATTENTION (4 heads, rotary) and LOCALATTENTION (chunks of 1024) layers against a DLR layer of
N 4096 at H 128 and L = 512, 4096, 16K (its Table 1 times attention at 6.3x DLR at L = 4096).
``--recurrent``: s6 (Mamba, N 16, its chunked scan), s6-signed and gru against DLR (N 1024) at
H 64 and L = 1024, 4096, batch 1.

``--authors-src PATH``: a checkout of github.com/ag1988/dlr (for example
``git --git-dir=... archive HEAD src | tar -x -C PATH``). Their DLR layer (``DSS`` with
``kernel_type='dlr'`` in src/models/sequence/ss/standalone/dss.py) is imported from it,
nothing of it is copied here, and timed against ours in the same run on the same device,
same H, N, L, kernel length and batch (unidirectional, ``transposed=False``). It needs
einops, opt_einsum, omegaconf and tqdm from PyPI (``pip install einops opt_einsum omegaconf
tqdm``); pytorch_lightning, which it imports only for a logging decorator, is replaced by a
no-op ``rank_zero_only`` when absent. Without pykeops their kernel materialises
S = Lambda^k as [N, L_kernel] (``pykeops=False``, what runs here); with pykeops installed it
uses KeOps' lazy reduction instead. Each run has its address space capped (--mem-cap-gib)
so a run that cannot fit fails instead of starving the machine.

Configurations (paper Table 6): H=128, N=1024, L=16K (Pathfinder-128) and H=64, N=2048,
L=262K with kernel length 32K (Pathfinder-512). "chunked" is models_ref.layers.dlr.DLR (power
tables over position chunks, never more than O(N*C + H*L) kernel memory); "naive" is the
paper's Figure 4 kernel, which materialises P = Lambda^k as an [N, L_kernel] matrix (and
its autograd copies). Each measurement runs in a fresh subprocess so CPU peak memory
(ru_maxrss minus the RSS before the first step) is per run; on CUDA it is
torch.cuda.max_memory_allocated. A run the machine cannot hold is reported with the
analytic size of what it would materialise.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

from _common import finish, machine

CONFIGS = {
    "pf128": dict(H=128, N=1024, L=16384, klen=None, B=1),
    "pf512": dict(H=64, N=2048, L=262144, klen=32768, B=1),
    "pf512-fullkernel": dict(H=64, N=2048, L=262144, klen=None, B=1),
}
FAMILY = {"dlr": dict(N=1024), "s4": dict(N=64), "s4d": dict(N=64), "essm": dict(N=256, heads=8),
          # --baselines: the DLR paper's Table 1 layers at H 128 (DLR N 4096; attention 4 heads; local chunk 1024)
          "dlr-4096": dict(layer="dlr", N=4096), "attention": dict(), "local-attention": dict(attention_chunk=1024),
          # --recurrent: Mamba's block at its d_state 16 (its default), the signed variant, torch's GRU
          "s6": dict(N=16), "s6-signed": dict(layer="s6", N=16, signed=True), "gru": dict()}
for _L, _tag in ((512, "512"), (1024, "1k"), (4096, "4k"), (16384, "16k"), (65536, "64k")):
    CONFIGS[f"family-{_tag}"] = dict(H=128, N=None, L=_L, klen=None, B=1)
FAMILY_PLAN = [(impl, f"family-{tag}") for tag in ("1k", "4k", "16k", "64k") for impl in ("dlr", "s4", "s4d", "essm")]
for _L, _tag in ((1024, "1k"), (4096, "4k")):
    CONFIGS[f"h64-{_tag}"] = dict(H=64, N=None, L=_L, klen=None, B=1)
RECURRENT_PLAN = [(impl, f"h64-{tag}") for tag in ("1k", "4k") for impl in ("dlr", "s6", "s6-signed", "gru")]
BASELINES_PLAN = [(impl, f"family-{tag}") for tag in ("512", "4k", "16k")
                  for impl in ("dlr-4096", "attention", "local-attention")]
PLAN = [("chunked", "pf128"), ("naive", "pf128"), ("chunked", "pf512"), ("naive", "pf512"),
        ("chunked", "pf512-fullkernel")]
AUTHORS_PLAN = [("chunked", "pf128"), ("authors", "pf128"), ("chunked", "pf512"), ("authors", "pf512"),
                ("chunked", "pf512-fullkernel"), ("authors", "pf512-fullkernel")]


def load_authors(src):
    """The authors' standalone module (their dss.py, DLR kernel included) from a checkout at ``src``."""
    import importlib
    import types

    std = os.path.join(src, "src", "models", "sequence", "ss", "standalone")
    if not os.path.isfile(os.path.join(std, "dss.py")):
        raise SystemExit(f"--authors-src: {std}/dss.py not found (a checkout of ag1988/dlr is expected)")
    try:
        import pytorch_lightning  # noqa: F401
    except ImportError:  # used there only for rank_zero_only (log on rank 0): a no-op stand-in
        pl = types.ModuleType("pytorch_lightning")
        pl.utilities = types.ModuleType("pytorch_lightning.utilities")
        pl.utilities.rank_zero_only = lambda fn: fn
        sys.modules.update({"pytorch_lightning": pl, "pytorch_lightning.utilities": pl.utilities})
    pkg = types.ModuleType("dlr_authors")
    pkg.__path__ = [std]
    sys.modules["dlr_authors"] = pkg
    return importlib.import_module("dlr_authors.dss")


def authors_layer(src, c):
    """Their DLR layer with the paper's settings for these sizes (configs/model/layer/dlr.yaml)."""
    from omegaconf import DictConfig

    mod = load_authors(src)
    layer = mod.DSS(c["H"], d_state=c["N"], bidirectional=False, transposed=False, max_kernel_length=c["klen"],
                    kernel_type="dlr", dt_min=1e-4, dt_max=1e-1, Lambda_init="omega", version="",
                    lr=DictConfig({"Lambda": 1e-4, "Lambda_re": None, "W": 1e-4}), pykeops=True,
                    kernel_to_real="real")
    return layer, mod.has_pykeops


def family_layer(impl, c):
    """One layer of the S4 family (or DLR) at the sizes of ``FAMILY``."""
    from longsynth.models_ref.models.stack import Block, ModelConfig

    fields = {"layer": impl, **FAMILY[impl]}
    cfg = ModelConfig(d_input=1, d_output=1, H=c["H"], dt_min=1e-3, dt_max=1e-1, **fields)
    return Block(cfg).layer


def analytic_bytes(impl, c):
    """Bytes of the kernel-side tensors one forward materialises (complex64 = 8 bytes)."""
    if impl in FAMILY:
        return None
    Lk = c["klen"] or c["L"]
    if impl == "naive":
        return {"P [N, Lk]": 8 * c["N"] * Lk, "K [H, Lk]": 8 * c["H"] * Lk,
                "[H, N, L] (never built by either)": 8 * c["H"] * c["N"] * c["L"]}
    C = max(c["N"], 1 << (int(Lk ** 0.5) - 1).bit_length())
    return {"T [N, C]": 8 * c["N"] * C, "M [H, Lk/C, N]": 8 * c["H"] * (-(-Lk // C)) * c["N"],
            "K [H, Lk]": 8 * c["H"] * Lk}


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_one(impl, name, device, reps, threads, authors_src=None):
    import torch
    import torch.nn.functional as F

    from longsynth.models_ref.layers.dlr import DLR

    torch.set_num_threads(threads)
    c = CONFIGS[name]
    torch.manual_seed(0)
    extra = {}
    if impl == "authors":
        layer, keops = authors_layer(authors_src, c)
        layer = layer.to(device)
        extra["pykeops"] = keops
        call = lambda u: layer(u)[0]  # noqa: E731  their forward returns (y, state)
    elif impl in FAMILY:
        layer = family_layer(impl, c).to(device)
        call = layer
        extra.update(FAMILY[impl])
    else:
        layer = DLR(c["H"], c["N"], max_kernel_length=c["klen"], dt_min=1e-4, dt_max=1e-1).to(device)
        call = layer
    if impl == "naive":
        def naive_kernel(L):  # paper Figure 4
            Lambda_log = torch.complex(-layer.Lambda_re_sqrt ** 2, layer.Lambda_im)  # [N]
            W = torch.view_as_complex(layer.W)  # [H, N]
            pos = torch.arange(L, device=W.device)  # [L]
            P = (Lambda_log.unsqueeze(-1) * pos).exp()  # [N, L]
            return W.matmul(P).real  # [H, L]

        layer.real_kernel = lambda L: F.pad(naive_kernel(layer.kernel_length(L)), (0, L - layer.kernel_length(L)))
    u = torch.randn(c["B"], c["L"], c["H"], device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    base = rss_bytes()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base_cuda = torch.cuda.memory_allocated()
    times = []
    for i in range(reps + 1):
        layer.zero_grad(set_to_none=True)
        sync()
        t = time.perf_counter()
        call(u).square().mean().backward()
        sync()
        if i:  # the first step is a warm-up
            times.append(time.perf_counter() - t)
    sec = sorted(times)[len(times) // 2]
    if impl in FAMILY:  # the forward alone, after the forward+backward peak was taken
        peak_fb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
        fwd = []
        with torch.no_grad():
            for i in range(reps + 1):
                sync()
                t = time.perf_counter()
                call(u)
                sync()
                if i:
                    fwd.append(time.perf_counter() - t)
        f = sorted(fwd)[len(fwd) // 2]
        extra.update(forward_s=f, forward_tokens_per_s=c["B"] * c["L"] / f)
    out = {"impl": impl, "config": name, **c, **extra, "device": device, "threads": threads,
           "step_s": sec, "tokens_per_s": c["B"] * c["L"] / sec}
    if device == "cuda":
        out["peak_bytes"] = torch.cuda.max_memory_allocated() - base_cuda
    elif impl in FAMILY:
        out["peak_bytes"] = peak_fb
    else:
        out["peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available, and cpu)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "layer.json"))
    ap.add_argument("--authors-src", default=None, help="checkout of ag1988/dlr: time their DLR layer beside ours")
    ap.add_argument("--family", action="store_true", help="S4, S4D and eSSM against DLR at L = 1K, 16K, 64K")
    ap.add_argument("--baselines", action="store_true",
                    help="attention and local attention against DLR (N 4096) at L = 512, 4K, 16K (Table 1's sizes)")
    ap.add_argument("--recurrent", action="store_true",
                    help="s6, s6-signed and gru against DLR (N 1024) at H 64, L = 1K, 4K")
    ap.add_argument("--configs", nargs="+", default=None, help=f"subset of {list(CONFIGS)}")
    ap.add_argument("--mem-cap-gib", type=float, default=16.0, help="address-space cap per run (CPU)")
    ap.add_argument("--one", nargs=2, metavar=("IMPL", "CONFIG"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    import torch

    record = machine(torch=torch.__version__)

    devices = [args.device] if args.device else (["cuda"] if torch.cuda.is_available() else []) + ["cpu"]
    if args.one:
        if devices[0] == "cpu" and args.mem_cap_gib:
            cap = int(args.mem_cap_gib * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        run_one(args.one[0], args.one[1], devices[0], args.reps, args.threads, args.authors_src)
        return
    plan = PLAN
    if args.authors_src:
        load_authors(args.authors_src)  # fail early, in one line, on a wrong path or a missing package
        plan = AUTHORS_PLAN
    if args.family:
        plan = FAMILY_PLAN
    if args.baselines:
        plan = BASELINES_PLAN
    if args.recurrent:
        plan = RECURRENT_PLAN
    if args.configs:
        plan = [(i, n) for i, n in plan if n in args.configs]
    results = []
    for device in devices:
        for impl, name in plan:
            cmd = [sys.executable, __file__, "--one", impl, name, "--device", device, "--reps", str(args.reps),
                   "--threads", str(args.threads), "--mem-cap-gib", str(args.mem_cap_gib)]
            if args.authors_src:
                cmd += ["--authors-src", os.path.abspath(args.authors_src)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode == 0:
                r = json.loads(p.stdout.strip().splitlines()[-1])
            else:
                r = {"impl": impl, "config": name, **CONFIGS[name], "device": device,
                     "failed": (p.stderr.strip().splitlines() or ["killed"])[-1][:200]}
            if impl not in FAMILY:
                r["analytic_bytes"] = analytic_bytes("naive" if impl == "authors" else impl, CONFIGS[name])
            results.append(r)
            peak = f"{r['peak_bytes'] / 2**20:9.0f} MiB" if "peak_bytes" in r else "        -"
            speed = f"{r['tokens_per_s']:12.0f} tok/s  {r['step_s']:7.3f} s" if "step_s" in r else r["failed"]
            if "forward_s" in r:
                speed += f"  (forward {r['forward_tokens_per_s']:10.0f} tok/s {r['forward_s']:7.3f} s)"
            print(f"{device:4s} {impl:8s} {name:17s} {speed}  peak {peak}", flush=True)
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    meta = {"machine": finish({**record, "cuda": cuda}), "time": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join(sys.argv), "results": results}
    for name in sorted({n for _, n in plan}):  # ours / theirs, measured in the same run
        by = {r["impl"]: r for r in results if r["config"] == name and "tokens_per_s" in r}
        if "chunked" in by and "authors" in by:
            ratio = by["chunked"]["tokens_per_s"] / by["authors"]["tokens_per_s"]
            mem = by["authors"]["peak_bytes"] / max(by["chunked"]["peak_bytes"], 1)
            meta.setdefault("ours_vs_authors", {})[name] = {
                "tokens_per_s_ratio": ratio, "peak_memory_ratio_theirs_over_ours": mem}
            print(f"{name}: ours {ratio:.2f}x their tokens/s; their peak memory {mem:.2f}x ours")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(meta, f, indent=2)
    print("wrote", args.json)


if __name__ == "__main__":
    main()
