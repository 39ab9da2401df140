"""GuideLLM benchmark reports (JSON; ``docs/profile-formats.md`` §3).

Schema generations, told apart by their keys:

- 0.2–0.3: ``{"benchmarks": [...]}``, each with ``args.strategy`` and ``run_stats``; ``worker.backend_model``.
- 0.4–0.8: ``benchmarks[i].config.strategy`` (top level ``args``/``metadata``/``config``).

Semantics (the trap): GuideLLM's ``inter_token_latency_ms`` = (last − first token)/(output tokens − 1) is
vLLM's **TPOT**, so it becomes ``tpot_s``. GuideLLM's own ``time_per_output_token_ms`` (which in ≥0.4
includes TTFT) is **not** used. GuideLLM has no chunk-gap metric: ``itl_s`` stays empty.
≤0.3 has no ``p50`` percentile; ``median`` is used. Request latency is already in seconds; the
``*_ms`` metrics are divided by 1000. The ``*_per_second`` distributions are time series of the rate,
so their successful ``mean`` is the system throughput. ``request_concurrency.successful.mean`` becomes
``measured_concurrency``. Only JSON is read: the CSV exports (one wide row per benchmark, Python lists in
cells, or a 3-row header) are not supported; export JSON instead.
"""
from __future__ import annotations

import math

from calculators.errors import InvalidInputError
from calculators.profiles._common import count, num, require_mapping, stats, sub_mapping, text_field
from calculators.profiles.model import Profile, build_profile

_LATENCY = {
    "ttft_s": ("time_to_first_token_ms", 1e-3),
    "tpot_s": ("inter_token_latency_ms", 1e-3),
    "e2e_latency_s": ("request_latency", 1.0),
}


def is_guidellm(obj: object) -> bool:
    """Whether a JSON object is a GuideLLM report."""
    if not isinstance(obj, dict) or not isinstance(obj.get("benchmarks"), list):
        return False
    b = obj["benchmarks"]
    return not b or (isinstance(b[0], dict) and ("metrics" in b[0] or "type_" in b[0]))


def load_guidellm(name: str, obj: dict) -> Profile:
    """Import a GuideLLM JSON report: one load point per benchmark (strategy)."""
    points: list[dict] = []
    models: set[str | None] = set()
    for i, bench in enumerate(obj.get("benchmarks") or []):
        bench = require_mapping(name, bench, f"benchmarks[{i}]")
        points.append(_point(name, f"benchmarks[{i}].", bench))
        worker = sub_mapping(bench, "worker")
        if worker.get("backend_model"):
            models.add(text_field(worker["backend_model"]))
    for holder in (obj.get("args"), obj.get("config")):
        if isinstance(holder, dict) and isinstance(holder.get("model"), str):
            models.add(text_field(holder["model"]))
    names = sorted(m for m in models if m is not None)
    if len(names) > 1:
        raise InvalidInputError(f"{name}: model", names, "one model per report")
    meta = sub_mapping(obj, "metadata")
    notes: tuple[str, ...] = (
        "GuideLLM inter_token_latency (excludes TTFT) is used as TPOT; GuideLLM's time_per_output_token is "
        "not used; no chunk-gap (ITL) metric exists in GuideLLM",)
    version = text_field(meta.get("guidellm_version"))
    if version:
        notes += (f"written by guidellm {version}",)
    return build_profile(name, source_format="guidellm", source_files=(name,), load_points=points,
                         model=names[0] if names else None, notes=notes)


def _dist(metrics: dict, key: str) -> dict:
    m = metrics.get(key)
    if not isinstance(m, dict):
        return {}
    s = m.get("successful")
    return s if isinstance(s, dict) else {}


def _point(name: str, where: str, b: dict) -> dict:
    metrics = require_mapping(name, b.get("metrics"), where + "metrics")
    cfg = sub_mapping(b, "config")
    args = sub_mapping(b, "args")
    strategy = cfg.get("strategy") or args.get("strategy") or {}
    kind = strategy.get("type_") if isinstance(strategy, dict) else None
    point: dict = {"label": text_field(kind)}
    if kind == "synchronous":
        point["concurrency"] = 1.0
    elif kind == "concurrent":
        point["concurrency"] = num(name, where + "strategy.streams", strategy.get("streams"))
    elif kind == "throughput":
        point["request_rate_per_s"] = math.inf
        point["concurrency"] = num(name, where + "strategy.max_concurrency", strategy.get("max_concurrency"))
    elif kind in ("constant", "poisson"):
        point["request_rate_per_s"] = num(name, where + "strategy.rate", strategy.get("rate"))
        point["label"] = f"{kind} {point['request_rate_per_s']:g}/s" if point["request_rate_per_s"] else kind

    def mean_of(key: str) -> float | None:
        return num(name, f"{where}metrics.{key}.successful.mean", _dist(metrics, key).get("mean"))

    point["request_throughput_per_s"] = mean_of("requests_per_second")
    point["output_tokens_per_s"] = mean_of("output_tokens_per_second")
    point["total_tokens_per_s"] = mean_of("tokens_per_second")
    point["measured_concurrency"] = mean_of("request_concurrency")
    point["mean_input_tokens"] = mean_of("prompt_token_count")
    point["mean_output_tokens"] = mean_of("output_token_count")
    for field, (key, scale) in _LATENCY.items():
        d = _dist(metrics, key)
        pct = sub_mapping(d, "percentiles")
        prefix = f"{where}metrics.{key}.successful."
        median = d.get("median", pct.get("p50"))
        point[field] = stats(name, {"mean": (prefix + "mean", d.get("mean")), "median": (prefix + "median", median),
                                    "p90": (prefix + "percentiles.p90", pct.get("p90")),
                                    "p95": (prefix + "percentiles.p95", pct.get("p95")),
                                    "p99": (prefix + "percentiles.p99", pct.get("p99"))}, scale=scale)
    totals = b.get("request_totals") if isinstance(b.get("request_totals"), dict) else metrics.get("request_totals")
    if isinstance(totals, dict):
        point["completed_requests"] = count(name, where + "request_totals.successful", totals.get("successful"))
        point["failed_requests"] = count(name, where + "request_totals.errored", totals.get("errored"))
    point["duration_s"] = num(name, where + "duration", b.get("duration"))
    return point
