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
# GitHub's autolinks (a scheme's "://", "www."): an escaped ":" or "." after them links nothing; an e-mail address
# stays a mailto: link whatever is escaped in it (GitHub links the text after escapes), its text its own target
_AUTOLINK = re.compile(r"(?i)(?<=[a-z]):(?=//)|(?<=www)\.")
# what starts a block when a line starts with it: a heading, quote, list item or rule (#, >, +, -, =: a setext
# heading's underline), an ordered list's "1." or "1)"; spaces before them (four make a code block) as entities
_BLOCK = re.compile(r"^( *)(?:([#>+=-])|(\d{1,9})([.)]))?")
# characters Python counts printable that draw nothing (Unicode's default-ignorable ones among them): the Hangul
# fillers, the combining grapheme joiner, Khmer's inherent vowels, the Mongolian and other variation selectors; a
# name holding one reads as another name
_BLANK = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]")


def visible(text):
    """``text`` (any value, as str) with every character Python does not count printable written out as its
    escape (\\n, \\x1b, \\u202e, \\udcff): control characters (C0, DEL, C1), line and paragraph separators,
    format characters (bidi overrides and isolates, zero-width characters, U+FEFF), lone surrogates (a file
    name's undecodable byte: the result can be written as UTF-8) and spaces other than ' '; and the printable
    characters that draw nothing (``_BLANK``: U+3164, U+034F, variation selectors). One line, and the rule
    ``cli.common.shown`` applies."""
    text = str(text)
    if text.isprintable() and not _BLANK.search(text):
        return text
    return "".join(c if c.isprintable() and not _BLANK.match(c) else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def markdown(text):
    """``visible`` text that markdown shows as itself: &, < and > as entities, its punctuation
    backslash-escaped (a `|` stays in its table cell, a `[` opens no link, a `$` starts no math, a
    ``https://`` or ``www.`` starts no autolink) and, where a line starts with it, no heading, quote, list or
    code block starts."""
    line = visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    line = _AUTOLINK.sub(lambda m: "\\" + m.group(), _PUNCTUATION.sub(r"\\\1", line))
    return _BLOCK.sub(_unblock, line)


def _unblock(m):
    spaces, marker, number, stop = m.groups()
    return "&#32;" * len(spaces) + (f"\\{marker}" if marker else f"{number}\\{stop}" if number else "")


def drawn(text):
    """Text a matplotlib figure draws as itself: each line ``visible`` (a missing glyph's warning quotes the
    character to the terminal: no escape reaches it) and every ``$`` escaped (two would start mathtext, which
    may fail to draw). Newlines stay: a label's lines are its own."""
    return "\n".join(visible(line).replace("$", r"\$") for line in str(text).split("\n"))
