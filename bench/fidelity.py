"""Pathfinder-Segmentation fidelity: our images against the authors' generator, side by side.

    python bench/fidelity.py --authors DIR
    python bench/fidelity.py --authors DIR --sizes 128 --n 400 --classifier
    python bench/fidelity.py --authors DIR --write-reference tests/data/pathfinder_authors.json
    python bench/fidelity.py --reference tests/data/pathfinder_authors.json --n 400 --variants

``--authors`` holds one folder per size (128/, 256/, 512/) in the authors' layout
(imgs/, paths/, metadata/). For each size this reads all their images, generates ``--n``
of ours (seed 0, train) with the default preset (the authors' laws) and, with
``--variants``, with the faster options too (every distractor placed; local retries of the
main paths), and prints every statistic of ``longsynth.generators.pathfinder.fidelity.STATS``
(means per image) ours vs theirs with the ratio, plus the
total-variation distance of the nonzero-intensity histograms. ``--classifier`` trains a
small CNN (torch) and a logistic regression on intensity histograms to tell our 128-px
images from theirs and prints held-out accuracies (5-fold). Results go to
bench/results/fidelity.json.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

import longsynth
from longsynth import registry
from longsynth.generators.pathfinder import fidelity

TASK = "pathfinder-seg"


def ours(size, n, **params):
    cfg = registry.get(TASK).make_config(size=size, **params)
    longsynth.batch(TASK, 0, 1, seed=1, size=size, **params)  # load the kernels and the stamp tables
    t = time.perf_counter()
    b = longsynth.batch(TASK, 0, n, seed=0, size=size, **params)
    dt = time.perf_counter() - t
    samples = [{k: v[i] for k, v in b.items()} for i in range(n)]
    s = fidelity.summary(fidelity.ours(samples, cfg.contour_length), cfg.paddle_thickness)
    s["distractors_placed"] = float(b["distractors"].mean())
    s["seconds"] = dt
    return s, samples


def table(size, theirs, rows):
    names = list(rows)
    head = f"{'statistic (mean per image)':44s} {'authors':>9s}" + "".join(f" {n:>12s} {'ratio':>6s}" for n in names)
    ours = ", ".join(f"{n} {r['images']}" for n, r in rows.items())
    print(f"\n## {size} px: authors {theirs['images']} images, ours {ours}")
    print(head)
    for k, doc in fidelity.STATS.items():
        line = f"{k + ': ' + doc:44.44s} {theirs[k]:9.4g}"
        for r in rows.values():
            ratio = r[k] / theirs[k] if theirs[k] else float("nan")
            line += f" {r[k]:12.4g} {ratio:6.3f}"
        print(line)
    line = f"{'histogram of nonzero intensities: TV dist.':44s} {'':9s}"
    for r in rows.values():
        line += f" {fidelity.tv_distance(r['hist_nonzero'], theirs['hist_nonzero']):12.3f} {'':6s}"
    print(line)
    line = f"{'distractors placed (ours: counted)':44s} {'':9s}"
    for r in rows.values():
        line += f" {r['distractors_placed']:12.4g} {'':6s}"
    print(line)
    line = f"{'ms per image (ours: batch, this machine)':44s} {'':9s}"
    for r in rows.values():
        line += f" {1e3 * r['seconds'] / r['images']:12.4g} {'':6s}"
    print(line)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--authors", default=None, help="folder with 128/, 256/, 512/ in the authors' layout")
    ap.add_argument("--reference", default=None,
                    help="their means from a JSON written by --write-reference (a larger set than --authors holds)")
    ap.add_argument("--sizes", default="128,256,512", help="comma-separated sizes")
    ap.add_argument("--n", type=int, default=0, help="our images per size (default: 4 x theirs, at least 24)")
    ap.add_argument("--variants", action="store_true",
                    help="also ours with every distractor placed (distractor_tries=0), and with local retries "
                         "(exact_restarts off)")
    ap.add_argument("--classifier", action="store_true", help="two-sample classifier test at 128 px (needs torch)")
    ap.add_argument("--write-reference", default=None, help="write the authors' summaries to this JSON (for tests)")
    ap.add_argument("--json", default="bench/results/fidelity.json", help="where results go")
    args = ap.parse_args(argv)
    if not (args.authors or args.reference):
        ap.error("give --authors, --reference or both")
    ref = None
    if args.reference:
        with open(args.reference) as f:
            ref = json.load(f)
    results = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        folder = os.path.join(args.authors, str(size)) if args.authors else None
        if ref is None and not os.path.isdir(folder):
            print(f"{size}: no folder {folder}, skipped", file=sys.stderr)
            continue
        cfg = registry.get(TASK).make_config(size=size)
        recs = fidelity.read_authors(folder) if folder and os.path.isdir(folder) else []
        theirs = ref[str(size)] if ref else fidelity.summary(recs, cfg.paddle_thickness)
        n = args.n or max(24, 4 * int(theirs["images"]))
        rows, samples = {}, {}
        rows["ours"], samples["ours"] = ours(size, n)
        if args.variants:
            rows["ours-all"], samples["ours-all"] = ours(size, n, distractor_tries=0)
            rows["ours-local"], samples["ours-local"] = ours(size, n, exact_restarts=False)
        table(size, theirs, rows)
        results[size] = {"authors": theirs, **rows}
        if args.classifier and size == 128 and recs:
            a = np.stack([r[0] for r in recs])
            results[size]["classifier"] = {}
            for name, ss in samples.items():
                m = min(len(a), len(ss))
                b = np.stack([np.asarray(s["inputs"]) for s in ss[:m]])
                cnn, lr = fidelity.classifier_accuracy(a[:m], b)
                print(f"two-sample test, 128 px, {m} of theirs vs {m} of {name}, 5-fold held-out accuracy: "
                      f"CNN {cnn:.3f}, logistic regression on intensity histograms {lr:.3f} (chance 0.5)")
                results[size]["classifier"][name] = {"images_each": m, "cnn_accuracy": cnn, "histogram_lr_accuracy": lr}
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    if args.write_reference:
        os.makedirs(os.path.dirname(args.write_reference) or ".", exist_ok=True)
        with open(args.write_reference, "w") as f:
            json.dump({str(k): v["authors"] for k, v in results.items()}, f, indent=0)
        print(f"authors' summaries written to {args.write_reference}")


if __name__ == "__main__":
    main()
