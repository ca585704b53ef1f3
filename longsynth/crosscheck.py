"""A dataset's rows made again by the authors' own code, from a checkout the user names
(``longsynth verify DIR --authors CHECKOUT``; docs/authors-data.md, "Checking a dataset against
the authors' code").

This runs the checkout's Python code, in a child Python (``compare``): the user's choice, which the
command's help says. Nothing of the authors' code is copied into longsynth; each loader below imports
their module from the checkout and registers stand-ins only for imports their generator never
uses. Each runner calls the authors' generator as the task's page says longsynth's
``--authors-stream`` equals it, for the dataset's parameters, seed and split counts, and maps
their output to our keys by the task's documented mapping (token ids as they are, -100 at
unscored targets).

    zoology(path)      -> zoology.data.multiquery_ar.multiquery_ar   (HazyResearch/zoology @ d88d6f54)
    safari(path)       -> the module src.dataloaders.synthetics        (HazyResearch/safari @ 02220c69)
    s4_copying(path)   -> src/dataloaders/datasets/copying.py          (state-spaces/s4 @ e757cef5)
    mad(path)          -> mad.data.instances                           (athms/mad-lab @ 0f49a452)
    word_problem(path) -> src/generate_data.py                          (jopetty/word-problem @ 8f910f92)
    formal_language(path) -> FormLangDatasetGenerator                  (automl/unlocking_state_tracking @ df8f8407)
    chomsky(path)      -> tasks/{regular,dcf,cs}/*.py (google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be)
    ssm_copy(path)     -> synthetic_exps/data_utils.py                (sjelassi/transformers_ssm_copy @ 1188c47)
    _regbench          -> src/dataloaders/dfa.py, in a child Python   (berlino/seq_icl @ 9b9223d; needs pythomata 0.3.2)
"""
import contextlib
import csv
import dataclasses
import importlib.util
import math
import os
import pathlib
import sys
import tempfile
import types

import numpy as np

from longsynth import registry
from longsynth.errors import LongsynthError

IGNORE = -100
_SEEN = {}  # (loader, checkout) -> module: a checkout is imported once per process


# ---------------------------------------------------------------- loaders


def _once(fn):
    def load(path):
        key = (fn.__name__, os.path.realpath(path))
        if key not in _SEEN:
            _SEEN[key] = fn(os.path.realpath(path))
        return _SEEN[key]
    load.__doc__ = fn.__doc__
    load.__name__ = fn.__name__
    return load


_PATHS = []  # the checkout folders put on sys.path here


def _forget(*packages):
    """Forget the modules of ``packages`` (imported from an earlier checkout)."""
    for name in [m for m in sys.modules if m in packages or m.startswith(tuple(p + "." for p in packages))]:
        del sys.modules[name]


def _fresh(path, *packages):
    """Put ``path`` first on sys.path in place of any checkout put there before, and forget the
    modules of ``packages`` imported from it."""
    _forget(*packages)
    while _PATHS:
        old = _PATHS.pop()
        if old in sys.path:
            sys.path.remove(old)
    sys.path.insert(0, path)
    _PATHS.append(path)
    importlib.invalidate_caches()


def _by_path(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or not os.path.isfile(path):
        raise LongsynthError(f"--authors: {path} not found: is it a checkout of the right repository?")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@_once
def zoology(path):
    """zoology's package imports ``wandb`` (logging); an empty stand-in when it is not installed."""
    _fresh(path, "zoology")
    try:
        import wandb  # noqa: F401
    except ImportError:
        sys.modules["wandb"] = types.ModuleType("wandb")
    from zoology.data.multiquery_ar import multiquery_ar

    return multiquery_ar


@_once
def safari(path):
    """safari's ``src`` and ``src.dataloaders`` without their ``__init__`` (which imports every
    dataset: torchvision, einops, ...), and a stand-in ``src.dataloaders.base`` with an empty
    ``SequenceDataset``."""
    _fresh(path, "src")
    for name, sub in (("src", "src"), ("src.dataloaders", os.path.join("src", "dataloaders"))):
        pkg = types.ModuleType(name)
        pkg.__path__ = [os.path.join(path, sub)]
        sys.modules[name] = pkg
    base = types.ModuleType("src.dataloaders.base")
    base.SequenceDataset = type("SequenceDataset", (), {})
    sys.modules["src.dataloaders.base"] = base
    from src.dataloaders import synthetics

    return synthetics


@_once
def s4_copying(path):
    """S4's copying module, loaded by path; ``src.utils.distributed`` (unused by it) a stand-in."""
    for name in ("src", "src.utils"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["src.utils.distributed"] = sys.modules["src.utils"].distributed = types.ModuleType("distributed")
    return _by_path("s4_copying", os.path.join(path, "src", "dataloaders", "datasets", "copying.py"))


@_once
def ssm_copy(path):
    """Repeat After Me's data module (torch and NumPy), loaded by path."""
    return _by_path("ssm_copy_data_utils", os.path.join(path, "synthetic_exps", "data_utils.py"))


@_once
def mad(path):
    """MAD's instance functions (NumPy only), loaded by path."""
    return _by_path("mad_instances", os.path.join(path, "mad", "data", "instances.py"))


@_once
def word_problem(path):
    """The word-problem repository's ``generate_data`` (needs polars, fire, pyrootutils and
    jopetty/abstract_algebra installed)."""
    _fresh(os.path.join(path, "src"), "generate_data")
    import generate_data

    return generate_data


@_once
def formal_language(path):
    """unlocking_state_tracking's formal-language dataset (needs torch and torchmetrics)."""
    _fresh(path, "xlstm")
    from xlstm.experiments.data.formal_language.formal_language_dataset import (
        FormLangDatasetConfig,
        FormLangDatasetGenerator,
    )

    return FormLangDatasetConfig, FormLangDatasetGenerator


_CHOMSKY_PACKAGE = "neural_networks_chomsky_hierarchy"  # the name their modules import themselves by
_CHOMSKY_CLASSES = {  # our task name without chomsky- -> (their module under tasks/, its class)
    "even-pairs": ("regular.even_pairs", "EvenPairs"), "parity-check": ("regular.parity_check", "ParityCheck"),
    "cycle-navigation": ("regular.cycle_navigation", "CycleNavigation"),
    "modular-arithmetic": ("regular.modular_arithmetic", "ModularArithmetic"),
    "modular-arithmetic-brackets": ("dcf.modular_arithmetic_brackets", "ModularArithmeticBrackets"),
    "reverse-string": ("dcf.reverse_string", "ReverseString"),
    "solve-equation": ("dcf.solve_equation", "SolveEquation"),
    "stack-manipulation": ("dcf.stack_manipulation", "StackManipulation"),
    "binary-addition": ("cs.binary_addition", "BinaryAddition"),
    "binary-multiplication": ("cs.binary_multiplication", "BinaryMultiplication"),
    "compute-sqrt": ("cs.compute_sqrt", "ComputeSqrt"), "duplicate-string": ("cs.duplicate_string", "DuplicateString"),
    "missing-duplicate-string": ("cs.missing_duplicate_string", "MissingDuplicateString"),
    "odds-first": ("cs.odds_first", "OddsFirst"), "bucket-sort": ("cs.bucket_sort", "BucketSort"),
}


@_once
def chomsky(path):
    """The Chomsky hierarchy's task modules (needs jax and chex), imported under their package name (their
    modules import each other by it): a package of that name whose path is the checkout."""
    if not os.path.isdir(os.path.join(path, "tasks")):
        raise LongsynthError(f"--authors: {path} has no tasks/ folder: is it a checkout of "
                             "google-deepmind/neural_networks_chomsky_hierarchy?")
    _forget(_CHOMSKY_PACKAGE)
    package = types.ModuleType(_CHOMSKY_PACKAGE)  # the checkout as that package, named in memory: no link on disk
    package.__path__ = [path]
    sys.modules[_CHOMSKY_PACKAGE] = package
    return {name: getattr(importlib.import_module(f"{_CHOMSKY_PACKAGE}.tasks.{module}"), cls)
            for name, (module, cls) in _CHOMSKY_CLASSES.items()}


# ---------------------------------------------------------------- runners: (checkout, cfg, seed, counts, split, stream)


def _mqar(path, cfg, seed, counts, split, stream):
    from longsynth.generators.recall.mqar import AUTHORS_SEED_OFFSET

    seg = zoology(path)(vocab_size=cfg.vocab_size, num_examples=counts[split], input_seq_len=cfg.input_seq_len,
                        seed=seed + AUTHORS_SEED_OFFSET[split], power_a=cfg.power_a, num_kv_pairs=cfg.num_kv_pairs,
                        num_passes=cfg.num_passes, random_non_queries=False)
    return {"inputs": seg.inputs.numpy(), "targets": seg.labels.numpy()}


def _safari(task):
    def run(path, cfg, seed, counts, split, stream):
        from longsynth.generators.recall.safari import AUTHORS_SEED_OFFSET, _authors_rows

        syn = safari(path)
        special = {"copy_prefix": "=>", "noop": "."}
        vocab = syn.Vocab(cfg.vocab_size - len(special), special_vocabs=special)
        tok, rng = syn.Tokenizer(vocab), np.random.default_rng(seed + AUTHORS_SEED_OFFSET[split])
        if task == "associative-recall":
            make = lambda: syn.generate_assoc_recall(vocab, cfg.input_seq_len, cfg.num_keys, rng,  # noqa: E731
                                                     allow_dot=cfg.allow_dot)
            answer = 1
        else:
            make = lambda: syn.generate_induction_head(vocab, cfg.input_seq_len, "=>", cfg.induction_len,  # noqa: E731
                                                       cfg.induction_num_triggers, rng)
            answer = cfg.induction_len
        rows = [tok.tokenize(make())["input_ids"] for _ in range(counts[split])]
        return _authors_rows(rows, len(rows[0]) if rows else 0, split, answer)
    return run


def _copying(path, cfg, seed, counts, split, stream):
    import torch

    torch.manual_seed(seed + {"train": 0, "val": 1, "test": 2}[split])
    x, y = s4_copying(path).torch_copying_data(cfg.L, cfg.M, cfg.A, variable=True, batch_shape=(counts[split],))
    targets = np.full(tuple(x.shape), IGNORE, dtype=np.int64)
    targets[:, cfg.L + cfg.M:] = y.numpy()
    return {"inputs": x.numpy(), "targets": targets}


def _repeat(task):
    def run(path, cfg, seed, counts, split, stream):
        import random

        from longsynth.generators.repeat.tasks import KINDS

        du = ssm_copy(path)
        kind = ("copy", "prefix_ngram", "suffix_ngram", "duplicate_ngram")[KINDS[task]]
        tokenizer, to_token, _ = du.get_tokenizer(types.SimpleNamespace(vocab_size=cfg.vocab_size))
        test = split == "test"
        common = dict(vocab_size=cfg.vocab_size, n_gram=getattr(cfg, "n_gram", 0), length_answer=cfg.length_answer,
                      sequence_length=cfg.context_len, batch_size=counts[split],
                      min_length=cfg.min_eval_len if test else cfg.min_train_len,
                      max_length=cfg.max_eval_len if test else cfg.max_train_len)
        data = (du.EvalCopyDataset(tokenizer, to_token, eval_task=kind, **common) if test
                else du.CopyDataset(tokenizer, train_task=kind, **common))
        np.random.seed(seed)
        random.seed(seed)
        batch = data[0]  # one batch of the split's count: their rows, drawn in turn
        ids, mask = batch["input_ids"].numpy().astype(np.int64), batch["mask"].numpy()
        return {"inputs": ids[:, :-1], "targets": np.where(mask[:, 1:] == 1, ids[:, 1:], IGNORE)}
    return run


MAD_FUNCTIONS = {
    "mad-recall": "generate_in_context_recall_instance",
    "mad-noisy-recall": "generate_noisy_in_context_recall_instance",
    "mad-fuzzy-recall": "generate_fuzzy_in_context_recall_instance",
    "mad-selective-copying": "generate_selective_copying_instance",
    "mad-compression": "generate_compression_instance",
    "mad-memorization": "generate_memorization_instance",
}
MAD_OURS_ONLY = ("blank_after_last", "ignore_noise_targets")


def _mad(task):
    def run(path, cfg, seed, counts, split, stream):
        """MAD's instance function on one ``default_rng(seed)`` after ``np.random.seed(seed)``:
        through every split before this one (train, val, test) for the pipeline (its
        generate_data), from a fresh generator for the per-split stream."""
        from longsynth.generators.mad.authors import PIPELINE_ORDER

        inst = mad(path)
        fn = getattr(inst, MAD_FUNCTIONS[task])
        kw = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in MAD_OURS_ONLY and k != "kv_map_seed"}
        if task == "mad-memorization":
            kw["kv_map_seed"] = cfg.kv_map_seed
            if stream == "authors-pipeline":  # MADConfig's map: vocab_size - 1 tokens
                kw["kv_map"] = inst.generate_kv_map(vocab_size=cfg.vocab_size - 1, k_motif_size=1, v_motif_size=1,
                                                    seed=cfg.kv_map_seed)
        state = np.random.get_state()
        try:
            np.random.seed(seed)
            rng = np.random.default_rng(seed)
            ahead = PIPELINE_ORDER[: PIPELINE_ORDER.index(split)] if stream == "authors-pipeline" else ()
            for s in ahead:
                for _ in range(counts.get(s, 0)):
                    fn(rng=rng, is_training=s == "train", **kw)
            pairs = [fn(rng=rng, is_training=split == "train", **kw) for _ in range(counts[split])]
        finally:
            np.random.set_state(state)
        return {"inputs": np.stack([p[0] for p in pairs]), "targets": np.stack([p[1] for p in pairs])}
    return run


def _word_problem(path, cfg, seed, counts, split, stream):
    from longsynth.generators.state.word_problem import cayley_table, group_order, parse_group, prefix_products

    group = cfg.group if "_x_" in cfg.group else cfg.group.replace("x", "_x_")
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(sys.stderr):
        word_problem(path).main(group=group, k=cfg.k, samples=counts[split], data_dir=pathlib.Path(tmp), seed=seed,
                                overwrite=True)
        with open(os.path.join(tmp, f"{group}={cfg.k}.csv")) as f:
            rows = list(csv.DictReader(f))
    seqs = np.array([r["input"].split() for r in rows], dtype=np.int64).reshape(len(rows), cfg.k)
    order = group_order(parse_group(cfg.group))
    bos = np.full((len(rows), 1), order + 1, dtype=np.int64)  # the vocabulary's BOS: |G| + 1
    prods = prefix_products(cayley_table(cfg.group), seqs)
    theirs = np.array([r["target"].split() for r in rows], dtype=np.int64).reshape(len(rows), cfg.k)
    if not np.array_equal(prods, theirs):
        raise LongsynthError("--authors: the authors' CSV holds other prefix products than the group's table: "
                             "the checkout's group definitions differ from longsynth's")
    return {"inputs": np.concatenate([bos, seqs], axis=1), "targets": np.concatenate([bos, theirs], axis=1)}


_FORMAL_TYPE = {"parity": "parity", "modular-arithmetic": "modular_arithmetic"}
_THEIR_SPLIT = {"train": "train", "val": "validation", "test": "test"}


def _formal(task):
    def run(path, cfg, seed, counts, split, stream):
        Config, Generator = formal_language(path)
        lang = _FORMAL_TYPE[task] + ("_with_brackets" if getattr(cfg, "brackets", False) else "")
        test = {"min_sequence_length": cfg.test_min_sequence_length,
                "max_sequence_length": cfg.test_max_sequence_length}
        kw = {"synth_lang_type": lang, "vocab_size": cfg.vocab_size, "seed": seed, "enable_mask": True,
              "context_length": cfg.context_length, "min_sequence_length": cfg.min_sequence_length,
              "max_sequence_length": cfg.max_sequence_length,
              "count": {_THEIR_SPLIT[s]: counts.get(s, 0) for s in _THEIR_SPLIT},
              "subpar": {"validation": dict(test), "test": dict(test)}}
        if getattr(cfg, "mult", False):
            kw["mult"] = True
        gen = Generator(Config(**kw))
        part = {"train": gen.train_split, "val": gen.validation_split["validation"],
                "test": gen.test_split["test"]}[split]
        pairs = [part[i] for i in range(counts[split])]
        targets = np.stack([p[1].numpy() for p in pairs]).astype(np.int64)
        return {"inputs": np.stack([p[0].numpy() for p in pairs]), "targets": np.where(targets == -1, IGNORE, targets)}
    return run


def _chomsky(task):
    def run(path, cfg, seed, counts, split, stream):
        import random

        import jax

        from longsynth.generators.chomsky._common import LAYOUTS
        from longsynth.generators.chomsky.authors import params_of, rows

        builder = chomsky(path)[task.removeprefix("chomsky-")]
        kw = params_of(cfg)
        if "operators" in kw:
            kw["operators"] = list(kw["operators"])
        before = jax.config.jax_threefry_partitionable
        jax.config.update("jax_threefry_partitionable", False)  # the layout the authors ran
        try:
            obj = builder(**kw)  # a fresh object, as TASK_BUILDERS makes it (brackets: mult as the config says)
            random.seed(seed)
            np.random.seed(seed)
            b = obj.sample_batch(jax.random.PRNGKey(seed), counts[split], cfg.max_length)
        finally:
            jax.config.update("jax_threefry_partitionable", before)
        raw = {"inputs": np.argmax(np.asarray(b["input"]), -1), "targets": np.argmax(np.asarray(b["output"]), -1)}
        return rows(LAYOUTS[task], cfg, raw)
    return run


# the first statement of every `python -c` child: `-c` puts the current folder first on sys.path, and verify may run
# inside a stranger's dataset folder, whose numpy.py or longsynth/ must not be imported (docs/format.md, "Trust")
NO_CWD = "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]"
_REGBENCH_CHILD = NO_CWD + r"""
import io, types
import numpy as np
for name in ("src", "src.dataloaders"):
    sys.modules.setdefault(name, types.ModuleType(name))
base = types.ModuleType("src.dataloaders.base")
base.SequenceDataset = type("SequenceDataset", (), {})
sys.modules["src.dataloaders.base"] = base
import importlib.util
spec = importlib.util.spec_from_file_location("seq_icl_dfa", sys.argv[1])
dfa = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dfa)
n, m, seed = (int(v) for v in sys.argv[2:5])
kw = dict(zip(sys.argv[5::2], (int(v) for v in sys.argv[6::2])))
dm = dfa.ICLDFADataModule(num_examples=n, num_test_examples=m, seed=seed, **kw)
dm.setup()
out = {}
for s in ("train", "test", "val"):
    out[s + "/inputs"] = dm.dataset[s].inputs.numpy()
    out[s + "/targets"] = dm.dataset[s].targets.numpy()
buf = io.BytesIO()
np.savez(buf, **out)
sys.stdout.buffer.write(buf.getvalue())
"""
_REGBENCH_RUNS = {}  # (checkout, cfg, seed, counts) -> their splits: one run of setup() makes every split


def _regbench(path, cfg, seed, counts, split, stream):
    """setup() of their ``src/dataloaders/dfa.py`` (with a stand-in for ``src.dataloaders.base``, which only
    gives it a base class) in a child Python started with PYTHONHASHSEED=hash_seed: their rows depend on the
    hash seed, which a running Python cannot change. Their rows, padded to the split's longest, are padded to
    ours ('.' 0, -100)."""
    import io
    import subprocess

    from longsynth.generators.regbench.authors import split_counts
    from longsynth.generators.regbench.config import tokens_per_row

    n, m = split_counts(counts)
    key = (os.path.realpath(path), cfg, seed, n, m)
    if key not in _REGBENCH_RUNS:
        source = os.path.join(path, "src", "dataloaders", "dfa.py")
        if not os.path.isfile(source):
            raise LongsynthError(f"--authors: {source} not found: is it a checkout of berlino/seq_icl?")
        kw = ("vocab_size", "max_num_nodes", "min_num_in_context_examples", "max_num_in_context_examples",
              "max_outgoing_edges", "max_len_per_example", "input_seq_len")
        args = [str(a) for k in kw for a in (k, getattr(cfg, k))]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
        env["PYTHONHASHSEED"] = str(cfg.hash_seed)
        run = subprocess.run([sys.executable, "-c", _REGBENCH_CHILD, source, str(n), str(m), str(seed), *args],
                             env=env, capture_output=True)
        if run.returncode != 0:
            last = (run.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            raise LongsynthError(f"--authors: their setup() failed in a child Python: {last[:200]}")
        with np.load(io.BytesIO(run.stdout)) as z:
            _REGBENCH_RUNS.clear()
            _REGBENCH_RUNS[key] = {k: z[k] for k in z.files}
    theirs = _REGBENCH_RUNS[key]
    width = tokens_per_row(cfg) - 1
    out = {}
    for k, fill in (("inputs", 0), ("targets", IGNORE)):
        rows = theirs[f"{split}/{k}"].astype(np.int64)
        if rows.shape[1] > width:
            raise LongsynthError(f"--authors: their {split} rows have {rows.shape[1]} tokens, more than the "
                                 f"{width} this task's rows hold")
        out[k] = np.pad(rows, ((0, 0), (0, width - rows.shape[1])), constant_values=fill)
    return out


RUNNERS = {
    "regbench": _regbench,
    "mqar": _mqar,
    "associative-recall": _safari("associative-recall"),
    "induction-head": _safari("induction-head"),
    "selective-copying": _copying,
    "word-problem": _word_problem,
    "parity": _formal("parity"),
    "modular-arithmetic": _formal("modular-arithmetic"),
    **{name: _mad(name) for name in MAD_FUNCTIONS},
    **{f"chomsky-{name}": _chomsky(f"chomsky-{name}") for name in _CHOMSKY_CLASSES},
    **{name: _repeat(name) for name in ("repeat-copy", "repeat-prefix-ngram", "repeat-suffix-ngram",
                                        "repeat-duplicate-ngram")},
}


# ---------------------------------------------------------------- the check


@dataclasses.dataclass
class Result:
    """What ``compare`` found: rows compared and the splits' first differing rows."""

    rows: int
    problems: list


def _short(theirs, n):
    """What is wrong with the authors' rows ``theirs`` for a split of ``n`` rows ("" if nothing): a missing key,
    or fewer rows than the split holds."""
    if not isinstance(theirs, dict):
        return f"a {type(theirs).__name__}, not rows"
    for k in ("inputs", "targets"):
        if k not in theirs:
            return f"no {k}"
        got = np.asarray(theirs[k])
        if got.ndim < 1 or len(got) < n:
            return f"{len(got) if got.ndim else 0:,} rows of {k}"
    return ""


def _said(e):
    """``Class: message`` of an exception the authors' code raised, on one line; a class of theirs whose name or
    ``str()`` fails is still one line."""
    try:
        name = str(type(e).__name__)
    except Exception:
        name = "an exception"
    try:
        text = " ".join(str(e).split())[:200]
    except Exception:
        text = "(its message could not be read)"
    return f"{name[:80]}: {text}"


def compare(root, checkout, progress=None, time_limit=None):
    """Make every split of the dataset in ``root`` again with the authors' code in ``checkout``
    and compare it with the stored rows, element for element (their streams are sequential, so a
    split is made whole). ``progress(split)`` after each split.

    Their code runs in a child Python (``_child``), which sends each split's rows back: a checkout that ends
    its process (``os._exit(0)``, a C library's exit) ends the child, whose missing rows are one line here,
    never a verify that stops with status 0 and no verdict. ``time_limit`` (seconds, None for none): the child
    is ended when it has run that long (a manifest's counts and parameters can keep their code busy for hours
    within the memory estimate), and that is one line with no verdict."""
    import subprocess
    import threading

    from longsynth.store import open as open_dataset

    ds = open_dataset(root)
    try:
        m = ds.manifest
        stream = m.get("stream", "longsynth")
        if stream == "longsynth":
            raise LongsynthError(f"{root}: made with longsynth's law, not the authors' stream (gen --authors-stream): "
                                 "no authors' code makes these rows; verify --deep checks them against ours")
        if ds.task.name not in RUNNERS:
            raise LongsynthError(f"--authors: no check against the authors' code for {ds.task.name} "
                                 f"(tasks: {', '.join(sorted(RUNNERS))})")
        if not os.path.isdir(checkout):
            raise LongsynthError(f"--authors: {checkout} is not a folder (a checkout of the authors' repository)")
        _their_memory(ds.task, ds.task.make_config(**m["params"]), m["counts"])
        problems, rows = [], 0
        child = subprocess.Popen([sys.executable, "-c", f"{NO_CWD}; from longsynth.crosscheck import _child; _child()",
                                  os.fspath(root), os.fspath(checkout)], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE)
        timed_out = threading.Event()

        def stop():
            timed_out.set()
            child.kill()

        timer = threading.Timer(time_limit, stop) if time_limit is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            for split, sp in ds.splits.items():
                try:
                    theirs = _received(child, split)
                except LongsynthError:
                    if timed_out.is_set():
                        raise LongsynthError(f"--authors: the authors' code ran past the time limit ({time_limit:g} s) "
                                             f"before giving the rows of {split}; ended, no verdict (a longer "
                                             "--time-limit lets it finish)") from None
                    raise
                for i in range(len(sp)):
                    stored = sp[i]
                    for k in ("inputs", "targets"):
                        if not np.array_equal(np.asarray(stored[k], dtype=np.int64), np.asarray(theirs[k][i])):
                            problems.append(f"{split}[{i}]: {k} differs from the authors' row")
                            break
                    if len(problems) >= 10:
                        break
                rows += len(sp)
                if progress is not None:
                    progress(split)
        finally:
            if timer is not None:
                timer.cancel()
            if child.poll() is None:
                child.kill()
            child.stdout.close()
            child.wait()
        return Result(rows, problems)
    finally:
        ds.close()


def _motif_lists(cfg, n):
    """Bytes of the lists MAD's fuzzy recall instance holds at once: list(itertools.permutations(...)) of the key
    tokens for each motif size a training row draws and of the value tokens (a tuple of m numbers: 40 + 8m bytes,
    and 8 in its list)."""
    from longsynth.generators.mad.authors import _fuzzy_sizes

    nk, nv = _fuzzy_sizes(cfg)
    return (sum(math.perm(nk, m) * (48 + 8 * m) for m in range(1, cfg.k_motif_size + 1))
            + sum(math.perm(nv, m) * (48 + 8 * m) for m in range(1, cfg.v_motif_size + 1)))


# bytes the authors' code holds beside a split's rows, for a task whose code allocates by a parameter the rows do not
# show: zoology's multiquery_ar tiles its key choices and its value choices for every example (num_examples x
# vocab_size // 2 int64 each, both held) before it draws from them; MAD's fuzzy recall lists every motif of its
# vocabulary for each row. A stranger's manifest chooses vocab_size and the motif sizes.
_THEIR_SIDE = {"mqar": (lambda cfg, n: n * cfg.vocab_size * 8, "num_examples x vocab_size int64 that their "
                                                                 "multiquery_ar tiles"),
               "mad-fuzzy-recall": (_motif_lists, "lists of every key and value motif that their instance function "
                                                  "makes for each row")}


def _their_memory(t, cfg, counts):
    """Refuse (one LongsynthError line), before their code runs, a split whose run of the authors' code holds more
    than the memory available now: its rows (inputs and targets, int64, theirs and the copy sent back) and what
    ``_THEIR_SIDE`` knows their code allocates beside them."""
    from longsynth.api import memory_available
    from longsynth.store.manifest import human

    avail = memory_available()
    if avail is None:
        return
    width = int(np.prod([max(1, int(d)) for d in t.keys(cfg)["inputs"].shape], dtype=np.int64))
    side, doc = _THEIR_SIDE.get(t.name, (lambda cfg, n: 0, ""))
    for split, n in counts.items():
        rows, extra = 2 * 2 * n * width * 8, side(cfg, n)
        if rows + extra > avail:
            why = f"{human(rows)} for the rows" + (f" and {human(extra)} for the {doc}" if extra else "")
            raise LongsynthError(f"--authors: the authors' code making {split} ({n:,} rows) of {t.name} would hold "
                                 f"about {human(rows + extra)} of memory ({why}), {human(avail)} available now; "
                                 "not run, no verdict")


_HEAD = 9  # a record from the child: one byte of kind, eight of length, then the payload


def _read(stream, n):
    """Exactly ``n`` bytes of ``stream``, or fewer where it ends first."""
    parts, got = [], 0
    while got < n:
        part = stream.read(min(n - got, 1 << 24))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _received(child, split):
    """The rows of ``split`` the child sent ({"inputs", "targets"} arrays), or its one line; a child that ends
    before sending them is one line naming its exit status; a KeyboardInterrupt in it is raised here."""
    import io

    head = _read(child.stdout, _HEAD)
    if len(head) == _HEAD:
        kind, size = head[:1], int.from_bytes(head[1:], "little")
        body = _read(child.stdout, size)
        if len(body) == size:
            if kind == b"K":
                raise KeyboardInterrupt
            if kind == b"E":
                raise LongsynthError(body.decode("utf-8", "replace"))
            if kind == b"R":
                try:
                    with np.load(io.BytesIO(body), allow_pickle=False) as z:
                        theirs = {k: z[k] for k in ("inputs", "targets")}
                except Exception as e:
                    raise LongsynthError(f"--authors: the rows of {split} came back unreadable from the child "
                                         f"Python that ran the authors' code ({type(e).__name__})") from None
                return theirs
    status = child.wait()
    raise LongsynthError(f"--authors: the authors' code ended its process (exit status {status}) before giving the "
                         f"rows of {split}: no verdict")


def _child():
    """``compare``'s child Python: argv root and checkout. Runs the authors' code for every split in order and
    sends each split's rows (an .npz) to the parent on the stdout it was started with; what their code prints goes
    to stderr. A failure of their code, or rows too few or not arrays, is one line sent instead, and the end."""
    import io

    from longsynth.store import open as open_dataset

    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # their prints (fd 1 and sys.stdout) go to stderr, never into the records
    sys.stdout = sys.stderr

    def send(kind, body):
        channel.write(kind + len(body).to_bytes(8, "little") + body)
        channel.flush()

    root, checkout = sys.argv[1], sys.argv[2]
    try:
        ds = open_dataset(root)
        m = ds.manifest
        cfg = registry.get(ds.task.name).make_config(**m["params"])
        counts, stream = dict(m["counts"]), m.get("stream", "longsynth")
        for split, sp in ds.splits.items():
            try:
                theirs = RUNNERS[ds.task.name](checkout, cfg, m["seed"], counts, split, stream)
            except (LongsynthError, KeyboardInterrupt):
                raise
            except BaseException as e:  # their code, a missing dependency of it, an exit() or a GeneratorExit in it
                raise LongsynthError(f"--authors: the authors' code failed on {split}: {_said(e)}") from e
            short = _short(theirs, len(sp))
            if short:
                raise LongsynthError(f"--authors: the authors' code gave {short} for {split}, which holds {len(sp):,}"
                                     " rows: is the checkout their code at the commit docs/authors-data.md gives?")
            arrays = {}
            for k in ("inputs", "targets"):
                arrays[k] = np.asarray(theirs[k])
                if arrays[k].dtype.kind not in "iubf":  # objects (ragged rows) would need a pickle to come back
                    raise LongsynthError(f"--authors: the authors' code gave {split} {k} of dtype {arrays[k].dtype}, "
                                         "not an array of numbers")
            buf = io.BytesIO()
            np.savez(buf, **arrays)
            send(b"R", buf.getvalue())
    except KeyboardInterrupt:
        send(b"K", b"")
    except LongsynthError as e:
        send(b"E", str(e).encode("utf-8", "replace"))
    except BaseException as e:  # anything else (their code ran at import of a runner's loader): one line
        send(b"E", f"--authors: the child Python that ran the authors' code failed: {_said(e)}".encode(
            "utf-8", "replace"))
    channel.close()
    os._exit(0)  # their threads and atexit hooks are not waited for: the parent has what it needs
