"""What MAD's six tasks share (docs/tasks/mad.md): the citation, parameter helpers, the checks
every task makes, the shift of a sequence into inputs and next-token targets, and the builder
of a task record (its keys, its authors' stream and pipeline, its default size).

Definitions, worked examples and quirks: docs/tasks/mad.md. Every task stores ``inputs`` and
``targets``, integer token ids [T] (int8 up to 127 tokens, int16 up to 32,767, else int32), -100 in
``targets`` at every unscored position. Parameters carry MAD's names and its configs'
defaults (configs/tasks/*.yml; where a function default differs, the config wins).
"Scored as at test time" means split val or test; the train split scores as MAD's
``is_training=True`` (next-token targets at every position for the recall tasks).

Draw order (the reproducibility contract; ``stream(seed, split, index)``, one per sample;
``randint(m)`` uniform on [0, m), ``uniform()`` on [0, 1); ``below(m)`` uniform on [0, m) by
Lemire's multiply-shift, no division on most draws (all three: longsynth/rng.py); ``pairs(g)``
a run of draws uniform on [0, g), as below(g) but on both 32-bit halves of each next_u64: x the
low half, then the high half; m = x * g, x rejected while m mod 2^32 < 2^32 mod g, else the
draw is m >> 32; a run starts on a fresh next_u64):

Each task's file states its vocabulary layout and its draw order (generators/mad/recall.py,
fuzzy.py, copying.py, compression.py, memorization.py); its authors' port is authors.py.
"""
from numba import njit

from longsynth.errors import LongsynthError
from longsynth.generators._tokens import REVISION, token_dtype
from longsynth.generators.mad import authors as mad_authors
from longsynth.rng import SPLITS
from longsynth.task import KeySpec, Task, param

CITATION = """@inproceedings{poli2024mad,
  title     = {Mechanistic Design and Scaling of Hybrid Architectures},
  author    = {Poli, Michael and Thomas, Armin W. and Nguyen, Eric and Ponnusamy, Pragaash and Deiseroth, Bj{\\"o}rn
               and Kersting, Kristian and Suzuki, Taiji and Hie, Brian and Ermon, Stefano and R{\\'e}, Christopher
               and Zhang, Ce and Massaroli, Stefano},
  booktitle = {International Conference on Machine Learning (ICML)},
  year      = {2024},
  note      = {arXiv:2403.17844}
}"""
TRAIN = SPLITS["train"]
MAD_TEST = mad_authors.MAD_TEST_EXAMPLES  # MAD's sizes exactly: --splits train=12800,test=1280 (memorization 256)
MAX_VOCAB = 1 << 20
MAX_LEN = 1 << 20


def _vocab(default):
    return param(default, "vocabulary size V, special and noise tokens included", lo=3, hi=MAX_VOCAB)

def _seq_len(default):
    return param(default, "sequence length (MAD's seq_len)", lo=4, hi=MAX_LEN)


_MULTI_QUERY = "score every value of a key shown before (else only the final probe, after a copy prefix)"


def _require(ok, message):
    if not ok:
        raise LongsynthError(message)


def _check_noise(cfg):
    _require(cfg.frac_noise == 0 or cfg.noise_vocab_size > 0,
             f"noise_vocab_size: must be > 0 when frac_noise > 0, got {cfg.noise_vocab_size}")


@njit(cache=True)
def _shift_out(tokens, scored, training, inp, tgt):
    """inp <- tokens[:-1]; tgt <- tokens[1:] in training (next-token targets), else scored[1:]."""
    for i in range(inp.shape[0]):
        inp[i] = tokens[i]
        tgt[i] = tokens[i + 1] if training else scored[i + 1]


def _token_keys(length):
    def keys(cfg):
        dt = token_dtype(cfg.vocab_size)
        return {
            "inputs": KeySpec(dt, (length(cfg),), doc="token ids"),
            "targets": KeySpec(dt, (length(cfg),), doc="token ids; -100 where not scored"),
        }
    return keys


def _seq_length(cfg):
    return cfg.seq_len


def _vocab_size(cfg):
    return cfg.vocab_size


def _task(name, *, config, summary, length, fill, check, card, **extra):
    return Task(name=name, config=config, summary=summary, keys=_token_keys(length), fill=fill, check=check,
                family="tokens", revision=REVISION, card=card, vocab_size=_vocab_size,
                authors=mad_authors.stream_of(name), authors_pipeline=mad_authors.pipeline_of(name),
                citation=CITATION, default_num_samples=mad_authors.MAD_TRAIN_EXAMPLES[name] + MAD_TEST, **extra)
