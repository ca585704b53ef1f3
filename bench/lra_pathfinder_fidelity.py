"""Classic Pathfinder fidelity: our `pathfinder` images against the original generator's.

    python bench/lra_pathfinder_fidelity.py --original DIR [--sets 32-hard,128-hard]
    python bench/lra_pathfinder_fidelity.py --original DIR --write-reference tests/data/lra_pathfinder_original.json
    python bench/lra_pathfinder_fidelity.py --original DIR --sets 32-hard --classifier [--variants]

``--original`` holds ``<size>/<difficulty folder>/`` (imgs/, metadata/) as the original
generator (drewlinsley/pathfinder, run unchanged with LRA's settings; see
docs/tasks/pathfinder.md, "Classic Pathfinder") writes them. For every set found this reads
all their images, generates ``--n`` of ours (default 4 x theirs, at least 200; seed 0,
train) and prints the means per image of ``longsynth.generators.pathfinder.fidelity.PLAIN_STATS`` (their images
carry no path pixels or tips), ours / theirs, the total-variation distance of the nonzero
intensity histograms and the share of label 1. ``--classifier`` adds a two-sample test: a
small CNN (and a logistic regression on intensity histograms) trained to tell as many of ours
as theirs apart, 5-fold held-out accuracy (chance 0.5; one torch thread). ``--variants`` does
the same for ours with local retries of the main paths (``exact_restarts`` off).
bench/pathfinder_original.py makes DIR. Results: bench/results/lra_pathfinder_fidelity.json.
"""
import argparse
import json
import os
import sys

import numpy as np

import longsynth
from longsynth import registry
from longsynth.generators.pathfinder import fidelity
from longsynth.generators.pathfinder.lra import DIFFICULTIES, DIRS, SIZES

TASK = "pathfinder"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--original", required=True,
                    help="folder with <size>/<difficulty folder>/ of the original's output")
    ap.add_argument("--sets", default=",".join(f"{s}-{d}" for s in SIZES for d in DIFFICULTIES))
    ap.add_argument("--n", type=int, default=0, help="our images per set (default: 4 x theirs, at least 200)")
    ap.add_argument("--write-reference", default=None, help="write their summaries to this JSON (for tests)")
    ap.add_argument("--classifier", action="store_true", help="CNN two-sample test per set (needs torch)")
    ap.add_argument("--variants", action="store_true", help="also ours with exact_restarts off")
    ap.add_argument("--json", default="bench/results/lra_pathfinder_fidelity.json")
    args = ap.parse_args(argv)
    results = {}
    print(f"{'set':12s} {'images':>13s}  " + "  ".join(f"{k:>22s}" for k in fidelity.PLAIN_STATS)
          + f"  {'TV':>5s} {'label 1':>13s} {'distr.':>6s}")
    for name in args.sets.split(","):
        size, diff = name.split("-")
        folder = os.path.join(args.original, size, DIRS[diff])
        if not os.path.isdir(os.path.join(folder, "metadata")):
            print(f"{name}: no folder {folder}, skipped", file=sys.stderr)
            continue
        cfg = registry.get(TASK).make_config(size=int(size), difficulty=diff)
        imgs, labels = fidelity.read_original(folder)
        theirs = fidelity.summary(fidelity.plain(imgs), cfg.paddle_thickness)
        theirs["label1"] = float(np.mean(labels))
        n = args.n or max(200, 4 * len(imgs))
        for variant, params in [("", {})] + ([("-local", {"exact_restarts": False})] if args.variants else []):
            b = longsynth.batch(TASK, 0, n, seed=0, size=int(size), difficulty=diff, **params)
            ours = fidelity.summary(fidelity.plain(b["inputs"]), cfg.paddle_thickness)
            ours["label1"] = float(b["targets"].mean())
            ours["distractors_placed"] = float(b["distractors"].mean())
            ours["marker_distance"] = float(np.hypot(*(b["marker_centers"][:, 0] - b["marker_centers"][:, 1]).T).mean())
            tv = fidelity.tv_distance(ours["hist_nonzero"], theirs["hist_nonzero"])
            cells = []
            for k in fidelity.PLAIN_STATS:
                cells.append(f"{theirs[k]:8.4g} {ours[k]:8.4g} {ours[k] / theirs[k]:5.3f}")
            print(f"{name + variant:12s} {len(imgs):5d} / {n:5d}  " + "  ".join(f"{c:>22s}" for c in cells)
                  + f"  {tv:5.3f} {theirs['label1']:6.3f} {ours['label1']:6.3f} {ours['distractors_placed']:6.2f}",
                  flush=True)
            res = {"original": theirs, "ours": ours, "params": params, "tv_nonzero_hist": tv,
                   "ratios": {k: ours[k] / theirs[k] for k in fidelity.PLAIN_STATS}}
            if args.classifier:
                import torch

                torch.set_num_threads(1)
                m = min(len(imgs), n)
                cnn, lr = fidelity.classifier_accuracy(np.stack(imgs[:m]), b["inputs"][:m])
                res["classifier"] = {"images_each": m, "cnn_accuracy": cnn, "histogram_lr_accuracy": lr}
                print(f"{name + variant}: two-sample test, {m} of theirs vs {m} of ours, 5-fold held-out accuracy: "
                      f"CNN {cnn:.3f}, logistic regression on intensity histograms {lr:.3f} (chance 0.5)", flush=True)
            results[name + variant] = res
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    if args.write_reference:
        with open(args.write_reference, "w") as f:
            json.dump({k: v["original"] for k, v in results.items() if not v["params"]}, f, indent=0)
        print(f"their summaries written to {args.write_reference}")


if __name__ == "__main__":
    main()
