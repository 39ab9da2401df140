"""ray-project LLMPerf results (``docs/profile-formats.md`` §6). Values are already in seconds.

``llmperf-summary``
    ``{model}_{in}_{out}_summary.json``, a flattened dict. Request throughput =
    ``results_num_completed_requests_per_min`` / 60; output tokens/s = ``results_mean_output_throughput_token_per_s``;
    the duration is derived as completed / request throughput. Token min/max may be strings (``"550"``): read
    as numbers. LLMPerf writes ``NaN`` (e.g. the stddev of one request); such constants are read as missing.
``llmperf-individual``
    ``…_individual_responses.json``, a list of per-request records, aggregated into one load point with numpy
    (mean, median, linear percentiles). It has no timestamps, so no throughput and no load level.

TPOT conversion: LLMPerf's ``inter_token_latency_s`` **includes the TTFT** (Σ all chunk gaps / output tokens
≈ e2e / OSL), so it is not used as TPOT and ``itl_s`` is left empty. Instead:

- per request (individual responses): TPOT = (e2e − TTFT) / (output_tokens − 1), for requests with more than
  one output token; statistics over requests;
- summary only: ``tpot_s.mean`` ≈ (mean e2e − mean TTFT) / (mean output tokens − 1), a ratio of means (close to
  the mean of ratios when lengths vary little); TPOT percentiles cannot be recovered and stay empty.

Output tokens are LLMPerf's re-count with a Llama-2 tokenizer (including BOS), whatever the model; kept as is.
"""
from __future__ import annotations

import numpy as np

from calculators.errors import InvalidInputError
from calculators.profiles._common import count, num, require_mapping, stats, text_field
from calculators.profiles.model import Profile, build_profile

_QS = {"median": "quantiles_p50", "p90": "quantiles_p90", "p95": "quantiles_p95", "p99": "quantiles_p99"}
_NAN = "LLMPerf writes NaN for undefined statistics (e.g. the stddev of one request); NaN is read as missing"
_TPOT_NOTE = ("LLMPerf inter_token_latency_s includes TTFT; TPOT recomputed as (e2e − TTFT)/(output tokens − 1)"
              " and ITL left empty")


def is_summary(obj: object) -> bool:
    """Whether a JSON object is an LLMPerf summary."""
    return isinstance(obj, dict) and "results_ttft_s_mean" in obj or (
        isinstance(obj, dict) and "num_concurrent_requests" in obj and any(str(k).startswith("results_") for k in obj))


def load_summary(name: str, d: dict) -> Profile:
    """Import an LLMPerf ``*_summary.json``."""

    def get(key: str) -> float | None:
        return num(name, key, d.get(key), nonfinite="missing")

    def metric(m: str) -> dict:
        src = {"mean": (f"results_{m}_mean", d.get(f"results_{m}_mean"))}
        src.update({k: (f"results_{m}_{q}", d.get(f"results_{m}_{q}")) for k, q in _QS.items()})
        return stats(name, src, nonfinite="missing")

    ttft, e2e = metric("ttft_s"), metric("end_to_end_latency_s")
    completed = count(name, "results_num_completed_requests", d.get("results_num_completed_requests"),
                      nonfinite="missing")
    per_min = get("results_num_completed_requests_per_min")
    req_s = None if per_min is None else per_min / 60.0
    osl = get("results_number_output_tokens_mean")
    if osl is None:
        osl = get("mean_output_tokens")
    tpot_mean = None
    if e2e["mean"] is not None and ttft["mean"] is not None and osl is not None and osl > 1:
        tpot_mean = (e2e["mean"] - ttft["mean"]) / (osl - 1)
    isl = get("results_number_input_tokens_mean")
    point = {
        "concurrency": get("num_concurrent_requests"),
        "request_throughput_per_s": req_s,
        "output_tokens_per_s": get("results_mean_output_throughput_token_per_s"),
        "ttft_s": ttft, "e2e_latency_s": e2e, "tpot_s": {"mean": tpot_mean},
        "mean_input_tokens": isl if isl is not None else get("mean_input_tokens"),
        "mean_output_tokens": osl,
        "completed_requests": completed,
        "failed_requests": count(name, "results_number_errors", d.get("results_number_errors"), nonfinite="missing"),
        "duration_s": completed / req_s if completed and req_s else None,
    }
    notes = (_TPOT_NOTE + "; from the summary only the mean (ratio of means) is recoverable",
             "duration derived as completed requests / request throughput", _NAN)
    return build_profile(name, source_format="llmperf-summary", source_files=(name,), load_points=[point],
                         model=text_field(d.get("model")), engine=text_field(d.get("framework")), notes=notes)


def is_individual(obj: object) -> bool:
    """Whether a JSON value is LLMPerf's individual-responses list."""
    return isinstance(obj, list) and bool(obj) and all(
        isinstance(r, dict) and "ttft_s" in r and "end_to_end_latency_s" in r for r in obj[:5])


def load_individual(name: str, records: list) -> Profile:
    """Aggregate LLMPerf ``*_individual_responses.json`` into one load point."""
    ttft, e2e, osl, isl, tpot = [], [], [], [], []
    failed = 0
    for i, rec in enumerate(records):
        rec = require_mapping(name, rec, f"[{i}]")
        if rec.get("error_code") or text_field(rec.get("error_msg")):
            failed += 1
            continue
        t = num(name, f"[{i}].ttft_s", rec.get("ttft_s"), nonfinite="missing")
        e = num(name, f"[{i}].end_to_end_latency_s", rec.get("end_to_end_latency_s"), nonfinite="missing")
        o = num(name, f"[{i}].number_output_tokens", rec.get("number_output_tokens"), nonfinite="missing")
        n_in = num(name, f"[{i}].number_input_tokens", rec.get("number_input_tokens"), nonfinite="missing")
        if t is not None:
            ttft.append(t)
        if e is not None:
            e2e.append(e)
        if o is not None:
            osl.append(o)
        if n_in is not None:
            isl.append(n_in)
        if t is not None and e is not None and o is not None and o > 1:
            tpot.append((e - t) / (o - 1))
    ok = len(records) - failed
    if not ok:
        raise InvalidInputError(f"{name}: records", f"{failed} failed, 0 successful", "at least one successful request")
    point = {"completed_requests": ok, "failed_requests": failed,
             "ttft_s": _np_stats(ttft), "e2e_latency_s": _np_stats(e2e), "tpot_s": _np_stats(tpot),
             "mean_input_tokens": float(np.mean(isl)) if isl else None,
             "mean_output_tokens": float(np.mean(osl)) if osl else None}
    notes = (_TPOT_NOTE, "aggregated from per-request records with numpy (linear percentiles); the file has no "
             "timestamps, model or concurrency, so throughput and load are unknown", _NAN)
    return build_profile(name, source_format="llmperf-individual", source_files=(name,), load_points=[point],
                         notes=notes)


def _np_stats(values: list[float]) -> dict:
    if not values:
        return {}
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "median": float(np.median(arr)),
            **{f"p{q}": float(np.percentile(arr, q)) for q in (90, 95, 99)}}
