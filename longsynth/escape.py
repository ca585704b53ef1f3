"""Text from a user or from a stranger's file, made safe for where it is shown: a model file's
name, a manifest's ``command`` or ``versions`` (docs/format.md, "Trust"). ``visible`` makes it one
line that moves no cursor and reads as what it holds (newlines, terminal escapes, bidi overrides,
zero-width characters and a file name's undecodable bytes spelled out), for a terminal or a log;
``markdown`` also makes markdown render it as itself, so no heading, link, image, HTML, code span
or table cell can start inside it; ``drawn`` makes a figure (matplotlib) draw it as itself.
"""
from __future__ import annotations

import re

_PUNCTUATION = re.compile(r"([\\`*_\[\]|~$])")  # markdown's syntax inside a line ([: a link, $: math on GitHub)


def visible(text):
    """``text`` (any value, as str) with every character Python does not count printable written out as its
    escape (\\n, \\x1b, \\u202e, \\udcff): control characters (C0, DEL, C1), line and paragraph separators,
    format characters (bidi overrides and isolates, zero-width characters, U+FEFF), lone surrogates (a file
    name's undecodable byte: the result can be written as UTF-8) and spaces other than ' '. One line, and the
    rule ``cli.common.shown`` applies."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def markdown(text):
    """``visible`` text that markdown shows as itself: &, < and > as entities, its punctuation
    backslash-escaped (a `|` stays in its table cell, a `[` opens no link, a `$` starts no math)."""
    line = visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _PUNCTUATION.sub(r"\\\1", line)


def drawn(text):
    """Text a matplotlib figure draws as itself: each line ``visible`` (a missing glyph's warning quotes the
    character to the terminal: no escape reaches it) and every ``$`` escaped (two would start mathtext, which
    may fail to draw). Newlines stay: a label's lines are its own."""
    return "\n".join(visible(line).replace("$", r"\$") for line in str(text).split("\n"))
