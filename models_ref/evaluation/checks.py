"""The checks of a model factory before anything trains (harness step 2): the factory's failure,
a wrong output shape, non-finite outputs, outputs that change when only later inputs change
(causal protocols, unless their rows hold no target among the inputs: then it is recorded, not
refused) and a forward that fails at the protocol's longest test input, each refused in one line.
"""
from __future__ import annotations

import time

import torch

from longsynth.errors import LongsynthError


LONGEST_CHECK_S = 60.0  # the forward at the longest input is left out where it would take longer (about)


def check_model(module, spec, x, tol=1e-4, whole_row=False, notify=None):
    """Refuse, in one line, a module that breaks the contract on a real batch ``x``:
    a wrong output shape, non-finite outputs, or (causal protocols) outputs that change
    when only later inputs change, unless ``whole_row`` (the protocol's rows hold no target
    among their inputs). Runs on ``x``'s device in eval mode without gradients; the module's
    parameters and buffers are left as they were. Returns whether the module was seen causal
    (None where the protocol does not ask). The forward at the protocol's longest input is left
    out, said through ``notify``, where the forward on ``x`` scaled by the square of the lengths
    (attention's cost) passes ``LONGEST_CHECK_S``: a Transformer at 2^20 positions on a CPU."""
    if not isinstance(module, torch.nn.Module):
        raise LongsynthError(f"model: the factory returned a {type(module).__name__}, not a torch.nn.Module")
    module = module.to(x.device)
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            try:
                t0 = time.perf_counter()
                out = module(x)
                seconds = time.perf_counter() - t0
            except Exception as e:  # the user's forward: its error in one line (LONGSYNTH_DEBUG=1: traceback)
                raise LongsynthError(f"model: forward on a batch of {spec.task} {tuple(x.shape)} failed: "
                                     f"{type(e).__name__}: {_first_line(e)}{_token_hint(spec)}") from e
            want = (x.shape[0], x.shape[1], spec.d_output)
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != want:
                got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise LongsynthError(f"model: output shape {got}, the contract is [B, T, d_output] = {want}")
            if not torch.isfinite(out).all():
                raise LongsynthError(f"model: the output holds NaN or inf on the first batch of {spec.task}")
            causal = None
            if spec.causal:
                leak = _leak(module, x, out)
                causal = leak <= tol
                if not causal and not whole_row:
                    k = max(1, x.shape[1] // 8)
                    raise LongsynthError(f"model: not causal - changing inputs at positions >= {x.shape[1] - k} "
                                         f"changed outputs before them (by {leak:.2g} relative); this protocol is "
                                         f"unidirectional")
            if spec.max_seq_len is not None and spec.max_seq_len > x.shape[1]:
                longest = seconds / x.shape[0] * (spec.max_seq_len / x.shape[1]) ** 2
                if longest <= LONGEST_CHECK_S:
                    _check_longest(module, spec, x)
                elif notify is not None:
                    notify(f"note: the model's forward at the longest input of {spec.protocol} (T = "
                           f"{spec.max_seq_len:,}) is not tried before training: it could take "
                           f"{longest / 60:,.0f} min by the forward at T = {x.shape[1]:,} (its test set there "
                           f"runs it)")
            return causal
    finally:
        module.train(was_training)


def _check_longest(module, spec, x):
    """The module's forward at the protocol's longest input (``spec.max_seq_len``, its test sets),
    on one sample made by repeating ``x``'s first: a model sized by ``spec.seq_len`` fails here, in
    one line, instead of after training. Running out of memory is not refused (a paper's model may
    not reach its longest test set either)."""
    T = spec.max_seq_len
    reps = -(-T // x.shape[1])
    long = x[:1].repeat(1, reps, *([1] * (x.dim() - 2)))[:, :T]  # [1, T] or [1, T, d_input]
    try:
        out = module(long)
    except (MemoryError, torch.OutOfMemoryError):
        return
    except Exception as e:  # the user's forward
        if isinstance(e, RuntimeError) and "memory" in str(e):
            return
        raise LongsynthError(f"model: forward at the longest input of {spec.protocol} failed (T = {T}, "
                             f"spec.max_seq_len: its test sets reach it; training uses spec.seq_len = "
                             f"{spec.seq_len}): {type(e).__name__}: {_first_line(e)}; size positions by "
                             f"spec.max_seq_len (docs/evaluate.md)") from e
    want = (1, T, spec.d_output)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != want:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise LongsynthError(f"model: output shape {got} at the longest input of {spec.protocol} (T = {T}, "
                             f"spec.max_seq_len), the contract is [B, T, d_output] = {want}")


def graph_bytes(module, x, settled=None):
    """(bytes the autograd graph of a training step keeps per sample, bytes it keeps whatever the batch):
    the tensors autograd saves for the backward pass (each storage once) in a train-mode forward and
    backward on the first sample of ``x``, and on its first two (the difference is a sample's). Where
    ``settled(one)`` is true of the bytes of one sample's graph, the caller's question is answered by
    counting them all per sample (an upper bound for a batch of one or more): the second measurement, which
    costs twice the first, is left out and (one, 0) returned. The torch RNG is left as it was (a dropout
    draws from it), so training starts from the same state; the module's gradients are cleared again.

    A module whose ``checkpoint_activations`` is on (the reference Model; training sets it from TrainConfig) keeps
    what autograd saves outside its blocks, each block's input, and, in the backward, one block's graph recomputed
    at a time: the three are counted (one block's graph as the blocks' whole graph, measured with checkpointing off,
    over their number). Checkpointing hides the blocks' saved tensors from the hooks, so they alone undercount."""
    blocks = list(getattr(module, "blocks", None) or ()) if getattr(module, "checkpoint_activations", False) else []

    def saved(n):
        if not blocks:
            return _saved(n)
        inputs = []
        hooks = [b.register_forward_pre_hook(lambda _, args: inputs.append(
            sum(a.untyped_storage().nbytes() for a in args if isinstance(a, torch.Tensor)))) for b in blocks]
        try:
            outside = _saved(n)
        finally:
            for h in hooks:
                h.remove()
        module.checkpoint_activations = False
        try:
            whole = _saved(n)
        finally:
            module.checkpoint_activations = True
        return outside + sum(inputs[:len(blocks)]) + max(0, whole - outside) // len(blocks)

    def _saved(n):
        storages = {}

        def pack(t):
            st = t.untyped_storage()
            storages[st.data_ptr()] = st.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = module(x[:n])
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.float().square().mean().backward()
        return sum(storages.values())

    was_training = module.training
    module.train()
    try:
        with torch.random.fork_rng(devices=[]):
            one = saved(1)
            if settled is not None and settled(one):
                return one, 0
            two = saved(2)
    finally:
        module.zero_grad(set_to_none=True)
        module.train(was_training)
    return max(0, two - one), max(0, 2 * one - two)


def build(factory, spec):
    """factory(spec), its failure one line (LONGSYNTH_DEBUG=1 shows the traceback)."""
    try:
        return factory(spec)
    except LongsynthError:
        raise
    except Exception as e:  # the user's factory
        raise LongsynthError(f"model: the factory failed on {spec.task}: {type(e).__name__}: {_first_line(e)}"
                             f"{_token_hint(spec)}") from e


def _first_line(e):
    return " ".join(str(e).split())[:300]


def _token_hint(spec):
    """The hint for a model that expects float channels on a token task (d_input is None there)."""
    if spec.vocab_size is None:
        return ""
    return (f" ({spec.task} is a token task: inputs are int64 token ids [B, T] and spec.d_input is None; embed "
            f"them with torch.nn.Embedding(spec.vocab_size, ...), vocab_size {spec.vocab_size}: docs/evaluate.md)")


def _leak(module, x, out):
    """How much the outputs before the last eighth of the positions move when only that eighth changes,
    relative to the outputs' own size (0 for a causal module)."""
    T = x.shape[1]
    k = max(1, T // 8)  # the last k positions change
    g = torch.Generator().manual_seed(0)
    x2 = x.clone()
    tail = x2[:, T - k:].shape
    if x.dtype in (torch.int64, torch.int32):
        lo, hi = int(x.min()), int(x.max())
        x2[:, T - k:] = torch.randint(lo, hi + 1, tail, generator=g, dtype=x.dtype).to(x.device)
    else:
        x2[:, T - k:] += torch.randn(tail, generator=g, dtype=x.dtype).to(x.device)  # drawn on the CPU
    out2 = module(x2)
    # the outputs' own size, read off the channels that vary: a constant channel (the Chomsky models' -1e4 for the
    # ids outside their output classes) would otherwise hide any leak below its size
    flat = out.reshape(-1, out.shape[-1]) if out.dim() > 1 else out.reshape(-1, 1)
    varying = flat[:, (flat != flat[:1]).any(dim=0)]
    scale = 1.0 + (float(varying.abs().max()) if varying.numel() else 0.0)
    return float((out2[:, :T - k] - out[:, :T - k]).abs().max()) / scale
