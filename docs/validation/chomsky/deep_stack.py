from longsynth.models_ref.models import chomsky


def stack128(spec):
    """The built-in stack-rnn with a stack of 128 cells instead of the authors' default 30."""
    return chomsky.ChomskyModel(chomsky.config("stack-rnn", spec.task, spec.vocab_size,
                                               dict(H=256, stack_size=128, cell=8)))
