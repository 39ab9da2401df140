"""The generic profile format: a CSV or JSON anyone can write by hand (docs/profile-formats.md §9).

CSV: one header row, then one row per load point. Column names (case-insensitive, any order; all optional
except that at least one load or throughput column must be there; unknown columns are an error so that typos
do not pass silently):

==============================  =========================================================================
column                          meaning [unit]
==============================  =========================================================================
``concurrency``                 client cap on in-flight requests [requests]
``request_rate_per_s``          offered arrival rate [requests/s]; ``inf`` = all at once
``measured_concurrency``        average requests in flight [requests]
``request_throughput_per_s``    completed requests / duration [requests/s]
``request_goodput_per_s``       requests meeting the SLOs / duration [requests/s]
``output_tokens_per_s``         generated tokens / duration, whole server [tokens/s]
``total_tokens_per_s``          (input + output) tokens / duration [tokens/s]
``{m}_s_{stat}``                latency statistic in seconds, ``m`` ∈ ``ttft, tpot, itl, e2e``,
                                ``stat`` ∈ ``mean, p50, p90, p95, p99`` (``p50`` = median)
``{m}_ms_{stat}``               the same in milliseconds (converted to seconds on load)
``mean_input_tokens``           mean prompt length [tokens]
``mean_output_tokens``          mean generated length [tokens]
``completed_requests``          successful requests [count]
``failed_requests``             failed requests [count]
``duration_s``                  benchmark wall time [s]
``label``                       free text naming the point
``model``, ``gpu``, ``engine``,  run metadata: text, the same on every row (or empty)
``engine_version``
``tensor_parallel_size``        run metadata: integer, the same on every row (or empty)
==============================  =========================================================================

Definitions: TTFT = send → first token; TPOT = (e2e − TTFT)/(output tokens − 1) per request; ITL = gap between
streamed chunks; e2e = send → last token. Empty cells are missing values. Numbers are plain (``1234.5``;
no thousands separators, no NaN); negative numbers are rejected. Text cells are never evaluated: a label
``=SUM(A1)`` stays that literal text.

JSON: ``{"format": "llmcap-profile", "version": 1, "model": …, "gpu": …, "tensor_parallel_size": …,
"engine": …, "engine_version": …, "load_points": [{<the columns above>}, …]}``.
"""
from __future__ import annotations

import re

from calculators.errors import InvalidInputError
from calculators.profiles._common import count, num, require_mapping, text_field
from calculators.profiles.model import Profile, build_profile

FORMAT_ID = "llmcap-profile"
_POINT_NUM = ("concurrency", "measured_concurrency", "request_throughput_per_s", "request_goodput_per_s",
              "output_tokens_per_s", "total_tokens_per_s", "mean_input_tokens", "mean_output_tokens", "duration_s")
_POINT_INT = ("completed_requests", "failed_requests")
_META_TEXT = ("model", "gpu", "engine", "engine_version")
_LAT = re.compile(r"^(ttft|tpot|itl|e2e)_(s|ms)_(mean|p50|p90|p95|p99)$")
_FIELD = {"ttft": "ttft_s", "tpot": "tpot_s", "itl": "itl_s", "e2e": "e2e_latency_s"}
_LOAD_OR_RATE = {"concurrency", "request_rate_per_s", "request_throughput_per_s", "output_tokens_per_s"}


def known_column(col: str) -> bool:
    """Whether ``col`` is a column of the generic format."""
    return (col in _POINT_NUM or col in _POINT_INT or col in _META_TEXT or _LAT.match(col) is not None
            or col in ("request_rate_per_s", "label", "tensor_parallel_size"))


def is_generic_csv(rows: list[list[str]]) -> bool:
    """Whether CSV rows use the generic format's header."""
    head = {c.strip().lower() for c in rows[0]} if rows else set()
    return bool(head & _LOAD_OR_RATE) and sum(known_column(c) for c in head) >= len(head) / 2


def is_generic_json(obj: object) -> bool:
    """Whether a JSON value is the generic format."""
    return isinstance(obj, dict) and obj.get("format") == FORMAT_ID


def _point(name: str, where: str, rec: dict) -> dict:
    point: dict = {}
    for col, value in rec.items():
        field = where + col
        if col in _POINT_NUM:
            point[col] = num(name, field, value)
        elif col in _POINT_INT:
            point[col] = count(name, field, value)
        elif col == "request_rate_per_s":
            point[col] = num(name, field, value, allow_inf=True)
        elif col == "label":
            point["label"] = text_field(value)
        elif m := _LAT.match(col):
            v = num(name, field, value)
            key = "median" if m.group(3) == "p50" else m.group(3)
            scale = 1.0 if m.group(2) == "s" else 1e-3
            point.setdefault(_FIELD[m.group(1)], {})[key] = None if v is None else v * scale
        elif col not in _META_TEXT and col != "tensor_parallel_size":
            raise InvalidInputError(f"{name}: {field}", col,
                                    "a column of the generic format (see docs/profile-formats.md §9)")
    return point


def _meta(name: str, where: str, rec: dict, meta: dict) -> None:
    for col in (*_META_TEXT, "tensor_parallel_size"):
        if col not in rec:
            continue
        raw = rec[col]
        value = text_field(raw) if col != "tensor_parallel_size" else count(name, where + col, raw)
        if value is None:
            continue
        if meta.get(col) is not None and meta[col] != value:
            raise InvalidInputError(f"{name}: {where}{col}", value, f"the same {col} on every row ({meta[col]!r})")
        meta[col] = value


def load_generic_csv(name: str, rows: list[list[str]]) -> Profile:
    """Import a generic-format CSV."""
    head = [c.strip().lower() for c in rows[0]]
    if len(set(head)) != len(head):
        raise InvalidInputError(f"{name}: header", rows[0], "each column once")
    points: list[dict] = []
    meta: dict[str, object] = {}
    for r, row in enumerate(rows[1:], 2):
        if not any(c.strip() for c in row):
            continue
        if len(row) > len(head):
            raise InvalidInputError(f"{name}: row {r}", row, f"at most {len(head)} cells (the header's columns)")
        rec = {h: (row[i] if i < len(row) else "") for i, h in enumerate(head)}
        points.append(_point(name, f"row {r} ", rec))
        _meta(name, f"row {r} ", rec, meta)
    return build_profile(name, source_format="generic-csv", source_files=(name,), load_points=points, **meta)


def load_generic_json(name: str, obj: dict) -> Profile:
    """Import a generic-format JSON document."""
    version = obj.get("version", 1)
    if version != 1:
        raise InvalidInputError(f"{name}: version", version, "1")
    meta: dict = {}
    _meta(name, "", {k: v for k, v in obj.items() if k in (*_META_TEXT, "tensor_parallel_size")}, meta)
    raw_points = obj.get("load_points")
    if not isinstance(raw_points, list):
        raise InvalidInputError(f"{name}: load_points", type(raw_points).__name__, "a list of load-point objects")
    points = [_point(name, f"load_points[{i}].", require_mapping(name, p, f"load_points[{i}]"))
              for i, p in enumerate(raw_points)]
    unknown = set(obj) - {"format", "version", "load_points", "notes", *_META_TEXT, "tensor_parallel_size"}
    if unknown:
        raise InvalidInputError(f"{name}: {sorted(unknown)[0]}", sorted(unknown), "a key of the generic format")
    return build_profile(name, source_format="generic-json", source_files=(name,), load_points=points, **meta)
