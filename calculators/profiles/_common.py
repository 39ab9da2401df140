"""Shared, safe readers: bytes → text → JSON/CSV, and numbers with the field named in every error.

Nothing here evaluates content: JSON goes through :func:`json.loads` with NaN/Infinity constants
replaced by a sentinel (:data:`NONFINITE`), CSV through :mod:`csv`. No eval, pickle or YAML.
"""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping

from calculators.errors import InvalidInputError

MAX_PROFILE_BYTES = 20 * 1024 * 1024
"""Largest profile file accepted [bytes]. vLLM's legacy per-request arrays make ~1 MB per 200 requests."""


class _NonFinite:
    """A JSON ``NaN``/``Infinity``/``-Infinity`` constant, kept apart so that each importer decides."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


NONFINITE = _NonFinite  # the type; instances carry the constant's spelling


def decode(name: str, data: bytes) -> str:
    """Bytes of an uploaded file → text. Accepts UTF-8 with or without a UTF-8 BOM; rejects the rest."""
    if not isinstance(data, bytes | bytearray):
        raise InvalidInputError(f"{name}: file", type(data).__name__, "the file's bytes")
    if len(data) > MAX_PROFILE_BYTES:
        raise InvalidInputError(
            f"{name}: file size", f"{len(data)} bytes", f"at most {MAX_PROFILE_BYTES} bytes (MAX_PROFILE_BYTES)"
        )
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff") or data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InvalidInputError(f"{name}: encoding", "UTF-16/UTF-32 byte-order mark", "UTF-8 text; save as UTF-8")
    if data.startswith(b"\xef\xbb\xbf"):  # Excel's UTF-8 BOM: harmless, dropped.
        data = data[3:]
    if b"\x00" in data[:8192]:
        raise InvalidInputError(f"{name}: file", "binary data (NUL bytes)", "a JSON, JSONL or CSV text file")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{name}: encoding", f"byte {exc.object[exc.start]:#04x} at offset {exc.start}", "UTF-8 text"
        ) from None
    if not text.strip():
        raise InvalidInputError(f"{name}: file", "empty file", "a benchmark result file")
    bad = sum(1 for ch in text[:8192] if ord(ch) < 32 and ch not in "\t\r\n")
    if bad:
        raise InvalidInputError(f"{name}: file", f"{bad} control characters", "a JSON, JSONL or CSV text file")
    return text


def loads_json(name: str, text: str, *, line: int | None = None) -> object:
    """Parse JSON; NaN/Infinity constants become :class:`NONFINITE` instances, never floats."""
    try:
        return json.loads(text, parse_constant=_NonFinite)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno if line is None else line}, column {exc.colno}"
        raise InvalidInputError(f"{name}: JSON", f"{exc.msg} at {where}", "complete, valid JSON") from None
    except RecursionError:
        raise InvalidInputError(f"{name}: JSON", "nesting too deep", "a benchmark result file") from None


def loads_jsonl(name: str, text: str) -> list[object]:
    """Parse JSON Lines (blank lines skipped)."""
    return [loads_json(name, ln, line=i) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]


def read_csv(name: str, text: str) -> list[list[str]]:
    """CSV rows as lists of strings (never evaluated)."""
    try:
        return list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise InvalidInputError(f"{name}: CSV", str(exc), "valid comma-separated text") from None


def csv_blocks(rows: list[list[str]]) -> list[list[list[str]]]:
    """Split CSV rows into blocks separated by blank rows."""
    blocks: list[list[list[str]]] = [[]]
    for row in rows:
        if not any(cell.strip() for cell in row):
            if blocks[-1]:
                blocks.append([])
        else:
            blocks[-1].append(row)
    return [b for b in blocks if b]


def num(
    name: str,
    field: str,
    value: object,
    *,
    nonfinite: str = "reject",
    allow_inf: bool = False,
    thousands: bool = False,
) -> float | None:
    """One number from a file: ``None`` for missing/null/empty; ``InvalidInputError`` for anything odd.

    ``nonfinite="missing"`` turns JSON NaN/Infinity constants into ``None`` (for tools that write them);
    ``allow_inf`` accepts ``inf`` (request rates). Numeric strings are accepted (LLMPerf writes ``"550"``);
    text such as ``=1+2`` is rejected, never evaluated. Negative values pass here and are rejected by the
    model, which names the normalised field.
    """
    if value is None:
        return None
    if isinstance(value, _NonFinite):
        if allow_inf and value.text == "Infinity":
            return math.inf
        if nonfinite == "missing":
            return None
        raise InvalidInputError(f"{name}: {field}", value.text, "a finite number (JSON NaN/Infinity not accepted)")
    if isinstance(value, bool):
        raise InvalidInputError(f"{name}: {field}", value, "a number")
    if isinstance(value, int | float):
        out = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if thousands:
            text = text.replace(",", "")
        if not text:
            return None
        if not _looks_numeric(text):
            raise InvalidInputError(f"{name}: {field}", value, "a number (text is never evaluated)")
        out = float(text)
    else:
        raise InvalidInputError(f"{name}: {field}", type(value).__name__, "a number")
    if math.isnan(out) or (math.isinf(out) and not (allow_inf and out > 0)):
        raise InvalidInputError(f"{name}: {field}", value, "a finite number")
    return out


def _looks_numeric(text: str) -> bool:
    body = text.lower()
    if body in ("inf", "+inf", "infinity", "nan", "-inf", "-infinity"):
        return body in ("inf", "+inf", "infinity")  # float() then decides; only +inf may pass
    allowed = set("0123456789.eE+-")
    return bool(body) and set(body) <= allowed and any(c.isdigit() for c in body)


def count(name: str, field: str, value: object, *, nonfinite: str = "reject", allow_inf: bool = False,
          thousands: bool = False) -> int | None:
    """A request count: a number that must be whole (keywords as for :func:`num`)."""
    out = num(name, field, value, nonfinite=nonfinite, allow_inf=allow_inf, thousands=thousands)
    if out is None:
        return None
    if out != int(out):
        raise InvalidInputError(f"{name}: {field}", value, "a whole number of requests")
    return int(out)


def text_field(value: object) -> str | None:
    """A text field as plain text (``=1+2`` stays the literal string ``'=1+2'``)."""
    if value is None or isinstance(value, _NonFinite):
        return None
    out = str(value).strip()
    return out or None


def stats(
    name: str, src: Mapping[str, tuple[str, object]], *, scale: float = 1.0, nonfinite: str = "reject"
) -> dict[str, float | None]:
    """A :class:`Stats` dict from ``{'mean': (source_field, value), …}`` × ``scale`` (the unit conversion)."""
    out: dict[str, float | None] = {}
    for key, (field, raw) in src.items():
        v = num(name, field, raw, nonfinite=nonfinite)
        out[key] = None if v is None else v * scale
    return out


def require_mapping(name: str, obj: object, what: str) -> dict:
    """``obj`` as a dict, or an error saying what was expected."""
    if not isinstance(obj, dict):
        raise InvalidInputError(f"{name}: {what}", type(obj).__name__, "a JSON object")
    return obj


def sub_mapping(obj: dict, key: str) -> dict:
    """``obj[key]`` when it is a JSON object, else an empty dict."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


UNIT_SCALE_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0}
"""Time unit spellings the tools write → seconds."""
