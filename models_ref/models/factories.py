"""Model factories for ``longsynth evaluate``: the built-in reference models and the user's.

A factory is ``factory(spec: longsynth.ModelSpec) -> torch.nn.Module`` (docs/evaluate.md).
``load(text)`` resolves what the command line names:

- a built-in name (``dlr``, ``dss``, ``s4``, ``s4d``, ``essm`` and the DLR paper's baselines
  ``attention``, ``attention-ff``, ``local-attention``, ``dlr-prod``, ``dlr-real``, ``dlr-6``, and
  the recurrent ``s6`` (Mamba), ``s6-signed``, ``gru``, ``deltanet``, ``deltanet-signed``, and Mamba
  Table 1's "No gate" blocks ``s6-nogate``, ``s4d-nogate``): the reference model stack with the preset
  of ``protocols.registry.architecture`` for the spec's protocol and scale (the recurrent ones and the "No gate"
  blocks run causal on every protocol: they have no bidirectional form); ``zoology-attention``,
  zoology's Figure 2 attention model (models_ref/models/zoology.py), and the same LanguageModel with Figure 2's
  ``base-conv``, ``hyena``, ``h3`` mixers (models_ref/models/zoology_mixers.py), on the ``mqar`` protocols; H3's
  Table 1 models as safari builds them, ``safari-attention``, ``safari-s4d`` and ``h3`` (the same LanguageModel
  with an MLP block; models_ref/models/safari_s4d.py), on H3's synthetics (``h3-induction``, ``h3-recall``);
  Akyürek et al.'s RegBench models as their berlino/seq_icl builds them, ``seq-icl-transformer`` (the same
  LanguageModel with seq_icl's MLP block) and ``seq-icl-lstm`` (models_ref/models/seq_icl.py), on ``regbench``
  only;
  the Chomsky-hierarchy paper's ``rnn``, ``lstm``, ``stack-rnn``, ``tape-rnn`` and Transformer encoder
  ``chomsky-transformer`` (models_ref/models/chomsky.py) on the ``chomsky-*`` protocols only;
- ``path/to/file.py:function``: a function in a Python file (the user's code, run as the
  user asked);
- ``package.module:function``: a function of an importable module.

With the factory comes its identity (plain data): the name and a SHA-256 of the file that
defines it, so that a run resumed after the model's code changed starts fresh.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import dataclasses
import os
import sys

from longsynth.errors import LongsynthError
from longsynth.models_ref.models.stack import Model, ModelConfig
from longsynth.models_ref.protocols.registry import VARIANTS, architecture, preset_lr
from longsynth.models_ref.models.seq_icl import SeqIclLSTM, SeqIclLSTMConfig
from longsynth.models_ref.models.zoology import ZoologyAttention, ZoologyConfig


BIDIRECTIONAL = ("dlr", "dlr-real", "s4", "s4d", "essm", "attention", "local-attention")  # with a bidirectional form


class Reference:
    """A built-in reference model: ``Reference("dlr")(spec)`` -> Model with the preset of
    the spec's protocol and scale (``protocols.registry.architecture``)."""

    def __init__(self, name, options=None):
        self.name = name
        self.layer = VARIANTS[name][0] if name in VARIANTS else name
        self.options = dict(options or {})  # arch fields a protocol's grid sets over the preset's (``with_options``)

    def preset(self, spec):
        row = architecture(spec.protocol, spec.scale, self.name)
        if row is None:
            raise LongsynthError(f"model: {self.name} has no preset for {spec.protocol} at scale {spec.scale}")
        return {**row, "arch": {**row["arch"], **self.options}} if self.options else row

    def config(self, spec):
        """The ModelConfig for a spec: the preset's architecture, the data's channels, the
        width and depth the protocol's grids ask for (``spec.d_model``, ``spec.n_layers``), and the
        protocol's direction:
        the layers of ``BIDIRECTIONAL`` run both ways where the protocol is not causal
        (DSS_exp is causal only, which a bidirectional protocol allows)."""
        io = dict(d_input=spec.d_input or 1, d_output=spec.d_output, vocab_size=spec.vocab_size)
        arch = {"layer": self.layer, **self.preset(spec)["arch"]}
        if spec.d_model is not None:  # a point of the protocol's width grid (zoology's d_model)
            arch["H"] = spec.d_model
        if spec.n_layers is not None:  # a point of its depth grid (word problems)
            arch["n_layers"] = spec.n_layers
        bidirectional = not spec.causal and arch["layer"] in BIDIRECTIONAL and not arch.get("no_gate")
        return ModelConfig(bidirectional=bidirectional, **io, **arch)

    def lr(self, spec):
        return preset_lr(self.preset(spec), spec.task)

    def checked(self, spec):
        """The spec its module is checked against before training (harness_checks.check_model): the protocol's."""
        return spec

    def __call__(self, spec):
        return Model(self.config(spec))


class Zoology(Reference):
    """``zoology-attention``: zoology's Figure 2 model (models_ref/models/zoology.py), not the reference stack.
    Its preset (models_ref/protocols/recall.py) fixes two one-head blocks and the position table; the width is
    the protocol's grid point (``spec.d_model``) where it sets one. Causal token protocols only: the
    head is tied to the word embeddings, so the logits are the vocabulary. ``base-conv``, ``hyena``,
    ``h3``: the same model with Figure 2's mixer (its preset's ``sequence_mixer``, no position table,
    the mixers' ``l_max`` the input length)."""

    def config(self, spec):
        row = self.preset(spec)  # refuses, in one line, a protocol without a preset (every non-mqar one)
        if not spec.causal or spec.vocab_size is None or spec.d_output != spec.vocab_size:
            raise LongsynthError(f"model: {self.name} is a causal language model over token ids (its head is "
                                 f"tied to the word embeddings); {spec.protocol} is not such a protocol")
        arch = dict(row["arch"])
        if spec.d_model is not None:  # the grid's d_model (configs.py 46-51)
            arch["d_model"] = spec.d_model
        if spec.n_layers is not None:
            arch["n_layers"] = spec.n_layers
        longest = arch["l_max"] if arch.get("sequence_mixer", "attention") != "attention" else (
            arch["max_position_embeddings"])
        if spec.longest > longest:
            raise LongsynthError(f"model: {self.name} has {longest} positions, {spec.protocol} feeds {spec.longest}")
        return ZoologyConfig(vocab_size=spec.vocab_size, **arch)

    def __call__(self, spec):
        return ZoologyAttention(self.config(spec))


class SeqIcl(Reference):
    """``seq-icl-lstm``: RegBench's LSTM row as berlino/seq_icl builds it (models_ref/models/seq_icl.py), its preset
    (models_ref/protocols/regbench.py) at lstm.yaml's sizes; causal token protocols whose outputs are the
    vocabulary only (the head is tied to E), like ``Zoology``."""

    def config(self, spec):
        row = self.preset(spec)  # refuses, in one line, a protocol without a preset
        if not spec.causal or spec.vocab_size is None or spec.d_output != spec.vocab_size:
            raise LongsynthError(f"model: {self.name} is a causal language model over token ids (its head is "
                                 f"tied to the word embeddings); {spec.protocol} is not such a protocol")
        arch = dict(row["arch"])
        if spec.d_model is not None:
            arch["d_model"] = spec.d_model
        if spec.n_layers is not None:
            arch["n_layers"] = spec.n_layers
        return SeqIclLSTMConfig(vocab_size=spec.vocab_size, **arch)

    def __call__(self, spec):
        return SeqIclLSTM(self.config(spec))


class Chomsky(Reference):
    """``rnn``, ``lstm``, ``stack-rnn``, ``tape-rnn``, ``chomsky-transformer``: the Chomsky-hierarchy paper's
    models (models_ref/models/chomsky.py), on the ``chomsky-*`` protocols only (their preset refuses the others).
    ``lstm`` elsewhere is torch's LSTM as the layer of the reference stack (models_ref/layers/torch_lstm.py; two
    prenorm blocks on the field's token protocols, models_ref/protocols/tokens.py): the fixed-size state the
    copying and flip-flop papers set against attention."""

    def _stack(self, spec):
        from longsynth.models_ref.models import chomsky

        return self.name == "lstm" and spec.task not in chomsky.SIZES

    def config(self, spec):
        from longsynth.models_ref.models import chomsky

        if self._stack(spec):
            return super().config(spec)
        return chomsky.config(self.name, spec.task, spec.vocab_size, self.preset(spec)["arch"])

    def __call__(self, spec):
        from longsynth.models_ref.models import chomsky

        if self._stack(spec):
            return Model(self.config(spec))
        return chomsky.ChomskyModel(self.config(spec))

    def checked(self, spec):
        """The Tape-RNN reads the input's length (where the empty tokens start) from its first step, as its
        authors' jumps need (``chomsky.READS_LENGTH``): the causality check's change of the row's last positions
        moves it, so it is not checked; no scored output precedes that place, and every batch is of one length,
        so the length it reads is its rows' own. The paper's Transformer encoder sees the whole row
        (models/transformer.py 285-291: no mask): the check records it, the chomsky protocols run it
        (``whole_row``: their inputs hold no target)."""
        from longsynth.models_ref.models import chomsky

        return dataclasses.replace(spec, causal=False) if self.name in chomsky.READS_LENGTH else spec


BUILTIN = {name: Reference(name) for name in ("dlr", "dss", "s4", "s4d", "essm", "dlr-prod", "dlr-real", "dlr-6",
                                               "dlr-d1", "attention", "attention-ff", "local-attention", "s6",
                                               "s6-signed", "gru", "deltanet", "deltanet-signed", "s6-nogate",
                                               "s4d-nogate")}
for _name in ("zoology-attention", "base-conv", "hyena", "h3", "seq-icl-transformer", "safari-attention",
              "safari-s4d"):
    BUILTIN[_name] = Zoology(_name)
BUILTIN["seq-icl-lstm"] = SeqIcl("seq-icl-lstm")
for _name in ("rnn", "lstm", "stack-rnn", "tape-rnn", "chomsky-transformer"):
    BUILTIN[_name] = Chomsky(_name)


def with_options(factory, options):
    """The built-in ``factory`` with arch ``options`` over its preset's (a point of a protocol's ``model_options``
    grid); a user's factory has none to set."""
    if not isinstance(factory, Reference):
        raise LongsynthError("model: a protocol's model options apply to the built-ins only")
    return type(factory)(factory.name, {**factory.options, **options})


def checked_spec(factory, spec):
    """The spec ``factory``'s module is checked against before training: a built-in's own (``checked``), else
    the protocol's."""
    return factory.checked(spec) if isinstance(factory, Reference) else spec


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _from_file(path, attr):
    """(module, SHA-256 of the bytes it was made from): the file is read once, and those bytes are both
    hashed and run, so an edit while evaluate runs cannot make a run record code that did not build it. A
    process imports a file once; later loads return that module and the digest of what it ran."""
    if not os.path.isfile(path):
        raise LongsynthError(f"model: {path} is not a file")
    name = "longsynth_user_model_" + hashlib.sha256(os.fsencode(os.path.abspath(path))).hexdigest()[:12]
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise LongsynthError(f"model: {path} is not a Python file")
        with open(path, "rb") as f:
            source = f.read()
        module = importlib.util.module_from_spec(spec)
        module.__longsynth_sha256__ = hashlib.sha256(source).hexdigest()
        sys.modules[name] = module  # dataclasses and pickling look the module up by name
        try:
            exec(compile(source, path, "exec"), module.__dict__)
        except Exception as e:  # the user's file: its error, in one line
            del sys.modules[name]
            raise LongsynthError(f"model: importing {path} failed: {type(e).__name__}: {e}") from None
    return module, module.__longsynth_sha256__


def _from_module(modname, attr):
    try:
        module = importlib.import_module(modname)
    except Exception as e:  # ImportError and whatever the module raises while importing
        beside = f"{modname.replace('.', os.sep)}.py"
        hint = (f"; {beside} is here: name it as {beside}:{attr}" if isinstance(e, ModuleNotFoundError)
                and os.path.isfile(beside) else "")
        raise LongsynthError(f"model: cannot import {modname}: {type(e).__name__}: {e}{hint}") from None
    source = getattr(module, "__file__", None)
    return module, _sha256(source) if source and os.path.isfile(source) else None


def _is_file(where):
    return where.endswith(".py") or os.sep in where


def canonical(text):
    """``text`` as another process loads it: a model file by its absolute path (``--jobs`` and Dask's
    workers may start elsewhere); a built-in or module as given."""
    where, sep, attr = text.rpartition(":")
    return f"{os.path.abspath(where)}:{attr}" if text not in BUILTIN and sep and where and _is_file(where) else text


def load(text):
    """(factory, identity) for a built-in name, ``file.py:function`` or ``module:function``. A file's
    identity names it by its base name and SHA-256, never its path: metrics.json, checkpoints and
    reports travel to other machines (docs/evaluate.md, "Jobs, clusters, resuming")."""
    if text in BUILTIN:
        return BUILTIN[text], {"model": text, "sha256": None}
    where, sep, attr = text.rpartition(":")
    if not sep or not where or not attr:
        raise LongsynthError(f"model: {text!r} is neither a built-in ({', '.join(BUILTIN)}) nor "
                             "path/to/file.py:function nor package.module:function")
    if _is_file(where):
        module, digest = _from_file(where, attr)
        text = f"{os.path.basename(where)}:{attr}"
    else:
        module, digest = _from_module(where, attr)
    factory = getattr(module, attr, None)
    if factory is None:
        raise LongsynthError(f"model: {where} defines no {attr!r}")
    if not callable(factory):
        raise LongsynthError(f"model: {where}:{attr} is not callable")
    return factory, {"model": text, "sha256": digest}
