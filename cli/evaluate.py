"""``validate`` and ``evaluate``: train reference models through the papers' protocols
(longsynth.models_ref; torch is imported only when one runs)."""
import json
import os

import click

from longsynth.cli.common import friendly, shown, shown_lines
from longsynth.models_ref.evaluation import limits  # evaluate and validate bound their options (no torch imported)
from longsynth.escape import visible
from longsynth.progress import count


def _validate_help():
    """validate's help: what it does, then each protocol's preset budget (steps x global
    batch) at both scales, read from the protocols table (models_ref/protocols/registry.py)."""
    from longsynth.models_ref.protocols.mad import GROUPS
    from longsynth.models_ref.protocols.registry import PROTOCOLS

    rows = {}
    for (name, scale), row in PROTOCOLS.items():
        if GROUPS.get(name, name) != name:  # MAD's settings beyond each task's baseline
            continue
        text = f"{count(row['steps'])} x {row['batch_size']}"
        special = {}
        for t, c in row.get("per_task", {}).items():
            if "steps" in c or "batch_size" in c:
                own = count(c.get("steps", row["steps"]))
                own += f" x {c['batch_size']}" if c.get("batch_size", row["batch_size"]) != row["batch_size"] else ""
                special.setdefault(own, []).append(t)
        if special:
            text += " (" + "; ".join(f"{', '.join(ts)}: {n}" for n, ts in special.items()) + ")"
        rows.setdefault(name, {})[scale] = text
    w = max(map(len, rows))  # the longest protocol name: the columns stay aligned
    lines = [f"{name:{w}s} tiny {r.get('tiny', '-'):50s} paper {r.get('paper', '-')}" for name, r in rows.items()]
    return ("Train a reference model on a dataset DIR (or an atomic or token TASK, or a token suite's PROTOCOL, on "
            "the fly) and certify it.\n\n"
            "Exit code: 0 when the certificate passed (or has no verdict), 3 when it FAILED, 1 on an error.\n\n"
            "Data parallel: torchrun --nproc_per_node N --no-python longsynth validate ... (nccl on cuda, gloo on "
            "cpu); rank 0 writes the certificate.\n\nPreset budgets, steps x global batch (--steps and "
            "--batch-size replace them; warmup and evaluations scale with --steps):\n\n\b\n" + "\n".join(lines))


@click.command(help=_validate_help())
@click.argument("target")
@click.option("--model", default=None,
              help="reference model [default: dlr; for a token task its positive control: attention, s6, gru, lstm or "
                   "stack-rnn, docs/evaluate.md]; where DLR is expected to fail an atomic task, the paper's best model "
                   "trains beside it")
@click.option("--scale", type=click.Choice(["tiny", "paper"]), default="tiny", show_default=True,
              help="tiny: minutes on a CPU; paper: the paper's configuration")
@click.option("--steps", type=int, default=None, help="training steps [default: the preset's]")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True, help="where to train")
@click.option("--report-dir", type=click.Path(file_okay=False), default=None,
              help="where to write the certificate [default: DIR/validation/<model>-<time>/]")
@click.option("--batch-size", type=click.IntRange(1, limits.MAX_BATCH), default=None,
              help="global batch, split over torchrun's processes [default: the preset's]")
@click.option("--amp/--no-amp", default=None, help="bf16 autocast [default: on for cuda, off for cpu]")
@click.option("--compile", "compile_", is_flag=True, help="torch.compile the model")
@click.option("--checkpoint-activations", is_flag=True, help="recompute each block in the backward pass (less memory)")
@click.option("--permute-targets", is_flag=True,
              help="negative control: targets shuffled across each batch's samples; the certificate must fail")
@click.option("--json", "as_json", is_flag=True,
              help="print the certificate's main fields as JSON instead of a summary")
@click.option("--threads", type=click.IntRange(1, limits.MAX_THREADS), default=1, show_default=True,
              help="torch threads on the CPU (one is fastest for the tiny presets on a busy machine)")
@friendly
def validate(target, model, scale, steps, device, report_dir, batch_size, amp, compile_, checkpoint_activations,
             permute_targets, as_json, threads):
    try:
        from longsynth.models_ref.evaluation.validate import validate as run
    except ImportError as e:
        raise click.ClickException(f"validate needs PyTorch ({e}); pip install torch") from None
    if steps is not None and not 1 <= steps <= limits.MAX_STEPS:
        raise click.ClickException(f"--steps must be >= 1 and <= {limits.MAX_STEPS:,}, got {steps:,}")
    report = run(target, model=model, scale=scale, steps=steps, device=device, report_dir=report_dir,
                 batch_size=batch_size, amp=amp, compile=compile_, checkpoint_activations=checkpoint_activations,
                 permute_targets=permute_targets, threads=threads)
    if report.get("rank", 0) == 0:
        if as_json:
            keys = ("final", "best", "test", "paper", "positive_control", "certificate", "report_dir")
            click.echo(json.dumps({k: report[k] for k in keys if k in report}, indent=1))
        else:
            from longsynth.models_ref.reports.report import summary

            click.echo(shown_lines(summary(report)))
        if (report.get("certificate") or {}).get("passed") is False:
            raise SystemExit(CERTIFICATE_FAILED)  # a CI job can gate on it (docs/validation.md)


CERTIFICATE_FAILED = 3  # validate's exit code for a FAILED certificate (1: an error, 0: passed or no verdict)


def _lrs(ctx, param, value):
    """--lr: finite positive numbers (nan, inf and 1e309 are refused), at most MAX_LRS of them."""
    import math

    from longsynth.models_ref.evaluation.limits import MAX_LRS

    if value is None:
        return None
    if len(value) > 20 * MAX_LRS:
        raise click.BadParameter(f"at most {MAX_LRS} learning rates; got {len(value):,} characters")
    try:
        lrs = tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"comma-separated numbers, e.g. 1e-3,3e-3; got {value!r}") from None
    if not lrs or any(not (math.isfinite(lr) and lr > 0) for lr in lrs):
        raise click.BadParameter(f"learning rates must be finite numbers > 0, got {value!r}")
    if len(lrs) > MAX_LRS:
        raise click.BadParameter(f"at most {MAX_LRS} learning rates, got {len(lrs)}")
    return lrs


@click.command()
@click.argument("model")
@click.option("--suite", required=True,
              help="a task (select, cumsum, ...), a group (atomic: Table 1's 11 tasks; atomic-512: its L = 512 "
                   "columns; table2: Shift at 2^8..2^20), listops-subtrees, pathfinder-seg-128|256|512, "
                   "lra-pathfinder, path-x, lra-listops; the field's token suites mqar, h3-synthetics, "
                   "selective-copying, induction-heads, state-tracking, word-problem, mad (mad-baselines), chomsky "
                   "(chomsky-regular, chomsky-dcf, chomsky-cs: one level; chomsky-TASK: one task); or a comma list")
@click.option("--scale", type=click.Choice(["tiny", "laptop", "paper"]), default="tiny", show_default=True,
              metavar="SCALE", help="tiny, laptop or paper. tiny: the protocols shrunk to minutes on a CPU; "
                                    "laptop: the papers' lengths, test lengths, widths and batch at about an hour a "
                                    "run on one core (the recall, state-tracking, selective-copying, induction-heads "
                                    "and Chomsky suites); paper: the papers' own recipes")
@click.option("--steps", type=click.IntRange(1, limits.MAX_STEPS), default=None,
              help="training steps per run [default: the protocol's]; the lr schedule, warmup and evaluations "
                   "scale with it, the batch and data do not (docs/evaluate.md)")
@click.option("--lr", "lrs", callback=_lrs, default=None,
              help="learning rates to sweep, comma-separated; the best by validation is reported "
                   "[default: the built-in model's, else the protocol's]")
@click.option("--seeds", type=click.IntRange(1, limits.MAX_SEEDS), default=1, show_default=True,
              help="seeds per learning rate (model init and data order); the report gives mean and spread")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True, help="where to train")
@click.option("--jobs", type=click.IntRange(1, limits.MAX_JOBS), default=1, show_default=True,
              help="runs at once, one process each (one torch thread each on the CPU; several share a GPU)")
@click.option("--dask", default=None, metavar="ADDRESS",
              help="submit each run to this Dask scheduler (tcp://host:port or a scheduler file)")
@click.option("--data", type=click.Path(file_okay=False), default=None,
              help="stored datasets: one directory per task named by its suite (DIR/listops-subtrees, ...) or one "
                   "dataset [default: generated on first use into $LONGSYNTH_CACHE/data, else ~/.cache/longsynth/data]")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="report directory (report.json, report.md, report.png, runs/); rerunning resumes it")
@click.option("--threads", type=click.IntRange(1, limits.MAX_THREADS), default=1, show_default=True,
              help="torch threads per run on the CPU (with --jobs N: N x threads in all)")
@click.option("--edited", type=click.Choice(["redo", "refuse"]), default="redo", show_default=True,
              help="a run in --out whose files changed since it finished (or whose checkpoint is damaged): train "
                   "it again, or stop with one line")
@click.option("--dry-run", is_flag=True,
              help="print the plan and an estimate of its wall time on --device (a few timed training steps per "
                   "task), train nothing and write nothing into --out")
@friendly
def evaluate(model, suite, scale, steps, lrs, seeds, device, jobs, dask, data, out, threads, edited, dry_run):
    """Run MODEL through the papers' protocols and report it beside the papers' figures.

    \b
    MODEL is a built-in name:
      dlr, dss, s4, s4d, essm, attention, attention-ff, local-attention,
      dlr-prod, dlr-real, dlr-6, dlr-d1, s6, s6-signed, s6-nogate, s4d-nogate,
      gru, deltanet, deltanet-signed;
      on mqar: zoology-attention, base-conv, hyena, h3;
      on h3-synthetics (H3's Table 1 as safari builds it): safari-attention,
      safari-s4d, h3;
      on regbench: seq-icl-transformer, seq-icl-lstm;
      on the chomsky suites: rnn, lstm, stack-rnn, tape-rnn,
      chomsky-transformer;
      on the other token suites: lstm (two blocks of torch's LSTM);
    or path/to/file.py:function or package.module:function, a function that
    takes a longsynth.ModelSpec and returns a torch.nn.Module mapping
    [B, T, d_input] (or tokens [B, T]) to [B, T, d_output] (docs/evaluate.md).
    """  # \b: click keeps these lines as written (wrapped, a name would split at its hyphen)
    try:
        from longsynth.models_ref.evaluation.sweep import Settings
        from longsynth.models_ref.evaluation.sweep import evaluate as run
        from longsynth.models_ref.evaluation.validate import check_device
    except ImportError as e:
        raise click.ClickException(f"evaluate needs PyTorch ({e}); "
                                   "pip install \"longsynth[eval]\"") from None
    check_device(device)
    settings = Settings(scale=scale, steps=steps, lrs=lrs, seeds=seeds, device=device, jobs=jobs, dask=dask,
                        data=data, threads=threads, edited=edited)
    if dry_run:
        from longsynth.models_ref.evaluation.sweep import dry_run as estimate

        click.echo(shown_lines(estimate(model, suite, out=out, settings=settings,
                                        notify=lambda line: click.echo(visible(line), err=True)).text()))
        return
    try:
        report = run(model, suite, out=out, settings=settings, notify=lambda line: click.echo(visible(line), err=True))
    except KeyboardInterrupt:
        click.echo(f"interrupted: finished runs keep their certificates and unfinished ones their last checkpoint "
                   f"(saved at every evaluation) in {shown(out)}; rerun the same command to resume", err=True)
        raise SystemExit(130) from None
    click.echo(shown_lines(report.table()))
    click.echo(f"report: {shown(os.path.join(out, 'report.md'))} (and report.json, report.png)")
