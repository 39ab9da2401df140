"""From-scratch accuracy of ``vllm_capacity`` against real vLLM start-up logs.

Reads ``tests/fixtures/vllm_logs/startup_corpus.json`` (see ``CORPUS.md`` next to it). For every
case marked ``usable_from_scratch`` it predicts the start-up numbers FROM SCRATCH: the case's
model, GPU, flags and vLLM version, and no ``kv_cache_memory_bytes``. The prediction is then
compared with what the log printed:

* ``weights``    ``Model loading took`` (GiB per GPU);
* ``available``  ``Available KV cache memory`` / V0's "reserved for KV Cache" (GiB per GPU), and
  whether the printed value lies inside the product's range ``available.low … available.high``;
* ``tokens``     ``GPU KV cache size`` tokens (V0: ``# GPU blocks`` × block size), and whether it
  lies inside ``kv_cache_tokens_low … kv_cache_tokens_high``;
* ``concurrency`` ``Maximum concurrency``.

error = predicted / printed − 1 (for a negative printed KV memory: (predicted − printed) / |printed|).
Range width = (high − low) / |printed|. A prediction that raises (unsupported architecture,
quantisation or version) is a *failed* case, listed with its message: it counts as a miss in the
"share within 5 %" and "share in range" figures and is left out of the medians.

Targets (reported against, never enforced): weights median |error| ≤ 0.5 %; available KV median
|error| ≤ 2 % with ≥ 90 % of logs within 5 %; the range contains the printed value in ≥ 90 %.

    .venv/bin/python benchmarks/startup_accuracy.py [--json PATH] [--corpus PATH] [--quiet]
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calculators.specs.catalog import get_gpu, get_model  # noqa: E402
from calculators.specs.hf_config import load_config_file  # noqa: E402
from calculators.units import GiB  # noqa: E402
from calculators.vllm.capacity import stage_overheads, vllm_capacity  # noqa: E402
from calculators.vllm.overheads import COEFFICIENTS, Coefficients, Span  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "vllm_logs" / "startup_corpus.json"
HF_CONFIGS = ROOT / "tests" / "fixtures" / "hf_configs"
METRICS = ("weights", "available", "tokens", "concurrency")
FAMILIES = ("dense", "moe", "mla", "multimodal", "quantised")
TARGETS = {"weights_median_abs_error": 0.005, "available_median_abs_error": 0.02,
           "available_share_within_5pct": 0.90, "available_share_in_range": 0.90}
#: The corpus's quantisation names → the product's ``--quantization`` values. Names the product
#: does not know (bitsandbytes, gguf) are passed through so the product's own error is reported.
QUANTIZATION = {"gptq": "gptq", "awq": "awq", "fp8": "fp8", "mxfp4": "mxfp4", "nvfp4": "nvfp4",
                "compressed-tensors-w4a16": "gptq"}


def load_corpus(path: Path = CORPUS) -> list[dict]:
    return json.loads(Path(path).read_text())


def case_model(case: dict):
    """The product's model for a case: a catalog entry or a fixture config.json, with the checkpoint's
    AWQ/GPTQ group size where the case gives it (``model_config.quantization_group_size``)."""
    cfg = case["model_config"]
    if cfg["kind"] == "catalog":
        model = get_model(cfg["ref"])
    elif cfg["kind"] == "hf_config":
        model = load_config_file(HF_CONFIGS / cfg["ref"])
    else:
        raise ValueError(f"{case['case_id']}: no model config")
    group = cfg.get("quantization_group_size")
    return model if group is None else model.model_copy(update={"quantization_group_size": group})


def case_flags(case: dict, kv_cache_memory_bytes: int | None = None) -> dict:
    """``vllm_capacity`` keyword arguments for a case (None settings are left to the product's defaults)."""
    q = case["quantization"]
    if q == "gguf":  # vLLM's flag; the file type comes from the file (its name in the command)
        q = f"gguf-{case['model_config']['gguf_file_type']}"
    flags = {
        "tensor_parallel_size": case["tensor_parallel_size"],
        "pipeline_parallel_size": case["pipeline_parallel_size"],
        "dtype": case["dtype"] or "auto",
        "quantization": None if q is None else QUANTIZATION.get(q, q),
        "kv_cache_dtype": case["kv_cache_dtype"] or "auto",
        "gpu_memory_utilization": case["gpu_memory_utilization"] if case["gpu_memory_utilization"] else 0.9,
        "max_model_len": case["max_model_len"],
        "block_size": case["block_size"],
        "enforce_eager": bool(case["enforce_eager"]),
        "max_num_batched_tokens": case["max_num_batched_tokens"],
        "max_num_seqs": case["max_num_seqs"],
        "vllm_version": case["vllm_version"],
        "engine": case["engine"],
        "kv_cache_memory_bytes": kv_cache_memory_bytes,
        "flashinfer_sampler": case.get("flashinfer_sampler") or "auto",
        "language_model_only": bool(case.get("language_model_only")),
    }
    if case.get("expert_parallel_size"):
        flags["expert_parallel_size"] = case["expert_parallel_size"]
    return flags


def case_gpu(case: dict) -> dict:
    """``gpu`` / ``gpu_memory_bytes`` for a case: the printed total wins over the catalog's."""
    out: dict = {}
    if case.get("gpu_catalog_id"):
        out["gpu"] = get_gpu(case["gpu_catalog_id"])
    if case.get("gpu_memory_total_gib") is not None:
        out["gpu_memory_bytes"] = case["gpu_memory_total_gib"] * GiB
    return out


def predict(case: dict, kv_cache_memory_bytes: int | None = None, gpu_memory_bytes: float | None = None,
            coefficients: Coefficients = COEFFICIENTS):
    """Run ``vllm_capacity`` for a case (``gpu_memory_bytes`` overrides the case's GPU when given)."""
    gpu = case_gpu(case)
    if gpu_memory_bytes is not None:
        gpu["gpu_memory_bytes"] = gpu_memory_bytes
    return vllm_capacity(case_model(case), **gpu, **case_flags(case, kv_cache_memory_bytes),
                         coefficients=coefficients)


def printed_tokens(case: dict) -> int | None:
    """``GPU KV cache size`` tokens, or for V0 the printed ``# GPU blocks`` × block size."""
    rep = case["reported"]
    if rep.get("gpu_kv_cache_size_tokens") is not None:
        return int(rep["gpu_kv_cache_size_tokens"])
    if rep.get("num_gpu_blocks") is not None:
        return int(rep["num_gpu_blocks"]) * int(case["block_size"] or 16)
    return None


def _err(pred: float, truth: float) -> float:
    return pred / truth - 1 if truth > 0 else (pred - truth) / abs(truth)


def evaluate(case: dict, coefficients: Coefficients = COEFFICIENTS) -> dict:
    """One case's predicted and printed figures, errors and range checks (``failed`` on an exception)."""
    rep = case["reported"]
    row = {"case_id": case["case_id"], "model": case["model"], "version": case["vllm_version"],
           "engine": case["engine"], "gpu": case.get("gpu_catalog_id") or case["gpu"],
           "tp": case["tensor_parallel_size"], "pp": case["pipeline_parallel_size"], "families": case["families"],
           "failed": None}
    truth = {"weights": rep.get("model_weights_gib"), "available": rep.get("kv_cache_memory_gib"),
             "tokens": printed_tokens(case), "concurrency": rep.get("max_concurrency")}
    row["printed"] = truth
    try:
        r = predict(case, coefficients=coefficients)
    except Exception as exc:  # noqa: BLE001 - every failure is reported, never hidden
        row["failed"] = f"{type(exc).__name__}: {exc}"
        return row
    st = r.binding
    pred = {"weights": st.weights_bytes / GiB, "available": st.available.value / GiB,
            "tokens": r.kv_cache_tokens, "concurrency": r.max_concurrency}
    ranges = {"available": (st.available.low / GiB, st.available.high / GiB),
              "tokens": (r.kv_cache_tokens_low, r.kv_cache_tokens_high),
              "concurrency": (r.max_concurrency_low, r.max_concurrency_high)}
    for m in METRICS:
        t = truth[m]
        row[m] = None
        if t is None:
            continue
        entry = {"printed": t, "predicted": pred[m], "error": _err(pred[m], t) if t != 0 else None}
        if m in ranges:
            lo, hi = ranges[m]
            entry.update(low=lo, high=hi, in_range=bool(lo <= t <= hi),
                         range_width=(hi - lo) / abs(t) if t else None)
        row[m] = entry
    row["fits"] = r.fits
    return row


# ---------------------------------------------------------------- fitting, judged leave-one-source-out

#: The fitted constants: (field of Coefficients, key within it or None, grid of candidate values).
FITTED = (
    ("activation_base_bytes", None, [i * 0.05 * GiB for i in range(13)]),
    # a sort of the fp32 logits holds the logits, sorted values, int64 indices, probabilities and their
    # cumulative sum (~24 B) and at most their scatter back (~40 B): fits outside that are not physical
    ("sampler_bytes", "v0_sort", [2.0 * i for i in range(12, 21)]),
    ("sampler_bytes", "v1_sort", [2.0 * i for i in range(12, 21)]),
    ("sampler_bytes", "flashinfer", [2.0 * i for i in range(4, 13)]),  # ≥ fp32 logits + probabilities
    ("sampler_bytes", "v1_flashinfer_if_installed", [2.0 * i for i in range(21)]),
    ("non_torch_bytes", "one_gpu", [i * 0.02 * GiB for i in range(26)]),
    ("non_torch_bytes", "one_gpu_before_0_7", [i * 0.02 * GiB for i in range(26)]),
    ("non_torch_bytes", "multi_gpu", [i * 0.05 * GiB for i in range(31)]),
    ("non_torch_bytes", "nvlink_before_0_9", [i * 0.1 * GiB for i in range(31)]),  # printed: 1.5–2.95 GiB
    ("non_torch_bytes", "nvswitch", [i * 0.25 * GiB for i in range(13)]),  # NCCL NVLS buffers: ≤ 3 GiB
    ("non_torch_bytes", "nvswitch_before_0_9", [i * 0.25 * GiB for i in range(30)]),  # printed: 7.16 GiB
    ("non_torch_bytes", "rocm", [i * 0.25 * GiB for i in range(17)]),
)
#: A case's error counts at most this much in the fit, so one broken log cannot steer it.
FIT_ERROR_CAP = 0.5


def source_of(case: dict, corpus: Sequence[dict] = ()) -> str:
    """The source a case comes from: a GitHub repository, an issue thread, or the named post.

    A locator that says "same project as <case>" belongs to that case's source.
    """
    url = case["source_url"]
    same = re.search(r"same project as ([A-Z0-9]+-\d+)", url)
    if same:
        return next((source_of(c) for c in corpus if c["case_id"] == same[1]), same[1])
    parts = url.split("/")
    if url.startswith("https://github.com/") and len(parts) > 4:
        return "/".join(parts[2:5]) + ("/" + "/".join(parts[5:7]) if parts[5:6] in (["issues"], ["pull"]) else "")
    return url.split(" - ")[0].split("(")[0].strip()


def with_value(c: Coefficients, name: str, key: str | None, x: float) -> Coefficients:
    """``c`` with one fitted constant set to ``x`` (its range widened to include ``x``)."""
    old = getattr(c, name) if key is None else getattr(c, name)[key]
    span = Span(min(old.low, x), x, max(old.high, x))
    if key is None:
        return replace(c, **{name: span})
    return replace(c, **{name: {**getattr(c, name), key: span}})


def fit_case(case: dict) -> dict | None:
    """What the fit needs of a case: its settings, budget, weights and the KV bytes vLLM printed. The fitted
    constants are the overhead terms', so the weights are the log's own "Model loading took" where it prints
    them (the first stage's): a weights estimate that is off would otherwise steer the overheads' fit."""
    try:
        r = predict(case)
    except Exception:  # noqa: BLE001 - failed cases are reported by evaluate()
        return None
    st, rep = r.binding, case["reported"]
    if rep.get("kv_cache_memory_gib") is not None:
        truth = rep["kv_cache_memory_gib"] * GiB
    elif printed_tokens(case) and r.kv_cache_tokens > 0:
        truth = printed_tokens(case) * st.available.value / r.kv_cache_tokens
    else:
        return None
    printed_weights = rep.get("model_weights_gib")
    weights = printed_weights * GiB if printed_weights is not None and st.stage == 0 else st.weights_bytes
    return {"case": case, "model": case_model(case), "settings": r.settings, "gpu": case_gpu(case).get("gpu"),
            "layers": st.num_layers, "last_stage": st.stage == r.settings.pipeline_parallel_size - 1,
            "rest": r.budget_bytes - weights, "truth": truth}


def _fit_error(fc: dict, c: Coefficients) -> float:
    act, nt, cg, sub = stage_overheads(fc["model"], fc["settings"], fc["gpu"], fc["layers"], c, fc["last_stage"])
    pred = fc["rest"] - act.value - nt.value - (cg.value if sub else 0.0)
    return min(FIT_ERROR_CAP, abs(_err(pred, fc["truth"])))


def fit(cases: list[dict], start: Coefficients = COEFFICIENTS, sweeps: int = 2) -> Coefficients:
    """Coordinate descent over :data:`FITTED`, minimising the summed capped |error| of available KV."""
    c = start
    for _ in range(sweeps):
        for name, key, grid in FITTED:
            c = min((with_value(c, name, key, x) for x in grid),
                    key=lambda cand: sum(_fit_error(fc, cand) for fc in cases))
    return c


def leave_one_source_out(corpus: list[dict]) -> list[dict]:
    """Each usable case predicted with constants fitted on every other source's logs."""
    usable = [c for c in corpus if c.get("usable_from_scratch")]
    fitted = [fc for fc in map(fit_case, usable) if fc]
    rows = []
    for source in dict.fromkeys(source_of(c, corpus) for c in usable):
        train = [fc for fc in fitted if source_of(fc["case"], corpus) != source]
        coef = fit(train)
        rows += [evaluate(c, coef) for c in usable if source_of(c, corpus) == source]
    return rows


def describe(c: Coefficients) -> list[str]:
    """The fitted constants, one line each (GiB for bytes terms, bytes for the sampler)."""
    out = []
    for name, key, _ in FITTED:
        s = getattr(c, name) if key is None else getattr(c, name)[key]
        scale = GiB if name in ("activation_base_bytes", "non_torch_bytes") else 1
        out.append(f"{name}{'' if key is None else '[' + key + ']'} = {s.value / scale:.3g} "
                   f"(range {s.low / scale:.3g}–{s.high / scale:.3g})")
    return out


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def summarise(rows: list[dict]) -> dict:
    """Medians, shares and counts over a set of evaluated rows."""
    out: dict = {"cases": len(rows), "failed": sum(1 for r in rows if r["failed"])}
    for m in METRICS:
        n = sum(1 for r in rows if r["printed"][m] is not None)  # failed predictions included
        ok = [r[m] for r in rows if not r["failed"] and r.get(m) and r[m]["error"] is not None]
        errs = [abs(e["error"]) for e in ok]
        s = {"n_printed": n, "n_predicted": len(ok), "median_abs_error": _median(errs),
             "median_error": _median([e["error"] for e in ok]),
             "share_within_5pct": (sum(x <= 0.05 for x in errs) / n) if n else None}
        if m != "weights":
            s["share_in_range"] = (sum(e["in_range"] for e in ok) / n) if n else None
            s["median_range_width"] = _median([e["range_width"] for e in ok if e["range_width"] is not None])
        out[m] = s
    return out


def _check(value: float | None, target: float, at_most: bool) -> str:
    if value is None:
        return "n/a"
    return "MET" if (value <= target if at_most else value >= target) else "MISSED"


def figures(corpus: list[dict]) -> dict:
    usable = [c for c in corpus if c.get("usable_from_scratch")]
    t0 = time.perf_counter()
    rows = [evaluate(c) for c in usable]
    elapsed = time.perf_counter() - t0
    summary = summarise(rows)
    per_engine = {e: summarise([r for r in rows if r["engine"] == e]) for e in ("V0", "V1")}
    per_family = {f: summarise([r for r in rows if f in r["families"]]) for f in FAMILIES}
    targets = {
        "weights_median_abs_error": {"target": "<= 0.5 %", "value": summary["weights"]["median_abs_error"],
                                     "status": _check(summary["weights"]["median_abs_error"], 0.005, True)},
        "available_median_abs_error": {"target": "<= 2 %", "value": summary["available"]["median_abs_error"],
                                       "status": _check(summary["available"]["median_abs_error"], 0.02, True)},
        "available_share_within_5pct": {"target": ">= 90 %", "value": summary["available"]["share_within_5pct"],
                                        "status": _check(summary["available"]["share_within_5pct"], 0.9, False)},
        "available_share_in_range": {"target": ">= 90 %", "value": summary["available"]["share_in_range"],
                                     "status": _check(summary["available"]["share_in_range"], 0.9, False)},
    }
    loso = summarise(leave_one_source_out(corpus))
    refit = describe(fit([fc for fc in map(fit_case, usable) if fc]))
    return {"corpus": str(CORPUS.relative_to(ROOT)), "corpus_cases": len(corpus), "usable_cases": len(usable),
            "elapsed_s": round(elapsed, 3), "summary": summary, "leave_one_source_out": loso,
            "shipped_constants": describe(COEFFICIENTS), "refit_on_all_sources": refit,
            "per_engine": per_engine, "per_family": per_family,
            "targets": targets, "cases": rows,
            "failed": [{"case_id": r["case_id"], "model": r["model"], "version": r["version"], "error": r["failed"]}
                       for r in rows if r["failed"]]}


def headline(row: dict) -> float | None:
    """The error a row is ranked by: available KV memory, else tokens, else weights."""
    for m in ("available", "tokens", "weights"):
        if row.get(m) and row[m]["error"] is not None:
            return row[m]["error"]
    return None


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


def _abs(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _share(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f} %"


def _cell(entry: dict | None, fmt: str) -> str:
    if not entry:
        return "—"
    rng = "" if "in_range" not in entry else (" in" if entry["in_range"] else " OUT")
    return f"{format(entry['predicted'], fmt)}/{format(entry['printed'], fmt)} {_pct(entry['error'])}{rng}"


def print_report(fig: dict) -> None:
    rows = fig["cases"]
    ok = [r for r in rows if not r["failed"]]
    ok.sort(key=lambda r: -abs(headline(r) or 0))
    print(f"vLLM start-up accuracy, from scratch: {fig['usable_cases']} usable of {fig['corpus_cases']} corpus "
          f"cases ({fig['corpus']}); predicted / printed, error, in/OUT of the product's range\n")
    head = (f"{'case':<6} {'model':<40} {'vllm':<7} {'eng':<3} {'gpu':<14} {'TP/PP':<5} {'weights GiB':<22} "
            f"{'available KV GiB':<27} {'KV tokens':<31} {'concurrency':<22}")
    print(head)
    print("-" * len(head))
    for r in ok:
        print(f"{r['case_id']:<6} {r['model'][:40]:<40} {r['version']:<7} {r['engine']:<3} {str(r['gpu'])[:14]:<14} "
              f"{r['tp']}/{r['pp']:<3} {_cell(r.get('weights'), '.2f'):<22} {_cell(r.get('available'), '.2f'):<27} "
              f"{_cell(r.get('tokens'), ',.0f'):<31} {_cell(r.get('concurrency'), '.2f'):<22}")
    if ok:
        w = ok[0]
        print(f"\nWorst: {w['case_id']} ({w['model']}, vLLM {w['version']}, {w['gpu']}) at {_pct(headline(w))}")
    if fig["failed"]:
        print(f"\nFailed predictions ({len(fig['failed'])}):")
        for f in fig["failed"]:
            print(f"  {f['case_id']:<6} {f['model'][:44]:<44} vLLM {f['version']:<7} {f['error']}")
    s = fig["summary"]

    def line(name: str, x: dict) -> str:
        a, t, w, c = x["available"], x["tokens"], x["weights"], x["concurrency"]
        return (f"{name:<12} n={x['cases']:<3} failed={x['failed']:<2} | weights n={w['n_printed']:<2} "
                f"med|err| {_abs(w['median_abs_error']):>6} | available n={a['n_printed']:<2} "
                f"med|err| {_abs(a['median_abs_error']):>6} ≤5% {_share(a['share_within_5pct']):>5} "
                f"in-range {_share(a['share_in_range']):>5} width {_abs(a['median_range_width']):>6} | "
                f"tokens n={t['n_printed']:<2} med|err| {_abs(t['median_abs_error']):>6} "
                f"≤5% {_share(t['share_within_5pct']):>5} in-range {_share(t['share_in_range']):>5} | "
                f"conc med|err| {_abs(c['median_abs_error']):>6}")
    print("\nSummary (medians over predicted cases; shares count failed predictions as misses)")
    print(line("all", s))
    for e, x in fig["per_engine"].items():
        print(line(f"engine {e}", x))
    for f, x in fig["per_family"].items():
        print(line(f"{f}", x))
    print(line("LOSO", fig["leave_one_source_out"]))
    print("  (LOSO: each source's logs predicted with the constants refitted on every other source)")
    print("\nConstants as shipped  |  refitted on all sources now")
    for shipped, refit in zip(fig["shipped_constants"], fig["refit_on_all_sources"], strict=True):
        print(f"  {shipped:<58} | {refit}")
    print("\nTargets")
    for k, v in fig["targets"].items():
        val = "—" if v["value"] is None else f"{100 * v['value']:.1f} %"
        print(f"  {k:<30} {v['target']:<9} actual {val:>8}  {v['status']}")
    print(f"\n({fig['elapsed_s']:.2f} s for the predictions)")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    ap.add_argument("--corpus", default=str(CORPUS), help="corpus file (default: %(default)s)")
    ap.add_argument("--quiet", action="store_true", help="print nothing (with --json)")
    args = ap.parse_args(argv)
    fig = figures(load_corpus(Path(args.corpus)))
    if not args.quiet:
        print_report(fig)
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=1, default=_json_default) + "\n")
    return fig


def _json_default(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


if __name__ == "__main__":
    main()
