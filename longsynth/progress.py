"""Progress of long jobs, readable in a terminal and in a log file.

On a terminal a tqdm bar redraws in place; when stderr is a file or a pipe (a batch
scheduler's log, ``2>log``) the same bar is written as whole lines, one every
``LOG_EVERY`` seconds and one at the end, without bar glyphs or carriage returns::

    gen cumsum:  40% 4,096/10,000 samples [00:02<00:03, 1,873 samples/s]

Counts are written one way everywhere (``count``: thousands separated by commas).
"""
import contextlib
import sys

from tqdm import tqdm

from longsynth.escape import visible

LOG_EVERY = 10.0  # seconds between lines in a log
TTY_EVERY = 0.1  # seconds between redraws on a terminal


def count(n):
    """The one format for counts of samples, shards, steps: 12,345."""
    return f"{int(n):,}"


def rate_text(rate, unit):
    """12,345 samples/s; 3.21 steps/s; ? before the first update."""
    if not rate:
        return f"? {unit}/s"
    return f"{rate:,.0f} {unit}/s" if rate >= 100 else f"{rate:.3g} {unit}/s"


class _Lines:
    """A file for tqdm in a log: each redraw becomes one whole line."""

    def __init__(self, f):
        self.f = f

    def write(self, s):
        s = s.replace("\r", "").replace("\x1b[A", "").strip()
        if s:
            self.f.write(s + "\n")

    def flush(self):
        self.f.flush()


class Bar(tqdm):
    """tqdm with our number format (``{count}``, ``{count_total}``, ``{rate_text}``) and a
    line mode for logs. ``postfix`` items (loss, metric) follow the rate."""

    def __init__(self, total=None, desc="", unit="it", initial=0, file=None, disable=False):
        f = sys.stderr if file is None else file
        tty = bool(getattr(f, "isatty", lambda: False)())
        pct = "{percentage:3.0f}% " if total else ""
        eta = "<{remaining}" if total else ""
        body = "{count}/{count_total} {unit} [{elapsed}" + eta + ", {rate_text}{postfix}]"
        fmt = ("{desc}: " + ("{percentage:3.0f}%|{bar:20}| " if total else "") + body if tty
               else "{desc}: " + pct + body)
        desc = visible(desc)  # a model file's name, a user's --format: never a terminal escape
        super().__init__(total=total, desc=desc, unit=unit, initial=initial, file=f if tty else _Lines(f),
                         mininterval=TTY_EVERY if tty else LOG_EVERY, maxinterval=LOG_EVERY * 6,
                         bar_format=fmt, dynamic_ncols=tty, disable=disable, smoothing=0.1)

    @property
    def format_dict(self):
        d = super().format_dict
        rate = d.get("rate")
        if rate is None and d["elapsed"]:
            rate = (d["n"] - d.get("initial", 0)) / d["elapsed"]
        d.update(count=count(d["n"]), count_total=count(d["total"]) if d["total"] is not None else "?",
                 rate_text=rate_text(rate, d["unit"]))
        return d


class Samples:
    """The store's progress callback protocol on a ``Bar``: ``progress(None, total=N,
    done=K)`` opens the bar at K of N (a resumed run), then ``progress(n)`` adds n."""

    def __init__(self, desc, unit="samples", file=None):
        self.desc, self.unit, self.file, self.bar = desc, unit, file, None

    def __call__(self, n, total=None, done=0):
        if n is None:
            self.close()
            self.bar = Bar(total=total, desc=self.desc, unit=self.unit, initial=done, file=self.file)
            return
        if self.bar is not None and n:
            self.bar.update(n)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


COMPILE_NOTE_AFTER = 2.0  # seconds: a first call slower than this is compiling kernels


@contextlib.contextmanager
def compiling_note(note, what="kernels", verb="compiling"):
    """Around a call that may compile Numba kernels (a minute or more on first use; later runs load
    them from Numba's cache): ``note(line)`` says so once COMPILE_NOTE_AFTER seconds pass, and again
    with the time taken when it ends. ``verb``: "compiling" where the call is the compilation (one
    sample), "drawing" where it also draws rows."""
    import threading
    import time

    line = (f"compiling {what} (first use only; later runs load them from Numba's cache) ..." if verb == "compiling"
            else f"{verb} {what} (a first use also compiles its kernels: a minute or more, then cached) ...")
    timer = threading.Timer(COMPILE_NOTE_AFTER, note, (line,))
    timer.daemon = True
    t0 = time.perf_counter()
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        dt = time.perf_counter() - t0
        if dt > COMPILE_NOTE_AFTER:
            note(f"{what} ready in {dt:.0f} s")


def to_stderr(line):
    """A note on stderr, prefixed with longsynth: (the Python API's notes; the CLI has its own)."""
    print(f"longsynth: {visible(line)}", file=sys.stderr, flush=True)  # a path in it: spelled out
