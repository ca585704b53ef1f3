"""SIGINT and SIGTERM: the signals a command received, and the progress callback that ends
the job after one whose KeyboardInterrupt Python swallowed (``main()`` installs the handler)."""
from longsynth.progress import Samples


_SIGNALLED = []  # signals received by this process (main() installs the handler)


def _on_signal(signum, frame):
    _SIGNALLED.append(signum)
    raise KeyboardInterrupt


def _unraisable(hook):
    """``sys.unraisablehook`` that keeps quiet about the KeyboardInterrupt of a signal that
    landed in a weakref callback or a ``__del__`` (Python would print its traceback and go
    on; ``Watched`` raises it again at the next progress report) and passes the rest to ``hook``."""

    def quiet(unraisable):
        if _SIGNALLED and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return
        hook(unraisable)

    return quiet


class Watched(Samples):
    """The store's progress callback that also ends the job after a signal whose
    KeyboardInterrupt Python swallowed (one raised inside a weakref callback or a
    ``__del__``, silenced by ``_unraisable``): the next progress report raises it again."""

    def __call__(self, n, total=None, done=0):
        if _SIGNALLED:
            raise KeyboardInterrupt
        super().__call__(n, total, done)
