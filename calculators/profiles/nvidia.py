"""NVIDIA AIPerf and GenAI-Perf exports (``docs/profile-formats.md`` §4–5).

Formats:

``aiperf-json`` / ``genai-perf-json``
    ``profile_export_aiperf.json`` (metrics as top-level keys, ``schema_version`` ≥ 1; or the legacy 0.1.x
    layout under ``"records"`` with short tags ``ttft``/``ttst``) and GenAI-Perf's
    ``profile_export_genai_perf.json`` (the same ``{metric: {unit, avg, p50, …}}`` shape).
``aiperf-csv`` / ``genai-perf-csv``
    A stats block (``Metric,avg,min,max,…,p99,…``; columns found by header name, values may carry
    thousands separators), a blank line, then a ``Metric,Value`` block. The unit is in the metric name's
    parentheses. The CSV does not say the model or the load level.
``aiperf-jsonl``
    ``profile_export.jsonl``: one record per request, aggregated into one load point here: successful
    requests (``error`` null, not a warm-up) give the statistics (numpy: mean, median, linear percentiles);
    errored ones are counted as failed; the duration is last response − first request timestamp [ns], and
    throughputs are successful requests (and their output tokens) / duration, as AIPerf computes them.
``genai-perf-analyze-csv``
    ``genai-perf analyze``'s sweep CSV: one load point per run config (p99 latencies, average throughputs).

Semantics: every time is converted by its ``unit`` field (ms → s; trust the unit, not the name).
AIPerf/GenAI-Perf ``inter_token_latency`` = (latency − TTFT)/(OSL − 1) is vLLM's **TPOT** (``tpot_s``);
AIPerf ``inter_chunk_latency`` (gaps between streamed chunks) is vLLM's **ITL** (``itl_s``). Output length is
``output_sequence_length`` (includes reasoning tokens; AIPerf's ``output_token_count`` excludes them).
"""
from __future__ import annotations

import re

import numpy as np

from calculators.errors import InvalidInputError
from calculators.profiles._common import UNIT_SCALE_S, count, csv_blocks, num, require_mapping, sub_mapping, text_field
from calculators.profiles.model import Profile, build_profile

_TAGS = {
    "ttft": "ttft_s", "time_to_first_token": "ttft_s", "inter_token_latency": "tpot_s",
    "inter_chunk_latency": "itl_s", "request_latency": "e2e_latency_s",
}
_STAT_KEYS = {"mean": ("avg",), "median": ("p50", "median"), "p90": ("p90",), "p95": ("p95",), "p99": ("p99",)}
_NOTE = ("AIPerf/GenAI-Perf inter_token_latency (excludes TTFT) is TPOT; inter_chunk_latency is ITL; "
         "times converted from their unit field to seconds")


def _scale(name: str, field: str, unit: object) -> float:
    u = str(unit or "").strip().lower()
    if u in UNIT_SCALE_S:
        return UNIT_SCALE_S[u]
    raise InvalidInputError(f"{name}: {field}.unit", unit, f"a time unit ({', '.join(sorted(UNIT_SCALE_S))})")


def _point_from_metrics(name: str, metrics: dict[str, dict], *, thousands: bool = False) -> dict:
    """One load point from ``{tag: {unit, avg, p50, …}}``."""
    point: dict = {}

    def scalar(tag: str) -> float | None:
        m = metrics.get(tag)
        return num(name, f"{tag}.avg", m.get("avg"), thousands=thousands) if isinstance(m, dict) else None

    for tag, field in _TAGS.items():
        m = metrics.get(tag)
        if not isinstance(m, dict) or point.get(field):
            continue
        scale = _scale(name, tag, m.get("unit"))
        out = {}
        for key, names in _STAT_KEYS.items():
            src = next((n for n in names if m.get(n) is not None), names[0])
            v = num(name, f"{tag}.{src}", m.get(src), thousands=thousands)
            out[key] = None if v is None else v * scale
        point[field] = out
    point["request_throughput_per_s"] = scalar("request_throughput")
    point["output_tokens_per_s"] = scalar("output_token_throughput")
    point["request_goodput_per_s"] = scalar("goodput") if "goodput" in metrics else scalar("request_goodput")
    point["mean_input_tokens"] = scalar("input_sequence_length")
    point["mean_output_tokens"] = scalar("output_sequence_length")
    for tag, field in (("request_count", "completed_requests"), ("error_request_count", "failed_requests")):
        v = scalar(tag)
        point[field] = None if v is None else count(name, f"{tag}.avg", v)
    if isinstance(metrics.get("benchmark_duration"), dict):
        d = scalar("benchmark_duration")
        point["duration_s"] = None if d is None else d * _scale(
            name, "benchmark_duration", metrics["benchmark_duration"].get("unit") or "s")
    return point


# --- JSON summaries ------------------------------------------------------------------------------------------------


def is_aiperf_json(obj: object) -> bool:
    """Whether a JSON object is an AIPerf/GenAI-Perf summary (current or legacy ``records`` layout)."""
    if not isinstance(obj, dict):
        return False
    records = obj.get("records")
    if isinstance(records, dict) and any(isinstance(v, dict) and "tag" in v for v in records.values()):
        return True
    return any(isinstance(obj.get(t), dict) and "unit" in obj[t] and "avg" in obj[t]
               for t in ("time_to_first_token", "request_latency", "request_throughput"))


def _load_from_config(name: str, cfg: object) -> tuple[dict, str | None]:
    load: dict = {}
    model = None
    if not isinstance(cfg, dict):
        return load, model
    candidates = [cfg.get("loadgen"), cfg, (cfg.get("perf_analyzer") or {}).get("stimulus")
                  if isinstance(cfg.get("perf_analyzer"), dict) else None]
    for c in candidates:
        if isinstance(c, dict):
            if load.get("concurrency") is None and c.get("concurrency") is not None:
                load["concurrency"] = num(name, "input_config.concurrency", c.get("concurrency"))
            if load.get("request_rate_per_s") is None and c.get("request_rate") is not None:
                load["request_rate_per_s"] = num(name, "input_config.request_rate", c.get("request_rate"),
                                                 allow_inf=True)
    endpoint = sub_mapping(cfg, "endpoint")
    for names in (endpoint.get("model_names"), cfg.get("model_names"), cfg.get("model")):
        if isinstance(names, list) and names:
            model = text_field(names[0])
        elif isinstance(names, str):
            model = text_field(names)
        if model:
            break
    return load, model


def load_aiperf_json(name: str, obj: dict) -> Profile:
    """Import ``profile_export_aiperf.json`` (any schema) or ``profile_export_genai_perf.json``."""
    metrics = obj["records"] if isinstance(obj.get("records"), dict) else obj
    metrics = {k: v for k, v in metrics.items() if isinstance(v, dict) and "avg" in v}
    point = _point_from_metrics(name, metrics)
    load, model = _load_from_config(name, obj.get("input_config"))
    point.update(load)
    aiperf = "schema_version" in obj or "aiperf_version" in obj or "records" in obj or "error_summary" in obj
    return build_profile(name, source_format="aiperf-json" if aiperf else "genai-perf-json", source_files=(name,),
                         load_points=[point], model=model, notes=(_NOTE,))


# --- CSV -----------------------------------------------------------------------------------------------------------

_UNIT_RE = re.compile(r"^(.*?)\s*\(([^)]*)\)\s*$")


def _tag(label: str) -> tuple[str, str | None]:
    m = _UNIT_RE.match(label.strip())
    base, unit = (m.group(1), m.group(2)) if m else (label.strip(), None)
    return re.sub(r"[^a-z0-9]+", "_", base.lower()).strip("_"), unit


def is_stats_csv(rows: list[list[str]]) -> bool:
    """Whether CSV rows are an AIPerf/GenAI-Perf ``profile_export_*.csv``."""
    head = [c.strip().lower() for c in rows[0]] if rows else []
    return bool(head) and head[0] == "metric" and ("avg" in head or head[1:2] == ["value"])


def load_stats_csv(name: str, rows: list[list[str]]) -> Profile:
    """Import ``profile_export_aiperf.csv`` or ``profile_export_genai_perf.csv``."""
    metrics: dict[str, dict] = {}
    genai = False
    for block in csv_blocks(rows):
        head = [c.strip().lower() for c in block[0]]
        if head[0] != "metric":
            continue
        if "p99" in head and "p1" in head and head.index("p99") < head.index("p1"):
            genai = True  # GenAI-Perf orders percentiles high → low
        for row in block[1:]:
            if not row or not row[0].strip():
                continue
            tag, unit = _tag(row[0])
            entry = {"unit": unit}
            if head[1:2] == ["value"]:
                entry["avg"] = row[1] if len(row) > 1 else None
            else:
                entry.update({h: (row[i] if i < len(row) else None) for i, h in enumerate(head) if i})
            metrics[tag] = entry
    point = _point_from_metrics(name, metrics, thousands=True)
    fmt = "genai-perf-csv" if genai else "aiperf-csv"
    return build_profile(name, source_format=fmt, source_files=(name,), load_points=[point],
                         notes=(_NOTE, "the CSV export does not record the model or the load level"))


def is_analyze_csv(rows: list[list[str]]) -> bool:
    """Whether CSV rows are ``genai-perf analyze``'s ``analyze_export_genai_perf.csv``."""
    return bool(rows) and rows[0][:1] == ["Config Name"] and any("Throughput" in c for c in rows[0])


_ANALYZE = {"time_to_first_token": "ttft_s", "inter_token_latency": "tpot_s", "request_latency": "e2e_latency_s"}


def load_analyze_csv(name: str, rows: list[list[str]]) -> Profile:
    """Import a ``genai-perf analyze`` sweep CSV: one load point per run config (its first block)."""
    block = csv_blocks(rows)[0]
    head = block[0]
    points = []
    for r, row in enumerate(block[1:], 2):
        cell = {h.strip(): (row[i] if i < len(row) else "") for i, h in enumerate(head)}
        where = f"row {r} "
        point: dict = {"label": text_field(cell.get("Config Name"))}
        for col, value in cell.items():
            m = re.match(r"^(p\d+|Avg\.)\s+(.*)$", col) or re.match(r"^()(Request Throughput.*)$", col)
            if col == "Concurrency":
                point["concurrency"] = num(name, where + col, value, thousands=True)
            elif col in ("Request Rate", "Request Rate (requests/sec)"):
                point["request_rate_per_s"] = num(name, where + col, value, thousands=True, allow_inf=True)
            elif col == "ISL":
                point["mean_input_tokens"] = num(name, where + col, value, thousands=True)
            elif m:
                stat = "mean" if m.group(1) == "Avg." else m.group(1)
                tag, unit = _tag(m.group(2))
                if tag in _ANALYZE and stat in ("mean", "p50", "p90", "p95", "p99"):
                    v = num(name, where + col, value, thousands=True)
                    key = "median" if stat == "p50" else stat
                    point.setdefault(_ANALYZE[tag], {})[key] = None if v is None else v * _scale(name, col, unit)
                elif tag == "output_token_throughput" and stat == "mean":
                    point["output_tokens_per_s"] = num(name, where + col, value, thousands=True)
                elif tag == "request_throughput":
                    point["request_throughput_per_s"] = num(name, where + col, value, thousands=True)
                elif tag == "output_sequence_length" and stat == "mean":
                    point["mean_output_tokens"] = num(name, where + col, value, thousands=True)
        points.append(point)
    return build_profile(name, source_format="genai-perf-analyze-csv", source_files=(name,), load_points=points,
                         notes=(_NOTE, "genai-perf analyze gives p99 latencies and average throughputs only; "
                                "ISL is the configured input length"))


# --- per-request JSONL ---------------------------------------------------------------------------------------------


def is_aiperf_jsonl(records: list) -> bool:
    """Whether parsed JSON Lines are AIPerf ``profile_export.jsonl`` records."""
    return bool(records) and all(isinstance(r, dict) and "metrics" in r and "metadata" in r for r in records[:5])


def _value(name: str, where: str, m: object) -> list[float]:
    if not isinstance(m, dict):
        return []
    raw = m.get("value")
    scale = _scale(name, where, m.get("unit")) if str(m.get("unit", "")).lower() in UNIT_SCALE_S else 1.0
    vals = raw if isinstance(raw, list) else [raw]
    out = [num(name, where, v) for v in vals]
    return [v * scale for v in out if v is not None]


def load_aiperf_jsonl(name: str, records: list) -> Profile:
    """Aggregate AIPerf per-request records into one load point (numpy statistics)."""
    series: dict[str, list[float]] = {}
    failed = ok = 0
    first_ns, last_ns = [], []
    for i, rec in enumerate(records, 1):
        rec = require_mapping(name, rec, f"line {i}")
        meta = sub_mapping(rec, "metadata")
        if meta.get("credit_phase") == "warmup":
            continue
        if rec.get("error") is not None:
            failed += 1
            continue
        ok += 1
        metrics = require_mapping(name, rec.get("metrics"), f"line {i} metrics")
        for tag, m in metrics.items():
            series.setdefault(tag, []).extend(_value(name, f"line {i} metrics.{tag}", m))
        first_ns += [num(name, f"line {i} min_request_timestamp", (metrics.get("min_request_timestamp") or {})
                         .get("value"))]
        last_ns += [num(name, f"line {i} max_response_timestamp", (metrics.get("max_response_timestamp") or {})
                        .get("value"))]
    if not ok:
        raise InvalidInputError(f"{name}: records", f"{failed} failed, 0 successful", "at least one successful request")
    point: dict = {"completed_requests": ok, "failed_requests": failed}
    for tag, field in _TAGS.items():
        arr = np.asarray(series.get(tag, []), dtype=float)
        if arr.size and not point.get(field):
            point[field] = {"mean": float(arr.mean()), "median": float(np.median(arr)),
                            **{f"p{q}": float(np.percentile(arr, q)) for q in (90, 95, 99)}}
    isl, osl = series.get("input_sequence_length", []), series.get("output_sequence_length", [])
    point["mean_input_tokens"] = float(np.mean(isl)) if isl else None
    point["mean_output_tokens"] = float(np.mean(osl)) if osl else None
    starts, ends = [v for v in first_ns if v is not None], [v for v in last_ns if v is not None]
    if starts and ends and max(ends) > min(starts):
        duration = (max(ends) - min(starts)) * 1e-9
        point["duration_s"] = duration
        point["request_throughput_per_s"] = ok / duration
        point["output_tokens_per_s"] = float(np.sum(osl)) / duration if osl else None
    return build_profile(name, source_format="aiperf-jsonl", source_files=(name,), load_points=[point],
                         notes=(_NOTE, "aggregated from per-request records with numpy (linear percentiles); "
                                "the file does not record the model or the load level"))
