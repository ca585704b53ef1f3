"""One schema language for every record longsynth reads from a stranger (docs/format.md,
"Trust"): the manifest (``longsynth.store.schema``), the certificates and reports
(``longsynth.certificate``), a run's ``files.json`` and a checkpoint's structure
(``models_ref``) are pydantic models, one per record, and a record that does not follow its
model is one line naming the field by its dotted path (``splits.train.shards[3].start: ...``).

What this module holds is what the models share: the field types with their bounds, the
relation check's failure (``Bad``: a validator that compares fields raises it with the field's
path, and pydantic passes it through unchanged), and ``parse``, which validates and turns the
first error into that line.
"""
from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError

from longsynth.errors import LongsynthError
from longsynth.escape import visible

MAX_TEXT = 10_000  # characters of a free-text field (a command line, versions, docs)


def Int(lo, hi=None):
    """An integer (not a boolean, not a number with a fraction) in lo..hi."""
    return Annotated[int, Strict(), Field(ge=lo, le=hi)]


def Text(limit=MAX_TEXT, pattern=None):
    """A string of at most ``limit`` characters, matching ``pattern`` where given."""
    return Annotated[str, Strict(), Field(max_length=limit, pattern=pattern)]


Hex64 = Text(64, r"^[0-9a-f]{64}$")  # a SHA-256 in lowercase hex
Finite = Annotated[float, Strict(), Field(allow_inf_nan=False)]


class Record(BaseModel):
    """A record read from a file: fields it does not name are ignored (kept by no reader)."""

    model_config = ConfigDict(extra="ignore")


class Bad(Exception):
    """A relation between fields that does not hold: ``field`` is its dotted path. Both are kept
    ``escape.visible`` (a key or value a stranger chose, spelled out): one line."""

    def __init__(self, field, text):
        field, text = visible(field), visible(text)
        super().__init__(f"{field}: {text}")
        self.field, self.text = field, text


def kind(value):
    """What a JSON value is, in words (``a list``, ``null``)."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def path(loc):
    """pydantic's location tuple as a dotted path: ``("splits", "train", "shards", 3)`` is
    ``splits.train.shards[3]``; a key the stranger chose is cut to 40 characters and spelled out
    (``escape.visible``: its newlines and escapes written out)."""
    out = ""
    for part in loc:
        if part == "[key]":
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            part = visible(str(part)[:40])
            out += f".{part}" if out else part
    return out


def _number(v):
    return f"an integer of {v.bit_length()} bits" if isinstance(v, int) and v.bit_length() >= 80 else f"{v:,}"


def reason(err):
    """One error of a ValidationError (``err``: an item of ``errors()``) in our words."""
    typ, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if typ == "missing":
        return "missing"
    if typ in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {kind(value)}"
    if typ in ("float_type", "float_parsing"):
        return f"expected a number, got {kind(value)}"
    if typ == "finite_number":
        return f"must be a finite number, got {value}"
    if typ in ("string_type", "bool_type", "list_type", "dict_type", "model_type", "model_attributes_type"):
        want = {"string_type": "a string", "bool_type": "true or false", "list_type": "a list"}.get(typ, "an object")
        return f"expected {want}, got {kind(value)}"
    if typ == "greater_than_equal" and isinstance(value, int):
        return f"must be at least {ctx['ge']:,}, got {_number(value)}"
    if typ == "less_than_equal" and isinstance(value, int):
        return f"must be at most {ctx['le']:,}, got {_number(value)}"
    if typ == "invalid-json-value":
        return f"holds something other than numbers and text ({kind(value)})"
    if typ == "is_instance_of":
        return f"expected a {ctx['class']}, got {kind(value)}"
    if typ == "string_too_long":
        return f"longer than {ctx['max_length']:,} characters"
    if typ == "string_too_short":
        return "empty"
    if typ == "string_pattern_mismatch":
        return f"{str(value)[:80]!r} is malformed"
    if typ == "too_long":
        return f"more than {ctx['max_length']:,} entries"
    if typ == "literal_error":
        return f"must be one of {ctx['expected']}" + (f", got {str(value)[:40]!r}" if isinstance(value, str) else "")
    msg = visible(" ".join(str(err["msg"]).split()))
    if typ == "value_error":  # a validator's own words, which name what is wrong
        return msg[len("Value error, "):] if msg.startswith("Value error, ") else msg
    if isinstance(value, float) and not math.isfinite(value):
        return f"{msg} (got {value})"
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return f"{msg} (got {str(value)[:60]!r})"
    return msg


def parse(model, raw, where, whole, error=LongsynthError, context=None):
    """``raw`` (parsed JSON) validated as ``model``; ``error`` (one line, ``escape.visible``: ``where``, the
    field's dotted path, what is wrong) for the first field that does not follow it or the first
    relation that does not hold. ``whole`` names the record when the fault is the record itself."""
    if not isinstance(raw, dict):
        raise error(visible(f"{where}: {whole}: expected an object, got {kind(raw)}"))
    try:
        return model.model_validate(raw, context=context)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        raise error(visible(f"{where}: {path(err['loc']) or whole}: {reason(err)}")) from None
    except Bad as e:
        raise error(visible(f"{where}: {e.field}: {e.text}")) from None


__all__ = ["Bad", "Finite", "Hex64", "Int", "MAX_TEXT", "Record", "Text", "kind", "parse", "path", "reason"]
