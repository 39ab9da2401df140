"""NVIDIA AIPerf's parameter-sweep export ``profile_export_aiperf_sweep.csv`` (``docs/profile-formats.md`` §5).

Source: AIPerf ``src/aiperf/exporters/aggregate/aggregate_sweep_csv_exporter.py`` and the "Sweep Aggregate
API Reference" (``docs/api/sweep-aggregates.md``), https://github.com/ai-dynamo/aiperf, releases ≥ 0.11.

Layout: blank-line separated sections; only the first is read. Its header is the swept parameters
(``concurrency``, ``request_rate``, others such as an input length) followed, for every metric key in
alphabetical order, by ``<key>_mean``, ``<key>_std``, ``<key>_min``, ``<key>_max``, ``<key>_cv``; one row per
parameter combination. A metric key is an AIPerf tag and one of its run statistics
(``time_to_first_token_p99``, ``request_throughput_avg``); some builds write a single-trial sweep with the
bare tag (``time_to_first_token_mean`` = that run's average), read here as ``…_avg``. ``_mean`` is the mean
over the trials (``--num-profile-runs``) of each run's statistic, ``_std``/``_min``/``_max``/``_cv`` its spread
across trials. The CSV carries no units: values are in AIPerf's display units, milliseconds for latencies,
seconds for ``benchmark_duration``, requests/s, tokens/s and tokens; times are converted to seconds here.

Columns of the metrics below are checked (numbers ≥ 0, ``_cv`` may be ``inf``) and their ``_mean`` used;
other metrics (per-user throughput, telemetry, server metrics) are ignored.
"""
from __future__ import annotations

from dataclasses import dataclass

from calculators.errors import InvalidInputError
from calculators.profiles._common import num, text_field
from calculators.profiles.model import Profile, build_profile

SOURCE_FORMAT = "aiperf-sweep-csv"
_AGGS = ("mean", "std", "min", "max", "cv")
_STATS = ("avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99")
_LATENCY = {"time_to_first_token": "ttft_s", "inter_token_latency": "tpot_s", "inter_chunk_latency": "itl_s",
            "request_latency": "e2e_latency_s"}
"""AIPerf latency tag → load-point field; ``inter_token_latency`` excludes TTFT, so it is vLLM's TPOT."""
_SCALAR = {"request_throughput": "request_throughput_per_s", "output_token_throughput": "output_tokens_per_s",
           "input_sequence_length": "mean_input_tokens", "output_sequence_length": "mean_output_tokens",
           "benchmark_duration": "duration_s"}
"""AIPerf scalar tag → load-point field (its ``avg`` statistic)."""
_SCALE_S = {**{tag: 1e-3 for tag in _LATENCY}, "benchmark_duration": 1.0}
"""Display unit → seconds: latencies in ms, the duration in s; the other tags are not times."""
_STAT_FIELD = {"avg": "mean", "p50": "median", "p90": "p90", "p95": "p95", "p99": "p99"}
_LOAD = {"concurrency": "concurrency", "request_rate": "request_rate_per_s"}
_NOTES = ("AIPerf sweep: each value is the mean over trials of the run statistic; latencies converted from ms "
          "to s; inter_token_latency (excludes TTFT) is TPOT, inter_chunk_latency is ITL",
          "the sweep CSV does not record the model or the deployment")


@dataclass(frozen=True)
class _Metric:
    """One metric column: AIPerf tag, run statistic and across-trial aggregate (``mean`` … ``cv``)."""

    tag: str
    stat: str
    agg: str


def _metric(col: str) -> _Metric | None:
    """``col`` as a column of a metric this importer reads, else ``None``."""
    key, _, agg = col.rpartition("_")
    if agg not in _AGGS:
        return None
    if key in _LATENCY or key in _SCALAR:
        return _Metric(key, "avg", agg)
    tag, _, stat = key.rpartition("_")
    if stat in _STATS and (tag in _LATENCY or tag in _SCALAR):
        return _Metric(tag, stat, agg)
    return None


def _is_aggregate(col: str) -> bool:
    return col.rpartition("_")[2] in _AGGS


def is_sweep_csv(rows: list[list[str]]) -> bool:
    """Whether CSV rows are an AIPerf ``profile_export_aiperf_sweep.csv``: a load column and AIPerf metric columns."""
    head = [c.strip().lower() for c in rows[0]] if rows else []
    return bool(set(head) & set(_LOAD)) and any(_metric(c) is not None for c in head)


def _first_table(rows: list[list[str]]) -> list[tuple[int, list[str]]]:
    """The rows of the first section with their 1-based row numbers in the file (header first)."""
    table: list[tuple[int, list[str]]] = []
    for r, row in enumerate(rows, 1):
        blank = not any(cell.strip() for cell in row)
        if blank and table:
            break
        if not blank:
            table.append((r, row))
    return table


def _header(name: str, row: list[str]) -> list[str]:
    head = [c.strip().lower() for c in row]
    keys = [(m.tag, m.stat, m.agg) if (m := _metric(c)) else c for c in head]
    dup = sorted({c for c, k in zip(head, keys, strict=True) if keys.count(k) > 1})
    if dup:
        raise InvalidInputError(f"{name}: header", dup, "each column once (a bare tag counts as its _avg statistic)")
    if not set(head) & set(_LOAD):
        raise InvalidInputError(f"{name}: header", row[:6], "a concurrency or request_rate column")
    return head


def _cell(name: str, where: str, value: str, *, allow_inf: bool = False) -> float | None:
    """A number ≥ 0 from one cell, ``None`` if empty; the error names the row and column."""
    out = num(name, where, value, allow_inf=allow_inf)
    if out is not None and out < 0:
        raise InvalidInputError(f"{name}: {where}", value, "a number ≥ 0 (negative values are not meaningful here)")
    return out


def _load(name: str, r: int, cells: dict[str, str]) -> dict:
    """Load columns (and the other swept parameters as the label) of row ``r``."""
    point: dict = {field: _cell(name, f"row {r} {col}", cells[col], allow_inf=col == "request_rate")
                   for col, field in _LOAD.items() if col in cells}
    if all(point.get(field) is None for field in _LOAD.values()):
        raise InvalidInputError(f"{name}: row {r} " + "/".join(c for c in _LOAD if c in cells), "",
                                "the row's concurrency or request rate")
    params = [f"{col}={text_field(v) or ''}" for col, v in cells.items() if not _is_aggregate(col)]
    point["label"] = ", ".join(params)
    return point


def _means(name: str, r: int, cells: dict[str, str]) -> dict[tuple[str, str], float | None]:
    """Every checked metric cell of row ``r``; returns the ``_mean`` values by (tag, statistic)."""
    means: dict[tuple[str, str], float | None] = {}
    for col, value in cells.items():
        m = _metric(col)
        if m is None:
            continue
        v = _cell(name, f"row {r} {col}", value, allow_inf=m.agg == "cv")
        if m.agg == "mean":
            means[(m.tag, m.stat)] = v
    return means


def _point(name: str, r: int, cells: dict[str, str]) -> dict:
    """One load point from row ``r`` (``cells``: column → text), in SI units."""
    point = _load(name, r, cells)
    means = _means(name, r, cells)
    for tag, field in _LATENCY.items():
        stats = {key: means.get((tag, stat)) for stat, key in _STAT_FIELD.items()}
        point[field] = {k: None if v is None else v * _SCALE_S[tag] for k, v in stats.items()}
    for tag, field in _SCALAR.items():
        v = means.get((tag, "avg"))
        point[field] = None if v is None else v * _SCALE_S.get(tag, 1.0)
    return point


def load_sweep_csv(name: str, rows: list[list[str]]) -> Profile:
    """Import ``profile_export_aiperf_sweep.csv``: one load point per row of its first section."""
    table = _first_table(rows)
    if not table:
        raise InvalidInputError(f"{name}: file", "no rows", "a header row and one row per swept value")
    head = _header(name, table[0][1])
    points = []
    for r, row in table[1:]:
        if len(row) > len(head):
            raise InvalidInputError(f"{name}: row {r}", row[:6], f"at most {len(head)} cells (the header's columns)")
        points.append(_point(name, r, {h: (row[i] if i < len(row) else "") for i, h in enumerate(head)}))
    return build_profile(name, source_format=SOURCE_FORMAT, source_files=(name,), load_points=points,
                         notes=_NOTES)
