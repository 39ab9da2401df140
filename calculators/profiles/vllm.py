"""vLLM's benchmark outputs, and the wrappers around them.

Formats (``docs/profile-formats.md`` §1–2):

``vllm-serve``
    ``vllm bench serve`` / ``benchmarks/benchmark_serving.py --save-result``: one JSON object per run, or
    JSON Lines with ``--append-result``. Legacy (≤ v0.8) and current keys; the goodput key is read in both
    spellings, ``request_goodput`` and the legacy ``"request_goodput:"``. Latencies ``*_ms`` → seconds.
    When the per-request arrays (``ttfts``, ``itls``, ``output_lens``, ``errors``, ``latencies``) are present,
    statistics the summary lacks (p90/p95 by default) are computed from them with numpy, exactly as vLLM does
    (``np.percentile``, linear); reported values are never replaced.
``vllm-throughput``
    ``vllm bench throughput --output-json``: ``tokens_per_second`` counts input **plus** output tokens, so it
    becomes ``total_tokens_per_s``; ``output_tokens_per_s`` stays ``None`` (not in the file).
``vllm-latency``
    ``vllm bench latency --output-json``: one static batch; only end-to-end latency. The batch size is not in
    the file, so the load is unknown.
``vllm-nightly-summary``
    The nightly-benchmark ``benchmark_results.json`` (pandas ``to_dict`` of the serving table, in records or
    column orientation). The load and TP come from the test name (``tp8_pp1_qps_16``).
``vllm-nightly-commands``
    The per-test ``*.commands`` sidecar: no measurements, only the command line (model, rate) and GPU type.
    :func:`read_nightly_commands` returns that metadata; :func:`calculators.profiles.load_many` applies it.
``inferencemax-agg``
    InferenceMAX's flattened aggregate: latencies already in seconds, throughputs **per GPU**; multiplied
    back by the GPU count ``tp`` (single-node, non-disaggregated runs only).
"""
from __future__ import annotations

import math
import re
import shlex

import numpy as np

from calculators.errors import InvalidInputError
from calculators.profiles._common import count, num, require_mapping, stats, text_field
from calculators.profiles.model import Profile, build_profile

_METRICS = (("ttft", "ttft_s"), ("tpot", "tpot_s"), ("itl", "itl_s"), ("e2el", "e2e_latency_s"))
_ENGINES = {"vllm", "sglang", "tgi", "lmdeploy", "tensorrt-llm", "deepspeed-mii", "scalellm", "trt-llm"}
_MS = 1e-3


def is_serve_record(d: object) -> bool:
    """Whether a JSON object looks like a vLLM serving-benchmark result."""
    return isinstance(d, dict) and "request_throughput" in d and "duration" in d and (
        "output_throughput" in d or "mean_ttft_ms" in d
    )


def load_serve(name: str, obj: object) -> Profile:
    """Import ``vllm bench serve`` / ``benchmark_serving.py`` results (one object, or a list from JSONL)."""
    records = obj if isinstance(obj, list) else [obj]
    points: list[dict] = []
    notes: list[str] = []
    meta: dict[str, object] = {}
    for i, rec in enumerate(records):
        rec = require_mapping(name, rec, f"record {i}")
        point, extra = _serve_point(name if len(records) == 1 else f"{name} record {i}", rec)
        points.append(point)
        notes.extend(n for n in extra if n not in notes)
        for key, value in _serve_meta(rec).items():
            if meta.get(key) is None:
                meta[key] = value
            elif value is not None and meta[key] != value:
                raise InvalidInputError(f"{name}: {key}", value, f"the same {key} in every record ({meta[key]!r})")
    return build_profile(name, source_format="vllm-serve", source_files=(name,), load_points=points,
                         notes=tuple(notes), **meta)


def _serve_meta(d: dict) -> dict:
    backend = text_field(d.get("backend"))
    tp = d.get("tensor_parallel_size", d.get("tp"))
    return {
        "model": text_field(d.get("model_id")),
        "engine": backend if backend in _ENGINES else None,
        "gpu": text_field(d.get("gpu") or d.get("gpu_type") or d.get("hw")),
        "tensor_parallel_size": int(tp) if isinstance(tp, int | str) and str(tp).strip().isdigit() else None,
    }


def _serve_point(name: str, d: dict) -> tuple[dict, list[str]]:
    completed = count(name, "completed", d.get("completed"))
    failed = count(name, "failed", d.get("failed"))
    errors = d.get("errors")
    if failed is None and isinstance(errors, list):
        failed = sum(1 for e in errors if e)
    point: dict = {
        "label": text_field(d.get("label")),
        "request_rate_per_s": num(name, "request_rate", d.get("request_rate"), allow_inf=True),
        "concurrency": num(name, "max_concurrency", d.get("max_concurrency")),
        "duration_s": num(name, "duration", d.get("duration")),
        "completed_requests": completed,
        "failed_requests": failed,
        "request_throughput_per_s": num(name, "request_throughput", d.get("request_throughput")),
        "request_goodput_per_s": num(name, "request_goodput", d.get("request_goodput", d.get("request_goodput:"))),
        "output_tokens_per_s": num(name, "output_throughput", d.get("output_throughput")),
        "total_tokens_per_s": num(name, "total_token_throughput", d.get("total_token_throughput")),
    }
    tin = num(name, "total_input_tokens", d.get("total_input_tokens"))
    tout = num(name, "total_output_tokens", d.get("total_output_tokens"))
    if completed:
        point["mean_input_tokens"] = None if tin is None else tin / completed
        point["mean_output_tokens"] = None if tout is None else tout / completed
    for m, field in _METRICS:
        src = {"mean": f"mean_{m}_ms", "median": f"median_{m}_ms", "p90": f"p90_{m}_ms", "p95": f"p95_{m}_ms",
               "p99": f"p99_{m}_ms"}
        if d.get(src["median"]) is None and d.get(f"p50_{m}_ms") is not None:
            src["median"] = f"p50_{m}_ms"
        point[field] = stats(name, {k: (key, d.get(key)) for k, key in src.items()}, scale=_MS)
    notes = _fill_from_arrays(name, d, point)
    return point, notes


def _fill_from_arrays(name: str, d: dict, point: dict) -> list[str]:
    """Fill statistics the summary lacks from the per-request arrays (vLLM's own definitions)."""
    ttfts, itls, olens = d.get("ttfts"), d.get("itls"), d.get("output_lens")
    if not (isinstance(ttfts, list) and isinstance(olens, list) and len(ttfts) == len(olens) and ttfts):
        return []
    errors = d.get("errors") if isinstance(d.get("errors"), list) and len(d["errors"]) == len(ttfts) else None
    ok = [i for i in range(len(ttfts)) if not (errors and errors[i])]
    try:
        ttft = np.array([float(ttfts[i]) for i in ok], dtype=float)
        olen = np.array([float(olens[i]) for i in ok], dtype=float)
        gaps = [np.asarray(itls[i], dtype=float) for i in ok] if isinstance(itls, list) and len(itls) == len(
            ttfts) else None
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name}: ttfts/itls/output_lens", "non-numeric entries", "lists of numbers") from None
    series: dict[str, np.ndarray] = {"ttft_s": ttft}
    if gaps is not None:
        series["itl_s"] = np.concatenate(gaps) if gaps else np.array([])
        decode = np.array([g.sum() for g in gaps])
        multi = olen > 1
        series["tpot_s"] = decode[multi] / (olen[multi] - 1)
        series["e2e_latency_s"] = ttft + decode  # vLLM: latency = TTFT + Σ chunk gaps
    if isinstance(d.get("latencies"), list) and len(d["latencies"]) == len(ttfts):
        series["e2e_latency_s"] = np.array([float(d["latencies"][i]) for i in ok], dtype=float)
    filled = []
    for field, arr in series.items():
        if arr.size == 0 or not np.all(np.isfinite(arr)):
            continue
        computed = {"mean": float(np.mean(arr)), "median": float(np.median(arr))}
        computed.update({f"p{q}": float(np.percentile(arr, q)) for q in (90, 95, 99)})
        for key, value in computed.items():
            if point[field].get(key) is None:
                point[field][key] = value
                filled.append(f"{field}.{key}")
    if not filled:
        return []
    return [f"statistics missing from the summary were computed from the per-request arrays with numpy "
            f"(vLLM's definitions; TPOT = Σ chunk gaps / (output_len − 1)): {', '.join(sorted(set(filled)))}"]


# --- vllm bench throughput / latency -------------------------------------------------------------------------------


def is_throughput_record(d: object) -> bool:
    """Whether a JSON object is ``vllm bench throughput --output-json``."""
    return isinstance(d, dict) and {"elapsed_time", "requests_per_second", "tokens_per_second"} <= d.keys()


def load_throughput(name: str, d: dict) -> Profile:
    """Import ``vllm bench throughput`` (offline: no load level; ``tokens_per_second`` = input + output)."""
    point = {
        "duration_s": num(name, "elapsed_time", d.get("elapsed_time")),
        "completed_requests": count(name, "num_requests", d.get("num_requests")),
        "request_throughput_per_s": num(name, "requests_per_second", d.get("requests_per_second")),
        "total_tokens_per_s": num(name, "tokens_per_second", d.get("tokens_per_second")),
        "request_rate_per_s": math.inf,
    }
    note = ("vllm bench throughput: tokens_per_second counts input + output tokens, so it is total_tokens_per_s; "
            "output tokens/s is not in the file (recover it as total − requests/s × ISL when ISL is fixed)")
    return build_profile(name, source_format="vllm-throughput", source_files=(name,), load_points=[point],
                         engine="vllm", notes=(note,))


def is_latency_record(d: object) -> bool:
    """Whether a JSON object is ``vllm bench latency --output-json``."""
    return isinstance(d, dict) and "avg_latency" in d and isinstance(d.get("percentiles"), dict)


def load_latency(name: str, d: dict) -> Profile:
    """Import ``vllm bench latency`` (one static batch; the batch size is not in the file)."""
    pct = d["percentiles"]
    e2e = stats(name, {"mean": ("avg_latency", d.get("avg_latency")), "median": ("percentiles.50", pct.get("50")),
                       "p90": ("percentiles.90", pct.get("90")), "p99": ("percentiles.99", pct.get("99"))})
    lat = d.get("latencies")
    n = len(lat) if isinstance(lat, list) else None
    note = "vllm bench latency: batch size, input and output lengths are only on the command line, not in the file"
    return build_profile(name, source_format="vllm-latency", source_files=(name,), engine="vllm",
                         load_points=[{"e2e_latency_s": e2e, "completed_requests": n}], notes=(note,))


# --- nightly-benchmark summary and sidecar -------------------------------------------------------------------------

_NIGHTLY_COLS = {
    "Tput (req/s)": "request_throughput_per_s",
    "Output Tput (tok/s)": "output_tokens_per_s",
    "Total Tput (tok/s)": "total_tokens_per_s",
}
_NIGHTLY_STATS = {"Mean": "mean", "Median": "median", "P90": "p90", "P95": "p95", "P99": "p99"}
_NIGHTLY_METRICS = {"TTFT": "ttft_s", "TPOT": "tpot_s", "ITL": "itl_s", "E2EL": "e2e_latency_s"}


def nightly_rows(obj: object) -> list[dict] | None:
    """The serving-table rows of a nightly summary (records or ``{"serving": {col: {idx: v}}}``), else ``None``."""
    if isinstance(obj, list) and obj and all(isinstance(r, dict) and "Test name" in r for r in obj):
        return obj
    if isinstance(obj, dict) and isinstance(obj.get("serving"), dict):
        cols = obj["serving"]
        if "Test name" in cols and all(isinstance(v, dict) for v in cols.values()):
            idx = list(cols["Test name"].keys())
            return [{c: cols[c].get(i) for c in cols} for i in idx]
        if not cols:
            return []
    return None


def load_nightly(name: str, obj: object) -> Profile:
    """Import the nightly-benchmark ``benchmark_results.json`` serving table."""
    rows = nightly_rows(obj) or []
    points: list[dict] = []
    tps: set[int] = set()
    gpus: set[str | None] = set()
    for i, row in enumerate(rows):
        where = f"row {i} "
        test = text_field(row.get("Test name")) or ""
        point: dict = {"label": test or None}
        m = re.search(r"qps_([0-9.]+|inf)\b", test)
        if m:
            point["request_rate_per_s"] = num(name, where + "Test name", m.group(1), allow_inf=True)
        m = re.search(r"(?:concurrency|conc)_([0-9]+)", test)
        if m:
            point["concurrency"] = float(m.group(1))
        m = re.search(r"tp([0-9]+)", test)
        if m:
            tps.add(int(m.group(1)))
        if row.get("GPU") is not None:
            gpus.add(text_field(row.get("GPU")))
        point["completed_requests"] = count(name, where + "# of req.", row.get("# of req."))
        for col, field in _NIGHTLY_COLS.items():
            point[field] = num(name, where + col, row.get(col))
        for metric, field in _NIGHTLY_METRICS.items():
            src = {key: (f"{where}{s} {metric} (ms)", row.get(f"{s} {metric} (ms)"))
                   for s, key in _NIGHTLY_STATS.items()}
            point[field] = stats(name, src, scale=_MS)
        points.append(point)
    if len(tps) > 1 or len(gpus) > 1:
        # key=str: a blank GPU cell is None, which does not sort with names
        seen: list[int] | list[str | None] = sorted(tps) if tps else sorted(gpus, key=str)
        raise InvalidInputError(f"{name}: Test name/GPU", seen, "one deployment per file")
    return build_profile(
        name, source_format="vllm-nightly-summary", source_files=(name,), load_points=points, engine="vllm",
        tensor_parallel_size=tps.pop() if tps else None, gpu=gpus.pop() if gpus else None,
        notes=("vLLM nightly summary: the model is not in the file; load it with its *.commands sidecar",),
    )


def is_nightly_commands(obj: object) -> bool:
    """Whether a JSON object is a nightly-benchmark ``*.commands`` sidecar."""
    return isinstance(obj, dict) and "client_command" in obj and not is_serve_record(obj)


def read_nightly_commands(name: str, obj: dict) -> dict:
    """Metadata from a ``*.commands`` sidecar: ``model``, ``gpu``, ``request_rate_per_s``, ``concurrency``.

    The command line is split with :func:`shlex.split` (text only; nothing is executed).
    """
    cmd = obj.get("client_command")
    if not isinstance(cmd, str):
        raise InvalidInputError(f"{name}: client_command", cmd, "the benchmark command line as a string")
    try:
        argv = shlex.split(cmd)
    except ValueError:
        raise InvalidInputError(f"{name}: client_command", cmd, "a command line with balanced quotes") from None
    args: dict[str, str] = {}
    for i, tok in enumerate(argv):
        if tok.startswith("--"):
            key, eq, value = tok[2:].partition("=")
            if not eq and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                value = argv[i + 1]
            args[key.replace("_", "-")] = value
    rate = args.get("request-rate")
    conc = args.get("max-concurrency")
    return {
        "model": text_field(args.get("model")),
        "gpu": text_field(obj.get("gpu_type")),
        "request_rate_per_s": num(name, "--request-rate", rate, allow_inf=True) if rate else None,
        "concurrency": num(name, "--max-concurrency", conc) if conc else None,
    }


# --- InferenceMAX aggregate ----------------------------------------------------------------------------------------


def is_inferencemax_agg(obj: object) -> bool:
    """Whether a JSON object is an InferenceMAX aggregate (``agg_*.json``)."""
    return isinstance(obj, dict) and "tput_per_gpu" in obj and "conc" in obj


def load_inferencemax(name: str, d: dict) -> Profile:
    """Import an InferenceMAX aggregate; latencies are seconds, throughputs per GPU × ``tp`` GPUs."""
    tp = count(name, "tp", d.get("tp"))
    notes = []
    gpus = tp if tp and not d.get("disagg") and not d.get("is_multinode") and str(d.get("dp_attention")).lower() in (
        "false", "none", "0") else None
    if gpus:
        notes.append(f"InferenceMAX throughputs are per GPU; multiplied by tp = {gpus} GPUs for the whole server")
    else:
        notes.append("InferenceMAX throughputs are per GPU and the GPU count is unclear (disagg/multinode/DP "
                     "attention): server throughputs left empty")

    def server(key: str) -> float | None:
        v = num(name, key, d.get(key))
        return None if v is None or not gpus else v * gpus

    point: dict = {
        "concurrency": num(name, "conc", d.get("conc")),
        "output_tokens_per_s": server("output_tput_per_gpu"),
        "total_tokens_per_s": server("tput_per_gpu"),
        "mean_input_tokens": num(name, "isl", d.get("isl")),
        "mean_output_tokens": num(name, "osl", d.get("osl")),
    }
    for metric, field in _METRICS:
        keys = ("mean", "median", "p90", "p95", "p99")
        point[field] = stats(name, {k: (f"{k}_{metric}", d.get(f"{k}_{metric}")) for k in keys})
    image = text_field(d.get("image")) or ""
    m = re.search(r":v?([0-9][0-9A-Za-z.+-]*)$", image)
    notes.append("isl/osl are the configured lengths (random dataset), used as mean lengths")
    return build_profile(
        name, source_format="inferencemax-agg", source_files=(name,), load_points=[point],
        model=text_field(d.get("model")), gpu=text_field(d.get("hw")), tensor_parallel_size=tp,
        engine=text_field(d.get("framework")), engine_version=m.group(1) if m else None, notes=tuple(notes),
    )
