"""Accuracy of the analytic (roofline) model against published measurements.

Reads ``tests/fixtures/measured/published.json``, keeps the
rows a static model can be compared with, predicts them with the DEFAULT efficiencies and prints,
per source and overall, N, median |error|, median signed error and p90 |error| (error =
predicted / measured − 1) for three quantities:

* ``throughput``  output tokens/s of one replica at the row's stated batch size. Static-batch rows
  (TensorRT-LLM gptSessionBenchmark) count prefill in the total time, which is what
  ``serving_metrics``' ``B·O / (O·TPOT + prefill(B prompts))`` computes. Per-GPU figures are
  multiplied by TP to get the replica's.
* ``decode_step`` the per-step time implied by the measurement,
  ``(B·O / throughput_replica − predicted prefill of B prompts) / O``, against the model's decode
  step at the mean context ``I + O/2``.
* ``ttft``        first-token latency: batch 1 (the "Low Latency" rows, output_len 1) against the
  prefill of one prompt; a static batch's TTFT against the prefill of its B prompts.

Rows it cannot compare are listed with the reason and counted. Target: median |error|
≤ 25 % on throughput and on decode step. A benchmark, not a test: it prints figures, never fails.

    .venv/bin/python benchmarks/accuracy.py [--rows] [--json]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calculators.perf.roofline import (  # noqa: E402
    ALLREDUCE_LATENCY_S,
    COMPUTE_EFFICIENCY,
    MEMORY_EFFICIENCY,
    STEP_OVERHEAD_S,
    Roofline,
)
from calculators.perf.serving import serving_metrics  # noqa: E402
from calculators.specs.catalog import get_gpu, get_model  # noqa: E402

DATA = ROOT / "tests" / "fixtures" / "measured" / "published.json"
METRICS = ("throughput", "decode_step", "ttft")
TARGET = 0.25

# Row "model" labels → catalog ids (first match wins; a bare HF id is looked up as is).
MODEL_PATTERNS = [
    (r"gpt-?j", "EleutherAI/gpt-j-6b"),
    (r"falcon.?180", "tiiuae/falcon-180B"),
    (r"llama-?2-?7b", "meta-llama/Llama-2-7b-hf"),
    (r"llama-?2-?13b", "meta-llama/Llama-2-13b-hf"),
    (r"llama-?2-?70b", "meta-llama/Llama-2-70b-hf"),
    (r"llama.?3\.1.?8b", "meta-llama/Llama-3.1-8B-Instruct"),
    (r"llama.?3\.1.?70b", "meta-llama/Llama-3.1-70B-Instruct"),
    (r"llama.?3\.1.?405b", "meta-llama/Llama-3.1-405B-Instruct"),
    (r"llama.?3\.3.?70b", "meta-llama/Llama-3.3-70B-Instruct"),
]
GPU_PATTERNS = [(r"GB200", "GB200"), (r"B200", "B200"), (r"H200", "H200"), (r"H100", "H100"),
                (r"A100.*40GB", "A100-40GB"), (r"A100", "A100-80GB"), (r"L40S", "L40S")]


def _model_id(label: str) -> str | None:
    key = label.lower().replace(" ", "-")
    for pattern, model_id in MODEL_PATTERNS:
        if re.search(pattern, key):
            return model_id
    return None


def _gpu_id(label: str) -> str | None:
    return next((g for p, g in GPU_PATTERNS if re.search(p, label)), None)


def _quantization(dtype: str) -> str | None:
    d = dtype.upper()
    if d.startswith("FP8"):
        return "fp8"
    if d.startswith("FP4") or "NVFP4" in d:
        return "nvfp4"
    if d.startswith(("FP16", "BF16")):
        return "none"
    return None


def _kv_dtype(kv: str | None) -> str:
    return "fp8" if kv and kv.upper().startswith("FP8") else "auto"


def _source(row: dict) -> str:
    url = row["source_url"]
    commit = re.search(r"/blob/([0-9a-f]{7})", url)
    return f"{row['engine']} {url.rsplit('/', 1)[-1]}@{commit.group(1) if commit else '?'}"


def _measured_replica_throughput(row: dict) -> tuple[float | None, str]:
    """Output tokens/s of one TP group, and how it was read."""
    m, tp = row["metrics"], row["tp"]
    if "output_tok_s_per_gpu" in m:
        return m["output_tok_s_per_gpu"] * tp, "per GPU x TP"
    if "output_tok_s" in m:
        if tp > 1:
            # performance.md's A100 table says only "out tok/s"; the same file's H100 table is per GPU, and
            # per GPU the H100/A100 ratio of the TP>1 rows (4.0x Llama 70B, 4.3x Falcon 180B) matches the
            # TP 1 rows' 3.5-4.1x, where TP-group totals would make it 16-34x.
            return m["output_tok_s"] * tp, "per GPU x TP (the A100 table's TP>1 rows are per GPU)"
        return m["output_tok_s"], "TP1"
    return None, ""


def _roofline(row: dict, model, gpu) -> Roofline:
    return Roofline(model, gpu, tensor_parallel_size=row["tp"], pipeline_parallel_size=row["pp"] or 1,
                    quantization=_quantization(row["dtype"]), kv_cache_dtype=_kv_dtype(row.get("kv_dtype")))


def _why_not_comparable(row: dict) -> str | None:
    """Why a static model cannot be compared with this row, or ``None`` when it can."""
    mode = row["load_mode"]
    if mode == "offline_max_throughput":
        return "offline max-throughput: a ceiling with no stated batch size"
    if mode == "open_loop_poisson":
        return "open-loop Poisson: an arrival rate, no stated concurrency"
    if mode != "static_batch":
        return f"load mode {mode} not modelled"
    if not row.get("tp"):
        return "parallelism not stated (max TP/PP/DP config)"
    if not row.get("batch_size") or not row.get("input_len"):
        return "batch size or input length not stated"
    if _model_id(row["model"]) is None or _gpu_id(row["gpu"]) is None or _quantization(row["dtype"]) is None:
        return "model, GPU or dtype not in the catalog"
    return None


def _compare_row(row: dict, out: list[dict], excluded: list[tuple[int, str]]) -> None:
    """Append the row's comparisons to ``out`` and the metrics it cannot compare to ``excluded``."""
    rid = row["id"]
    model, gpu = get_model(_model_id(row["model"])), get_gpu(_gpu_id(row["gpu"]))
    pm = _roofline(row, model, gpu)
    b, i, o = row["batch_size"], row["input_len"], row["output_len"]
    base = {"id": rid, "source": _source(row), "model": model.id, "gpu": gpu.id, "tp": row["tp"],
            "quantization": _quantization(row["dtype"]), "kv_cache_dtype": _kv_dtype(row.get("kv_dtype")),
            "batch": b, "input_len": i, "output_len": o}
    ttft = row["metrics"].get("ttft_ms")
    if ttft is not None:
        pred = float(pm.prefill_time_s(i, b))
        out.append({**base, "metric": "ttft", "unit": "ms", "measured": ttft, "predicted": pred * 1e3,
                    "how": "prefill of 1 prompt" if b == 1 else f"prefill of {b} prompts"})
    replica, how = _measured_replica_throughput(row)
    if replica is not None and o and o > 1:
        sm = serving_metrics(pm, b, i, o)
        out.append({**base, "metric": "throughput", "unit": "tok/s/replica", "measured": replica,
                    "predicted": float(sm["output_tokens_per_s"]), "how": how})
        prefill_s = float(pm.prefill_time_s(i, b))
        step_meas = (b * o / replica - prefill_s) / o
        if step_meas > 0:
            out.append({**base, "metric": "decode_step", "unit": "ms", "measured": step_meas * 1e3,
                        "predicted": float(sm["tpot_s"]) * 1e3,
                        "how": "(B*O/thr - predicted prefill)/O vs step at ctx I+O/2"})
        else:
            excluded.append((rid, "decode step not derivable: predicted prefill exceeds measured total"))
    elif replica is not None:
        excluded.append((rid, "throughput not compared: output length not stated (min-latency row)"))


def compare(rows: list[dict]) -> tuple[list[dict], list[tuple[int, str]]]:
    """Comparisons (one per row and quantity) and exclusions (row id, reason)."""
    out: list[dict] = []
    excluded: list[tuple[int, str]] = []
    for row in rows:
        reason = _why_not_comparable(row)
        if reason is not None:
            excluded.append((row["id"], reason))
            continue
        n_before = len(out)
        _compare_row(row, out, excluded)
        if len(out) == n_before:
            excluded.append((row["id"], "no comparable metric"))
    for c in out:
        c["error"] = c["predicted"] / c["measured"] - 1
    return out, excluded


def summarize(comps: list[dict]) -> dict:
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c in comps:
        for g in (c["source"], "ALL"):
            groups[g][c["metric"]].append(c["error"])
    summary = {}
    for g, by_metric in groups.items():
        summary[g] = {}
        for metric in METRICS:
            e = np.asarray(by_metric.get(metric, []))
            summary[g][metric] = None if e.size == 0 else {
                "n": int(e.size), "median_abs": float(np.median(np.abs(e))),
                "median_signed": float(np.median(e)), "p90_abs": float(np.percentile(np.abs(e), 90))}
    return summary


def _pct(x: float) -> str:
    return f"{100 * x:+.0f}%" if x is not None else "-"


def print_report(comps: list[dict], excluded: list[tuple[int, str]], summary: dict, rows: bool) -> None:
    print("Roofline accuracy vs published measurements (tests/fixtures/measured/published.json)")
    print(f"default efficiencies: compute {COMPUTE_EFFICIENCY}, memory {MEMORY_EFFICIENCY}, "
          f"step overhead {STEP_OVERHEAD_S * 1e3:g} ms, all-reduce latency {ALLREDUCE_LATENCY_S * 1e6:g} us")
    print("error = predicted / measured - 1;  |e| med = median absolute error;  p90 = 90th percentile of |e|\n")
    if rows:
        print(f"{'id':>4} {'metric':<11} {'model':<34} {'gpu':<14}{'tp':>3} {'q':<5} {'B':>5} {'I':>5} {'O':>5}"
              f" {'measured':>10} {'predicted':>10} {'error':>7}")
        for c in sorted(comps, key=lambda c: (c["metric"], c["id"])):
            print(f"{c['id']:>4} {c['metric']:<11} {c['model']:<34} {c['gpu']:<14}{c['tp']:>3} {c['quantization']:<5}"
                  f" {c['batch']:>5} {c['input_len']:>5} {str(c['output_len']):>5} {c['measured']:>10.1f}"
                  f" {c['predicted']:>10.1f} {_pct(c['error']):>7}")
        print()
    header = f"{'source':<52}" + "".join(f" | {m:^27}" for m in METRICS)
    sub = f"{'':<52}" + " | {:>3} {:>7} {:>7} {:>6}".format("N", "|e| med", "med", "p90") * len(METRICS)
    print(header)
    print(sub)
    print("-" * len(sub))
    for g in sorted(k for k in summary if k != "ALL") + ["ALL"]:
        line = f"{g:<52}"
        for m in METRICS:
            s = summary[g][m]
            line += " |   -       -       -      -" if s is None else (
                f" | {s['n']:>3} {100 * s['median_abs']:>6.0f}% {_pct(s['median_signed']):>7}"
                f" {100 * s['p90_abs']:>5.0f}%")
        print(line)
    print()
    for m in ("throughput", "decode_step"):
        s = summary["ALL"][m]
        if s:
            verdict = "meets" if s["median_abs"] <= TARGET else "MISSES"
            print(f"target median |error| <= {TARGET:.0%} on {m}: {100 * s['median_abs']:.0f}% -> {verdict}")
    compared = {c["id"] for c in comps}
    whole = {i for i, _ in excluded} - compared
    print(f"\nexcluded: {len(whole)} rows not compared at all; "
          f"{len({i for i, _ in excluded} & compared)} compared rows with a quantity left out")
    for reason, n in Counter(r for _, r in excluded).most_common():
        ids = sorted({i for i, r in excluded if r == reason})
        shown = ", ".join(map(str, ids[:12])) + (" ..." if len(ids) > 12 else "")
        print(f"  {n:>4}  {reason}  [rows {shown}]")
    assumed = sorted({c["id"] for c in comps if "assumed" in c["how"]})
    if assumed:
        print(f"\nunit assumed per GPU (source does not say for TP>1): rows {', '.join(map(str, assumed))}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print comparisons, summary and exclusions as JSON")
    ap.add_argument("--rows", action="store_true", help="also print every compared row")
    ap.add_argument("--data", type=Path, default=DATA, help="published.json to read")
    args = ap.parse_args(argv)
    rows = json.loads(args.data.read_text())
    comps, excluded = compare(rows)
    summary = summarize(comps)
    if args.json:
        print(json.dumps({"efficiencies": {"compute": COMPUTE_EFFICIENCY, "memory": MEMORY_EFFICIENCY,
                                           "step_overhead_s": STEP_OVERHEAD_S,
                                           "allreduce_latency_s": ALLREDUCE_LATENCY_S},
                          "summary": summary, "comparisons": comps,
                          "excluded": [{"id": i, "reason": r} for i, r in excluded]}, indent=1))
    else:
        print_report(comps, excluded, summary, args.rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
