"""Commands that read a stored dataset or the task list and print text: ``list``, ``info``
and ``verify``."""
import dataclasses
import json
import math
import os

import click

from longsynth import registry, store
from longsynth.cli.common import friendly, shown
from longsynth.progress import Bar, Samples, count


@click.command("list")
def list_tasks():
    """List the tasks, one line each: family, the default number of samples and its size
    on disk, a summary and the default parameters."""
    rows = []
    for name, t in registry.all_tasks().items():
        resolved = t.make_config()
        params = " ".join(f"{f.name}={getattr(resolved, f.name)}{'*' if f.default is None else ''}"
                          for f in dataclasses.fields(t.config))
        n = t.default_num_samples
        ragged = any(k.ragged for k in t.keys(resolved).values())
        size = store.estimate_bytes(t, resolved, store.default_splits(n, t.split_percent), 0,
                                    store.default_shard_size(t, resolved), draw=False)
        size = ("<= " if ragged else "") + store.human(size)
        rows.append((name, t.family, count(n), size, f"{t.summary} ({params})"))
    # every column as wide as its widest entry (a name, a family, a count or a size): the summaries start at one offset
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    for name, family, n, size, text in rows:
        click.echo(f"{name:{w[0]}s} {family:{w[1]}s} {n:>{w[2]}s} samples {size:>{w[3]}s}  {text}")
    click.echo("\nsamples: gen's default --num-samples (split train/val/test by the task's shares), with its size "
               "on disk uncompressed (<=: at most, for variable-length samples; gen --dry-run measures it).\n"
               "*: a value the task's preset derives from other parameters (pathfinder-seg "
               "picks its stroke widths, distractors and margins from --size); give the option to set it.")


@click.command()
@click.argument("root", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--samples", type=click.IntRange(1), default=None,
              help="statistics over the first N samples of each split [default: every sample]")
@friendly
def info(root, as_json, samples):
    """Configuration, counts, sizes, keys, and per split value statistics, class balance, token
    marginals and (parity, modular arithmetic) sequence lengths of a dataset."""
    with Samples("info") as bar:
        s = store.info(root, samples=samples, progress=None if as_json else bar)
    if as_json:
        click.echo(json.dumps(s, indent=1))
        return
    src = s.get("source")
    origin = (f"imported from {shown(src['repo'])} ({len(src['files'])} file(s))" if src else f"seed {s['seed']}")
    click.echo(shown(f"{s['task']}  {origin}  {'complete' if s['complete'] else 'INCOMPLETE'}  "
                     f"compression {s['compression']}  longsynth {s['versions']['longsynth']}"))
    click.echo("params: " + shown(", ".join(f"{k}={v}" for k, v in s["params"].items())))
    if s["command"]:
        click.echo(f"made by (the command recorded in the manifest): {shown(s['command'])}")
    for split, sp in s["splits"].items():
        click.echo(shown(f"  {split:5s} {count(sp['count']):>9s} samples  {count(sp['shards']):>4s} shards  "
                         f"{store.human(sp['bytes']):>9s}  digest {str(sp['digest'])[:16]}"))
    if "stats_samples" in s:
        per = ", ".join(f"{k} {count(v)}" for k, v in s["stats_per_split"].items())
        whole = all(v == s["splits"][k]["count"] for k, v in s["stats_per_split"].items())
        click.echo(f"statistics over {'all ' if whole else ''}{count(s['stats_samples'])} samples ({per}):")
    splits = list(s["stats"])
    for k, spec in s["keys"].items():
        shape = ("[n, " if spec["ragged"] else "[") + ", ".join(map(str, spec["shape"])) + "]"
        head = f"  {k:16s} {spec['dtype']:8s} {shape:14s}"
        rows = [(split, s["stats"][split].get(k)) for split in splits]
        rows = [(split, st) for split, st in rows if st] or [(None, None)]
        for i, (split, st) in enumerate(rows):  # a line per split: train's and test's values are not pooled
            stats = (f"  {split:5s} min {st['min']:.4g} max {st['max']:.4g} mean {st['mean']:.4g} std {st['std']:.4g}"
                     if st else "")
            if st and st.get("nonfinite"):
                stats += f"  ({', '.join(f'{count(n)} {what}' for what, n in st['nonfinite'].items() if n)}: left out)"
            click.echo(shown((head if i == 0 else " " * len(head)) + stats))
    if s.get("tokens"):
        first = next(iter(s["tokens"].values()))
        click.echo(f"tokens: vocabulary {first['vocab_size']}; per split: scored positions per sample (targets != "
                   f"-100), distinct ids and the most frequent")
        for split, tk in s["tokens"].items():
            sc = tk["scored_per_sample"]
            click.echo(f"  {split:5s} scored per sample: min {sc['min']} mean {sc['mean']:.2f} max {sc['max']}, "
                       f"{count(sc['total'])} in all")
            for name in ("inputs", "targets"):
                t = tk[name]
                top = "  ".join(f"{i}: {100 * p:.2f}%" for i, p in t["top"])
                out = f", {count(t['outside_vocab'])} outside the vocabulary" if t["outside_vocab"] else ""
                click.echo(f"        {name:7s} {count(t['distinct'])} distinct ids{out}; most frequent: {top}")
    if s.get("lengths"):
        click.echo(f"sequence lengths per split ({shown(s.get('length_definition') or 'n')}):")
        for split, ln in s["lengths"].items():
            click.echo(f"  {split:5s} min {ln['min']} median {ln['median']:g} mean {ln['mean']:.1f} max {ln['max']} "
                       f"({len(ln['counts'])} distinct lengths)")
    if s.get("balance"):
        click.echo("class balance of targets (share of each value):")
        for split, shares in s["balance"].items():
            click.echo(f"  {split:5s} " + "  ".join(f"{v}: {100 * p:.1f}%" for v, p in shares.items()))
    if "validation" in s:
        v = s["validation"]
        click.echo(f"validation: {json.dumps(v.get('final', v.get('metrics', {})))} ({shown(v['path'])})")


def _seconds(ctx, param, value):
    """--time-limit: a finite number of seconds > 0 and at most 1e9 (a thread's timer takes no more; nan and inf are
    refused, which a FloatRange lets through)."""
    if not (math.isfinite(value) and 0 < value <= 1e9):
        raise click.BadParameter(f"must be a number of seconds > 0 and at most 1e9, got {value!r}")
    return value


@click.command()
@click.argument("root", type=click.Path())
@click.option("--deep", is_flag=True, help="also regenerate sampled indices and compare bytes")
@click.option("--samples", type=click.IntRange(1), default=16, show_default=True,
              help="indices per split checked by --deep (>= 1)")
@click.option("--authors", "checkout", type=click.Path(file_okay=False), default=None,
              help="also make every split again with the authors' own code from CHECKOUT, a checkout of their "
                   "repository at the commit docs/authors-data.md names, and compare every row (datasets made with "
                   "--authors-stream). This RUNS that checkout's Python code (in a child Python): name one you trust")
@click.option("--time-limit", type=float, default=3600.0, show_default=True, callback=_seconds,
              help="seconds the authors' code may run (with --authors; > 0, at most 1e9); past it, it is ended with "
                   "no verdict")
@friendly
def verify(root, deep, samples, checkout, time_limit):
    """Check checksums, structure and digests of a stored dataset; an unfinished one is
    told apart from a damaged one. With --authors, compare it with the authors' own code."""
    m = store.read_manifest(root)
    shards = sum(len(s["shards"]) for s in m["splits"].values())
    with Bar(total=shards, desc="verify", unit="shards") as bar:
        def step(name):
            bar.set_postfix_str(name, refresh=False)
            bar.update(1)

        c = store.check(root, deep=deep, samples=samples, progress=step)
    if c.damage:
        for p in c.damage:
            click.echo(shown(p), err=True)
        raise click.ClickException(f"{shown(root)}: damaged: {len(c.damage)} problem(s) found"
                                   + ("" if c.complete else " (and the dataset is incomplete)"))
    if not c.complete:
        made = (f"; the command recorded in the manifest (check it before you run it): {shown(m['command'])}"
                if m.get("command") else "")
        raise click.ClickException(f"{shown(root)}: incomplete, not damaged: {count(c.written)} of "
                                   f"{count(c.total)} samples written and intact; the same gen command resumes "
                                   f"it{made}")
    regenerated = sum(min(samples, int(n)) for n in m["counts"].values())  # a split shorter than --samples: all
    if m.get("stream") == "imported":  # no seed regenerates them (docs/format.md, "Imported data")
        deep_text = f", every one of them checked against {m['task']}'s definition (imported: none regenerated)"
    else:
        deep_text = f", {count(regenerated)} of them regenerated and identical (up to {count(samples)} per split)"
    click.echo(f"OK: {count(shards)} shards, {count(c.total)} samples" + (deep_text if deep else ""))
    if checkout is not None:
        _verify_authors(root, checkout, time_limit)


def _verify_authors(root, checkout, time_limit):
    """verify --authors: every row against the authors' code (longsynth.crosscheck)."""
    from longsynth import crosscheck

    click.echo(f"running the authors' code from {shown(os.path.abspath(checkout))} ...", err=True)
    r = crosscheck.compare(root, checkout, progress=lambda split: click.echo(f"  {split}: compared", err=True),
                           time_limit=time_limit)
    if r.problems:
        for p in r.problems:
            click.echo(shown(p), err=True)
        raise click.ClickException(f"{shown(root)}: differs from the authors' code: {len(r.problems)} row(s) "
                                   "shown above"
                                   + (" (the first 10)" if len(r.problems) >= 10 else ""))
    click.echo(f"OK: all {count(r.rows)} rows equal the authors' code's, element for element")
