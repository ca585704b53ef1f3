"""SIGINT and SIGTERM: the signals a command received, and the progress callback that ends
the job after one whose KeyboardInterrupt Python swallowed (``main()`` installs the handler)."""
from longsynth.progress import Samples


_SIGNALLED = []  # signals received by this process (main() installs the handler)


def _on_signal(signum, frame):
    _SIGNALLED.append(signum)
    raise KeyboardInterrupt


def _resend(signum):
    """The signal ``signum`` sent to this process again in 50 ms, from a timer thread: Python runs its handler in
    the main thread, at the next instruction outside the destructor that swallowed the first."""
    import os
    import threading

    timer = threading.Timer(0.05, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


def _unraisable(hook, resend=_resend):
    """``sys.unraisablehook`` that keeps quiet about the KeyboardInterrupt of a signal that
    landed in a weakref callback or a ``__del__`` (Python would print its traceback and go
    on) and delivers the signal again a moment later, where it can stop the command (a
    training loop has no progress report of ours to raise it: ``evaluate`` and ``validate``
    trained on after such a SIGTERM); ``Watched`` also raises it at the next progress report.
    The rest goes to ``hook``; ``resend(signum)`` delivers it (a test passes its own)."""

    def quiet(unraisable):
        if _SIGNALLED and isinstance(unraisable.exc_value, KeyboardInterrupt):
            resend(_SIGNALLED[-1])
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
