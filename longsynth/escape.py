"""Text from a user or from a stranger's file, made safe for where it is shown: a model file's
name, a manifest's ``command`` or ``versions`` (docs/format.md, "Trust"). ``visible`` makes it one
line that moves no cursor (newlines and terminal escapes spelled out), for a terminal or a log;
``markdown`` also makes markdown render it as itself, so no heading, link, image, HTML, code span
or table cell can start inside it; ``drawn`` makes a figure (matplotlib) draw it as itself.
"""
from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1: newlines, ESC, CSI
_SPELLED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")  # what markdown reads as syntax inside a line (no [: no link)


def visible(text):
    """``text`` (any value, as str) with its control characters written out (\\n, \\x1b): one line."""
    return _CONTROL.sub(lambda m: _SPELLED.get(m.group(), f"\\x{ord(m.group()):02x}"), str(text))


def markdown(text):
    """``visible`` text that markdown shows as itself: &, < and > as entities, its punctuation
    backslash-escaped (a `|` stays in its table cell, a `[` opens no link)."""
    line = visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _PUNCTUATION.sub(r"\\\1", line)


def drawn(text):
    """Text a matplotlib figure draws as itself: each line ``visible`` (a missing glyph's warning quotes the
    character to the terminal: no escape reaches it) and every ``$`` escaped (two would start mathtext, which
    may fail to draw). Newlines stay: a label's lines are its own."""
    return "\n".join(visible(line).replace("$", r"\$") for line in str(text).split("\n"))
