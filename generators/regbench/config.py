"""regbench's parameters and the width of its rows, shared by our law (regbench.py) and the authors' rows
(authors.py)."""
from dataclasses import dataclass

from longsynth.task import param

MAX_NODES = 100  # the dfa table is int8
MAX_VOCAB = 28  # '.', the letters a..z, '|'


@dataclass(frozen=True)
class RegBenchConfig:
    vocab_size: int = param(20, "tokens: padding '.', the letters, '|' (the authors' 20: 18 letters a..r)", lo=4,
                            hi=MAX_VOCAB)
    max_num_nodes: int = param(12, "most states of a drawn DFA, before minimising (inclusive)", lo=2, hi=MAX_NODES)
    min_num_in_context_examples: int = param(10, "fewest strings a row (inclusive)", lo=1, hi=10_000)
    max_num_in_context_examples: int = param(20, "strings a row stay below this (the authors' exclusive bound: "
                                                 "10..19 by default)", lo=2, hi=10_001)
    max_outgoing_edges: int = param(4, "a state's edges stay below this (1..3 by default); also the fewest states "
                                       "and letters of a DFA", lo=2, hi=MAX_NODES)
    max_len_per_example: int = param(50, "a string's length stays below this (1..49 by default)", lo=2, hi=100_000)
    hash_seed: int | None = param(None, "the authors' stream only (--authors-stream): the PYTHONHASHSEED their code "
                                        "ran under, which their rows depend on", lo=0, hi=4294967295)
    input_seq_len: int = param(4096, "characters of a row's text, a space between tokens (the authors' cut): a row "
                                     "keeps its first (input_seq_len + 1) // 2 tokens", lo=3, hi=1 << 24)


def check(cfg):
    from longsynth.errors import LongsynthError

    if cfg.max_num_in_context_examples <= cfg.min_num_in_context_examples:
        raise LongsynthError("max_num_in_context_examples: must exceed min_num_in_context_examples (an exclusive "
                             f"bound), got {cfg.max_num_in_context_examples} <= {cfg.min_num_in_context_examples}")
    if cfg.max_outgoing_edges > cfg.max_num_nodes:
        raise LongsynthError(f"max_outgoing_edges: at most max_num_nodes ({cfg.max_num_nodes}: a DFA has at least "
                             f"max_outgoing_edges states), got {cfg.max_outgoing_edges}")
    if cfg.max_outgoing_edges > cfg.vocab_size - 2:
        raise LongsynthError(f"max_outgoing_edges: at most vocab_size - 2 ({cfg.vocab_size - 2} letters: an alphabet "
                             f"has at least max_outgoing_edges letters), got {cfg.max_outgoing_edges}")
    if tokens_per_row(cfg) - 1 > 1 << 24:
        raise LongsynthError("max_num_in_context_examples * max_len_per_example: rows of more than 2^24 tokens")


def tokens_per_row(cfg):
    """The most tokens a row can hold: the most strings of the longest length, their separators, the cut."""
    most = (cfg.max_num_in_context_examples - 1) * (cfg.max_len_per_example - 1) + cfg.max_num_in_context_examples - 2
    return min(most, (cfg.input_seq_len + 1) // 2)
