"""The Chomsky hierarchy (generators/chomsky/, docs/tasks/chomsky.md): Delétang, Ruoss et al.'s 15 tasks
(ICLR 2023) under their length-generalisation protocol, the presets of their models (``rnn``, ``lstm``,
``stack-rnn``, ``tape-rnn``: models_ref/models/chomsky.py) and the suites.

The authors' protocol (google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be): train on lengths
uniform in 1-40 (experiments/example.py 77-79, ``UniformCurriculum``), batch 128 (example.py 29-34),
Adam with the global gradient norm clipped to 1 (experiments/training.py 59, 203-205) at a constant rate,
fresh samples every step (training.py 228-231); the score is the mean accuracy over the test lengths
41-500 (example.py 133-135, range_evaluation over every length); the paper's section 4 sweeps the
learning rates 1e-4, 3e-4, 5e-4 over 10 seeds for 1,000,000 steps and reports the best run.

Here: one protocol per task (named as the task); the test lengths are the protocol's ``test_sets``, one
fixed length each (every 20th length of 41-500 and 500: the paper evaluates all 460), so the report shows
accuracy by length, and the verdict reads their mean (``score_test_sets``), the paper's score. Each protocol's
training lengths are its ``data`` (min_length, max_length). Differences from the authors', written in
each row's source: 24 test lengths of 512 samples (theirs: all 460). The loss is theirs (example.py 100-102: the
cross-entropy summed over a row's output positions, averaged over rows: ``loss_per_row``), which with the clip at
norm 1 sets each step's size as their runs do; the training loss logged is the mean over positions. As theirs, every
training and validation batch is of one length, uniform in 1-40 (``length_per_batch``), so no row is padded.

``scale="tiny"`` shrinks the recipe for one CPU core but keeps its question, lengths beyond the training
ones: train 1-40, test 41, 47, ..., 95, 100 (up to 2.5 times the longest training input), 1,000 steps of 32
at lr 1e-3 (the rate of example.py 121).
"""
from __future__ import annotations

PROTOCOLS, ARCHITECTURES, PAPER, PAPER_SOURCE, SUITES = {}, {}, {}, {}, {}
PAPER_NAMES, PAPER_FROM = {}, {}  # protocol -> {column: the paper's name of the row}, {column: its source}
PAPER_STATISTIC = {}  # protocol -> the statistic its paper's figures are, where they are a best-of (registry.py)

LEVELS = {  # experiments/constants.py 115-131
    "regular": ("even-pairs", "parity-check", "cycle-navigation", "modular-arithmetic"),
    "dcf": ("modular-arithmetic-brackets", "reverse-string", "solve-equation", "stack-manipulation"),
    "cs": ("binary-addition", "binary-multiplication", "compute-sqrt", "duplicate-string",
           "missing-duplicate-string", "odds-first", "bucket-sort"),
}
TASKS = tuple(f"chomsky-{t}" for level in LEVELS.values() for t in level)
PAPER_LRS = (1e-4, 3e-4, 5e-4)  # the paper's section 4
# the configurations a column is the best of (appendices A.4-A.5): the Tape-RNN's computation tokens {0, l, 2l} x
# tapes {1, 4}, the Transformer's five positional encodings (models_ref/layers/chomsky_transformer.py); each a run of
# the paper scale's sweep
MODEL_OPTIONS = {"tape-rnn": tuple({"computation_steps_mult": c, "n_tapes": t} for c in (0, 1, 2) for t in (1, 4)),
                 "chomsky-transformer": tuple({"positional_encodings": p}
                                              for p in ("none", "sin_cos", "rotary", "alibi", "relative"))}
PAPER_SEEDS = 10  # the paper's section 4: `--seeds 10`, the best run is the paper's figure
# (train lengths, the test lengths (one test set each), batch, steps, eval_every, eval_batches, lr)
_SCALES = {
    "paper": ((1, 40), (*range(41, 500, 20), 500), 128, 1_000_000, 10_000, 4, 3e-4),
    "tiny": ((1, 40), (*range(41, 100, 6), 100), 32, 1_000, 100, 4, 1e-3),
}
# tiny budgets of the certificates' tasks (VALIDATE below): lstm, even pairs' control, leaves chance between steps
# 600 and 900 of its constant rate (docs/validation.md, "The Chomsky hierarchy's controls"); twice that, so the
# certificate passes; the Stack-RNN (the paper's 128 cells, Haiku's init and ReLU core), reverse string's control, is
# exact on the validation lengths from step 200 and 1.000 at every test length after 10,000 steps (with the tanh
# core it was wrongly given before 2026-11-29 it took 5,300 steps: the budget is kept; docs/validation.md)
TINY_STEPS = {"chomsky-even-pairs": 2_000, "chomsky-reverse-string": 10_000}
_SOURCE = ("Delétang et al. 2023 (google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be experiments/"
           "example.py, training.py; the paper's section 4)")
_DIFFERS = "a grid of test lengths (theirs: every length)"


def _range(lo, hi):
    # the task's test split at the same lengths: a test set is one length, and the training data's own val and
    # test draws (ByLength's) are at the training lengths
    return {"min_length": lo, "max_length": hi, "test_min_length": lo, "test_max_length": hi}


for _task in TASKS:
    for _scale, (_train, _test, _B, _steps, _every, _batches, _lr) in _SCALES.items():
        _steps = TINY_STEPS.get(_task, _steps) if _scale == "tiny" else _steps
        PROTOCOLS[(_task, _scale)] = dict(
            objective="tokens", readout="positions", causal=True, schedule="constant", warmup_steps=0,
            weight_decay=0.0, splits=None, task=_task, data=_range(*_train), batch_size=_B, steps=_steps, lr=_lr,
            lrs=PAPER_LRS if _scale == "paper" else None, grad_clip=1.0, eval_every=_every,
            eval_batches=_batches, score_test_sets=True, test_sets={str(n): _range(n, n) for n in _test},
            length_per_batch=True, whole_row=True, model_options=MODEL_OPTIONS if _scale == "paper" else None,
            loss_per_row=True,
            source=(f"{_SOURCE}: train lengths {_train[0]}-{_train[1]}, test {_test[0]}-{_test[-1]} "
                    f"({len(_test)} lengths, {_batches * _B} samples each), batch {_B}, Adam (clip 1) on the loss "
                    f"summed over a row's outputs and averaged over rows, "
                    f"{_steps:,} steps" + (f", lr in {', '.join(map(str, PAPER_LRS))} over {PAPER_SEEDS} seeds "
                                           "(--seeds 10; the paper reports the best)" if _scale == "paper" else
                                           f" at lr {_lr:g}: shrunk for one CPU core; tested to {_test[-1]} where "
                                           "Table 2 tests to 500, so a model exact on its first 40 outputs and "
                                           "guessing the rest scores about 0.80 here on reverse string, about 0.61 "
                                           "over 41-500") + f"; differs: {_DIFFERS}"))

SUITES["chomsky"] = [(t, t) for t in TASKS]
for _level, _names in LEVELS.items():
    SUITES[f"chomsky-{_level}"] = [(f"chomsky-{t}", f"chomsky-{t}") for t in _names]

# ----------------------------------------------------------------- the built-ins on these suites
# experiments/constants.py 45-72 and example.py 68-72: every core of hidden size 256, memory cells of 8, the write
# MLP 64-64 (tape_rnn.py 41); the paper's appendix A.2 sets the sizes: "the tape size to 256 and the stack size to
# 128 and manually increase their sizes when testing on longer sequences" (the code's defaults, a stack of 30 and
# example.py's tape of 40, cap reverse string at about 40 symbols): here a memory grows to the row's length on a
# longer row (models_ref/layers/stack_rnn.py, tape_rnn.py)
MODELS = {
    "rnn": dict(H=256),
    "lstm": dict(H=256),
    "stack-rnn": dict(H=256, stack_size=128, cell=8),
    "tape-rnn": dict(H=256, memory_size=256, cell=8, mlp=(64, 64)),
    # models/transformer.py 453-467: make_transformer_encoder's defaults (example.py 68-72's sizes are the RNNs')
    "chomsky-transformer": dict(embedding_dim=64, num_layers=5, num_heads=8, widening_factor=4, dropout_prob=0.1),
}
COLUMNS = {"rnn": "RNN", "stack-rnn": "Stack-RNN", "tape-rnn": "Tape-RNN", "chomsky-transformer": "Transformer",
           "lstm": "LSTM"}  # the paper's Table 2 names
for (_task, _scale), _row in PROTOCOLS.items():
    for _model, _arch in MODELS.items():
        ARCHITECTURES[(_task, _scale, _model)] = dict(
            arch=dict(_arch), lr=_row["lr"],
            source=f"Delétang et al.'s {COLUMNS[_model]} (models_ref/models/chomsky.py; "
                   f"experiments/constants.py 45-72, example.py 68-72), lr {_row['lr']:g}")
    PAPER_NAMES[_task] = dict(COLUMNS)
    PAPER_STATISTIC[_task] = f"the best of {PAPER_SEEDS} seeds x {len(PAPER_LRS)} learning rates"
# PAPER: Table 2's figures (accuracy, the mean over test lengths 41-500 of the best of 10 seeds x 3 learning rates).
# No readable copy of the paper's table was at hand; a later paper reprints six of its rows for all five columns
# (Xu et al., "DeltaFormer", Appendix D Table 5, in the order RNN, Stack-RNN, Tape-RNN, Transformer, LSTM), and the
# paper's own text gives one more figure (appendix B.3.2: the Transformer on cycle navigation, "61.9% with baseline
# 20%"). Only those are entered; a task without a figure says what the paper's text does say of it. None is typed
# from memory.
_REPRINT = "Delétang et al. Table 2 as reprinted by Xu et al. (DeltaFormer), Appendix D Table 5 (a table)"
_T2 = {  # task: (rnn, stack-rnn, tape-rnn, chomsky-transformer, lstm), percent
    "modular-arithmetic": (100.0, 100.0, 100.0, 24.2, 100.0), "parity-check": (100.0, 100.0, 100.0, 52.0, 100.0),
    "stack-manipulation": (56.0, 100.0, 100.0, 57.5, 59.1), "reverse-string": (62.0, 100.0, 100.0, 62.3, 60.9),
    "duplicate-string": (50.3, 52.8, 100.0, 52.8, 57.6), "odds-first": (51.0, 51.9, 100.0, 52.8, 55.6),
}
_ORDER = ("rnn", "stack-rnn", "tape-rnn", "chomsky-transformer", "lstm")
PAPER_SOURCE.update({t: "Delétang et al. 2023 Table 2 (test accuracy, the mean over lengths 41-500; the best of 10 "
                        "seeds x 3 learning rates)" for t in TASKS})
for _name, _values in _T2.items():
    PAPER[f"chomsky-{_name}"] = {c: {"accuracy": v / 100} for c, v in zip(_ORDER, _values)}
    PAPER_FROM[f"chomsky-{_name}"] = {c: _REPRINT for c in _ORDER}
PAPER["chomsky-cycle-navigation"] = {"chomsky-transformer": {"accuracy": 0.619}}
PAPER_FROM["chomsky-cycle-navigation"] = {"chomsky-transformer": "Delétang et al., appendix B.3.2 (a figure its "
                                                                 "text states: \"61.9% with baseline 20%\")"}
_SAID = {  # what the paper's text says of a row whose figures are not entered (a task "solved": >= 90%)
    "even-pairs": "its section 5.4: Transformers \"solve Even Pairs\"; appendix B.1: every network but the "
                  "Transformer solves every regular task perfectly for every seed",
    "cycle-navigation": "appendix B.1: every network but the Transformer solves every regular task perfectly for "
                        "every seed",
    "modular-arithmetic-brackets": "nothing found",
    "solve-equation": "its section 5.1: the Stack-RNN \"cannot solve Solve Equation\"",
    "missing-duplicate-string": "nothing found in a primary source",
    "binary-addition": "nothing found in a primary source",
    "binary-multiplication": "its section 5.1: the Tape-RNN cannot solve it",
    "compute-sqrt": "its section 5.1: the Tape-RNN cannot solve it",
    "bucket-sort": "its section 5.3: LSTMs solve it \"almost perfectly\"; section 5.4: Transformers \"solve Bucket "
                   "Sort\"; section 5.1: the Stack-RNN shows \"non-trivial performance\"",
}
_HAS = {True: "has its other columns", False: "has a figure for every model"}  # a row with some figures entered, none
PAPER_MISSING = {f"chomsky-{t}": (f"Delétang et al.'s Table 2 {_HAS[f'chomsky-{t}' in PAPER]} here, not entered (no "
                                  f"readable copy of the table was at hand, none typed from memory); the paper's text: "
                                  f"{said}") for t, said in _SAID.items()}

# ----------------------------------------------------------------- the laptop scale (laptop.py)
# The paper's lengths (train 1-40, test 41-500), batch and models, one learning rate (example.py 121's 1e-3, where
# the paper sweeps three at a million steps), 128 samples per test length (the paper's 512 would cost the Transformer
# two hours on duplicate string's rows of 1,500 positions) and the steps of about an hour a run for the slowest of the
# five models (the LSTM, the Transformer with its test lengths) by evaluate --dry-run on the development machine
LAPTOP_STEPS = {**{f"chomsky-{t}": 5_000 for t in LEVELS["regular"]}, "chomsky-duplicate-string": 1_500}
LAPTOP = {t: dict(steps=LAPTOP_STEPS.get(t, 2_500), lr=1e-3, lrs=None, eval_batches=1, model_options=None,
                  why="one learning rate, 1e-3 (experiments/example.py 121), where the paper sweeps 1e-4, 3e-4, 5e-4; "
                      "128 samples per validation and test length (theirs: 512 per test length); the Tape-RNN's preset "
                      "alone (one tape, no computation tokens) and the Transformer's sin/cos positions, where the "
                      "paper's columns are the best of six and of five") for t in TASKS}

# ----------------------------------------------------------------- certificates (controls.py)
# The controls the paper predicts (its section 5: an LSTM solves the regular tasks), at the tiny budget where they
# were seen to pass beyond the training lengths (docs/validation.md, "The Chomsky hierarchy's controls")
# and the Stack-RNN reverses strings (its section 5), its stack as deep as the paper's.
VALIDATE = {"chomsky-even-pairs": ("chomsky-even-pairs", "lstm"),
            "chomsky-reverse-string": ("chomsky-reverse-string", "stack-rnn")}
NO_CONTROL = {t: "no model was seen to pass it beyond the training lengths at the tiny budget (the paper trains 1M "
                 "steps)" for t in TASKS if t not in VALIDATE}

