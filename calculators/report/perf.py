"""The JSON documents of ``llmcap perf`` and ``llmcap knee`` (and the app's downloads)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from calculators.errors import InvalidInputError
from calculators.perf.bands import band_factors, timing_band
from calculators.perf.curves import KNEE_THRESHOLD, batch_curve_arrays, knee_batch, slo_batch
from calculators.perf.published_runs import family_runs, published_runs
from calculators.perf.roofline import Efficiencies, Roofline, crossover_batch_size, ridge_point
from calculators.perf.serving import budget_running_cap, open_loop_metrics, serving_metrics, static_batch_metrics
from calculators.planning.fleet import LayoutPlan, Workload, budget_cap_reason
from calculators.planning.replica_tails import replica_p99s_s
from calculators.specs.catalog import load_gpus
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.vllm.concurrency import batch_limit, replica_capacity, running_footprint_tokens


def kv_batch_limit(r: Roofline, context_tokens: int, **capacity_flags) -> int:
    """Largest batch of ``context_tokens``-token sequences the replica's KV pools hold (vLLM accounting; one
    pool per GPU with data-parallel attention, :func:`replica_capacity`)."""
    pools, res = replica_capacity(r.model, r.gpu, int(np.ravel(r.tensor_parallel_size)[0]), r.pipeline_parallel_size,
                                  dp_attention=r.enable_dp_attention, quantization=r.quantization,
                                  kv_cache_dtype=r.kv_cache_dtype, **capacity_flags)
    return pools * batch_limit(r.model, res, context_tokens)


#: The perf document's timed figures and the band (:mod:`calculators.perf.bands`) each carries.
BANDED_FIGURES = {"ttft_s": "ttft", "tpot_s": "tpot", "output_tokens_per_s": "throughput",
                  "output_tokens_per_s_per_gpu": "throughput"}


def band_80(r: Roofline, doc: dict) -> dict | None:
    """The 80 % band ``[low, high]`` of each of ``doc``'s timed figures (:data:`BANDED_FIGURES`, same units), the
    bands' measured coverage and what was held out to measure it (``"source"``, or ``"family"`` for a GPU whose
    family has no runs: :func:`~calculators.perf.bands.timing_band`); None for a caller's own efficiencies or a
    calibration, which the bands (measured on the shipped fit, docs/performance-model.md §11) do not describe."""
    if not r.efficiencies.is_shipped():
        return None
    f = band_factors(r.gpu)
    out: dict = {key: None if doc.get(key) is None else [doc[key] * f[m][0], doc[key] * f[m][1]]
                 for key, m in BANDED_FIGURES.items()}
    out["coverage"], out["held_out"] = f["coverage"], f["held_out"]
    out["note"] = (f"bands like these held on average at least {min(f['coverage'].values()):.0%} of "
                   f"{timing_band('tpot', r.gpu).held_out_text}")
    return out


_METRIC_NAMES = {"tpot": "TPOT", "ttft": "TTFT", "throughput": "output tokens/s"}


def published_runs_document(r: Roofline, input_len: float) -> list[dict]:
    """:func:`setup_published_runs` of the roofline's model, GPUs, layout and weights."""
    return setup_published_runs(r.model, r.gpu.id, int(np.ravel(r.tensor_parallel_size)[0]), r.quantization,
                                input_len, pipeline_parallel_size=r.pipeline_parallel_size,
                                dp_attention=r.enable_dp_attention, efficiencies=r.efficiencies)


def setup_published_runs(model: ModelSpec, gpu_id: str, tensor_parallel_size: int, quantization: str | None,
                         input_len: float, *, pipeline_parallel_size: int = 1, dp_attention: bool = False,
                         efficiencies: Efficiencies | None = None) -> list[dict]:
    """What public runs of this model on these GPUs in this layout with these weights, at prompts of this size,
    measured against the shipped model (:func:`~calculators.perf.published_runs.published_runs`, errors held out
    of the fit), each with a ``text`` to show; empty for a caller's own ``efficiencies`` or a calibration, and
    where no public run matches."""
    if efficiencies is not None and not efficiencies.is_shipped():
        return []
    return [{**e.model_dump(), "text": published_run_text(e.model_dump())}
            for e in published_runs(model, gpu_id, tensor_parallel_size, quantization, input_len,
                                    pipeline_parallel_size=pipeline_parallel_size, dp_attention=dp_attention)]


def layout_published_runs(model: ModelSpec, plan: LayoutPlan | None, input_len: float,
                          efficiencies: Efficiencies | None = None) -> list[dict]:
    """:func:`setup_published_runs` of a fleet plan's layout (none where it does not fit): what the Fleet planner,
    ``llmcap plan`` and the quote show beside the chosen layout."""
    if plan is None or not plan.fits:
        return []
    return setup_published_runs(model, plan.gpu, plan.tensor_parallel_size, plan.weights, input_len,
                                pipeline_parallel_size=plan.pipeline_parallel_size, dp_attention=plan.dp_attention,
                                efficiencies=efficiencies)


def family_published_runs(gpu: GPUSpec, efficiencies: Efficiencies | None = None) -> list[dict]:
    """What every public run on ``gpu``'s family measured against the shipped model, whatever the model or layout
    (:func:`~calculators.perf.published_runs.family_runs`, errors held out of the fit), each with a ``text`` to
    show: what is known of the model's error where the corpus ran no such setup. Empty for a caller's own
    ``efficiencies`` or a calibration, and for a family without public runs."""
    if efficiencies is not None and not efficiencies.is_shipped():
        return []
    return [{**e.model_dump(), "text": published_run_text(e.model_dump())} for e in family_runs(gpu)]


def layout_family_runs(plan: LayoutPlan | None, efficiencies: Efficiencies | None = None) -> list[dict]:
    """:func:`family_published_runs` of a fleet plan's GPU (none where it does not fit, nor for a custom GPU, which
    has no family in the corpus): what the pages show beside the chosen layout where the corpus ran no such setup."""
    gpu = None if plan is None or not plan.fits else load_gpus().get(plan.gpu)
    return [] if gpu is None else family_published_runs(gpu, efficiencies)


def published_runs_lines(entries: list[dict]) -> list[str]:
    """The heading and one line per entry (a setup's, or a GPU family's); none without entries."""
    return [published_runs_heading(entries), *(e["text"] for e in entries)] if entries else []


def _ratio_text(e: dict) -> str:
    """"TTFT measured 1.94 × the model's figure at the median (10–90 %: 1.63–2.57 ×)"."""
    spread = "" if e.get("ratio_low") is None else f" (10–90 %: {e['ratio_low']:.2f}–{e['ratio_high']:.2f} ×)"
    return f"{_METRIC_NAMES[e['metric']]} measured {e['ratio']:.2f} × the model's figure at the median{spread}"


def published_run_text(e: dict) -> str:
    """One entry in words (an entry's ``model_dump()``, ratios measured ÷ predicted): a setup's, "TTFT measured
    1.94 × the model's figure at the median (10–90 %: 1.63–2.57 ×): 58 rows, prompts of 3,750–7,372 tokens, 1–256 in
    flight, sglang, trtllm"; a GPU family's, "…: 427 rows of 2 models, sglang, trtllm"."""
    rows = f"{e['rows']:,} {'row' if e['rows'] == 1 else 'rows'}"
    if "gpu_family" in e:
        return (f"{_ratio_text(e)}: {rows} of {e['models']} {'model' if e['models'] == 1 else 'models'}, "
                f"{', '.join(e['engines'])}")
    lengths = (f"{e['input_len_min']:,}" if e["input_len_min"] == e["input_len_max"]
               else f"{e['input_len_min']:,}–{e['input_len_max']:,}")
    load = (f"{e['in_flight_min']:,.0f}" if e["in_flight_min"] == e["in_flight_max"]
            else f"{e['in_flight_min']:,.0f}–{e['in_flight_max']:,.0f}")
    return f"{_ratio_text(e)}: {rows}, prompts of {lengths} tokens, {load} in flight, {', '.join(e['engines'])}"


def published_ratios_text(entries: list[dict]) -> str:
    """A setup's entries in a table cell: "TTFT ×1.94, TPOT ×1.27, output tokens/s ×0.75 (58 rows)", measured ÷
    the model's figure at the median; a GPU family's: "NVIDIA Ada, any setup: TTFT ×0.81, … (28 rows)"; "—"
    without entries."""
    if not entries:
        return "—"
    ratios = ", ".join(f"{_METRIC_NAMES[e['metric']]} ×{e['ratio']:.2f}" for e in entries)
    rows = max(e["rows"] for e in entries)
    scope = f"{entries[0]['gpu_family']}, any setup: " if "gpu_family" in entries[0] else ""
    return f"{scope}{ratios} ({rows:,} {'row' if rows == 1 else 'rows'})"


def published_runs_heading(entries: list[dict]) -> str:
    """The line above the entries: whose runs they are (this setup's, or, where the corpus ran none, every run on
    the GPU's family) and how they were predicted."""
    from calculators.report.explain_fleet import PERF_PAGE
    sources = sorted({s for e in entries for s in e["sources"]})
    method = "each predicted by the fit without its source"
    if "gpu_family" in entries[0]:  # many publishers: counted here, named on the Model accuracy page
        return (f"no public run of this setup; public runs on {entries[0]['gpu_family']} GPUs, any model and layout "
                f"({len(sources)} {'source' if len(sources) == 1 else 'sources'}, listed on the Model accuracy page "
                f"and by llmcap accuracy --by source), {method} ({PERF_PAGE}, §11):")
    return f"public runs of this setup, {method} ({'; '.join(sources)}; {PERF_PAGE}, §11):"


def factors_text(f: dict) -> str:
    """``band_factors``' JSON as text: "TPOT ×0.46–×1.76, TTFT …, output tokens/s … (each public source left out
    of the fit)"."""
    held = "GPU family (this GPU's has no runs)" if f["held_out"] == "family" else "public source"
    return (f"TPOT ×{f['tpot'][0]:.2f}–×{f['tpot'][1]:.2f}, TTFT ×{f['ttft'][0]:.2f}–×{f['ttft'][1]:.2f}, output "
            f"tokens/s ×{f['throughput'][0]:.2f}–×{f['throughput'][1]:.2f} (each {held} left out of the fit)")


def _check_context(r: Roofline, tokens: float) -> None:
    if tokens > r.model.max_position_embeddings:
        raise InvalidInputError("input_len + output_len", int(tokens),
                                f"at most max_position_embeddings ({r.model.max_position_embeddings}) of {r.model.id}")


def _load(r: Roofline, input_len: int, output_len: int, batch_size: int | None, concurrency: float | None,
          request_rate: float | None, max_num_seqs: int,
          slots: dict[str, int]) -> tuple[str, float, dict[str, float]]:
    """The load mode, its value and its metrics: exactly one of batch, concurrency or rate; a concurrency runs
    at most ``slots["concurrency"]`` requests at once, the rest wait, and a static batch runs in waves of
    ``slots["static_batch"]`` (docs/performance-model.md §2)."""
    given = {k: v for k, v in (("static_batch", batch_size), ("concurrency", concurrency),
                               ("request_rate", request_rate)) if v is not None}
    if len(given) != 1:
        raise InvalidInputError("load", ", ".join(given) or None,
                                "exactly one of --batch-size, --concurrency or --request-rate")
    (mode, value), = given.items()
    if mode == "static_batch":
        m = static_batch_metrics(r, value, input_len, output_len, max_running=slots[mode])
    elif mode == "concurrency":
        m = serving_metrics(r, value, input_len, output_len, max_running=slots[mode])
    else:
        m = open_loop_metrics(r, value, input_len, output_len, max_num_seqs=max_num_seqs)
    return mode, float(value), {k: float(np.ravel(v)[0]) for k, v in m.items()}


def perf_document(r: Roofline, *, input_len: int, output_len: int, batch_size: int | None = None,
                  concurrency: float | None = None, request_rate: float | None = None,
                  max_num_seqs: int = 256) -> dict:
    """Prefill, decode, TTFT, TPOT, latency, throughput and bound under one load (SI units): a static batch
    of ``batch_size`` prompts, ``concurrency`` requests in flight, or Poisson arrivals at ``request_rate``."""
    _check_context(r, input_len + output_len)
    limit = kv_batch_limit(r, input_len + output_len)
    mean_len = int(running_footprint_tokens(input_len, output_len))
    running_limit = kv_batch_limit(r, mean_len)
    admitted = float(np.ravel(budget_running_cap(r, input_len, output_len))[0])  # inf: prompts go first
    caps = {"static_batch": max(1, min(limit, max_num_seqs)),
            "concurrency": max(1, int(min(running_limit, max_num_seqs, admitted)))}
    mode, value, m = _load(r, input_len, output_len, batch_size, concurrency, request_rate, max_num_seqs, caps)
    slots = caps.get(mode, caps["static_batch"])
    in_flight = m.pop("concurrency", value)
    overloaded = bool(m.pop("overloaded", False))
    running = min(in_flight, slots) if mode in ("concurrency", "static_batch") else in_flight
    batch = max(1, round(running))  # sequences in a step, whole
    terms = r.decode_breakdown(running, input_len + output_len / 2)
    cross = float(np.ravel(crossover_batch_size(r, input_len + output_len / 2))[0])
    doc: dict[str, Any] = {
        "model": r.model.id, "gpu": r.gpu.id, "tensor_parallel_size": int(np.ravel(r.tensor_parallel_size)[0]),
        "pipeline_parallel_size": r.pipeline_parallel_size, "enable_dp_attention": r.enable_dp_attention,
        "compute_dtype": r.dtype_used, "load_mode": mode, "batch_size": batch, "concurrency": in_flight,
        "request_rate": request_rate,
        "overloaded": overloaded, "input_len": input_len, "output_len": output_len,
        **{k: (None if math.isinf(v) else v) for k, v in m.items()},
        "bound": "memory" if bool(np.ravel(terms["memory_bound"])[0]) else "compute",
        "decode_compute_s": float(np.ravel(terms["compute_s"])[0]),
        "decode_memory_s": float(np.ravel(terms["memory_s"])[0]),
        "decode_allreduce_s": float(np.ravel(terms["allreduce_s"])[0]),
        "allreduce_over_pcie": bool(r.gpu.scale_up_over_pcie and np.ravel(r.tensor_parallel_size)[0] > 1),
        "step_overhead_s": r.efficiencies.step_overhead_s, "request_overhead_s": r.request_overhead_s,
        "ridge_point_flop_per_byte": ridge_point(r.gpu, r.dtype_used),
        "crossover_batch_size": None if math.isinf(cross) else cross,
        "crossover_note": ("KV-cache reads keep decode memory-bound at every batch size at this context"
                           if math.isinf(cross) else f"decode turns compute-bound above ≈{cross:.0f} sequences"),
        "kv_batch_limit": limit, "kv_running_limit": running_limit,
        "budget_running_limit": None if math.isinf(admitted) else int(admitted),
        "efficiencies": {"compute": r.efficiencies.compute, "compute_dtype_share": r.efficiencies.compute_dtype_share,
                         "attention_compute_share": r.efficiencies.attention_compute_share,
                         "memory": r.efficiencies.memory},
    }
    if mode == "request_rate":  # the p99s of a replica of max_num_seqs slots, as the fleet planner prices them
        w = Workload(request_rate_per_s=value, input_len=input_len, output_len=output_len)
        ttft_p99, tpot_p99 = replica_p99s_s(r, w, caps["static_batch"])
        doc["ttft_p99_s"] = None if math.isinf(ttft_p99) or overloaded else ttft_p99
        doc["tpot_p99_s"], doc["p99_slots"] = tpot_p99, caps["static_batch"]
    doc["band_80"] = band_80(r, doc)
    doc["published_runs"] = published_runs_document(r, input_len)
    doc["family_runs"] = family_published_runs(r.gpu, r.efficiencies)
    whole = (limit, f"sequences of {input_len + output_len} tokens")
    held, what = (running_limit, f"sequences at their mean length of {mean_len:,} tokens, vLLM preempting the "
                  "newest beyond") if mode == "concurrency" else whole
    why = f"the KV cache holds {held} {what}" if held <= max_num_seqs else f"max_num_seqs {max_num_seqs}"
    if mode == "concurrency" and admitted < min(held, max_num_seqs):
        why = budget_cap_reason(r.max_num_batched_tokens, input_len, output_len, admitted)
    if mode == "concurrency" and in_flight > slots:
        doc["warning"] = (f"{in_flight:g} requests in flight but at most {slots} run at once ({why}): the others "
                          f"wait {m['queue_wait_s'] * 1e3:,.0f} ms on average for a slot, and TTFT includes it")
    elif mode == "static_batch" and in_flight > slots:
        doc["warning"] = (f"a batch of {in_flight:g} but at most {slots} run at once ({why}): it runs in "
                          f"{math.ceil(in_flight / slots)} waves, a request waits {m['queue_wait_s'] * 1e3:,.0f} ms on "
                          f"average for its wave, and TTFT includes it")
    elif mode == "concurrency" and batch > limit:
        doc["warning"] = (f"{batch} in flight is more than the {limit} sequences of {input_len + output_len} tokens "
                          f"the KV cache holds whole: vLLM runs them all as they are spread over their decode "
                          f"({running_limit} fit at their mean length of {mean_len:,} tokens), and preempts the newest "
                          "when their lengths bunch")
    elif batch > limit:
        doc["warning"] = f"batch {batch} exceeds the KV cache: at most {limit} sequences of " \
                         f"{input_len + output_len} tokens fit"
    return doc


def knee_document(r: Roofline, *, input_len: int, output_len: int, ttft_target_s: float | None = None,
                  tpot_target_s: float | None = None, threshold: float = KNEE_THRESHOLD,
                  max_batch: int | None = None) -> dict:
    """The knee (doubling gains < threshold) and the SLO batch, up to the KV-capacity limit."""
    _check_context(r, input_len + output_len)
    limit = kv_batch_limit(r, input_len + output_len)
    top = max_batch or limit
    if top < 1:
        return {"model": r.model.id, "gpu": r.gpu.id, "kv_batch_limit": limit, "knee_batch_size": None,
                "slo_batch_size": None, "message": "not even one sequence of this length fits in the KV cache"}
    c = batch_curve_arrays(r, input_len, output_len, top)
    knee = knee_batch(c["batch_size"], c["output_tokens_per_s"], threshold)
    slo = slo_batch(c["batch_size"], c["ttft_s"], c["tpot_s"], ttft_target_s=ttft_target_s,
                    tpot_target_s=tpot_target_s)
    records = [{k: float(v[i]) for k, v in c.items()} for i in range(len(c["batch_size"]))]
    doc = {"model": r.model.id, "gpu": r.gpu.id, "tensor_parallel_size": int(np.ravel(r.tensor_parallel_size)[0]),
           "input_len": input_len, "output_len": output_len, "knee_threshold": threshold, "kv_batch_limit": limit,
           "knee_batch_size": knee, "slo_batch_size": slo, "curve": records,
           "band_80_factors": band_factors(r.gpu) if r.efficiencies.is_shipped() else None}
    if slo is None:
        best_tpot, best_ttft = float(c["tpot_s"].min()), float(c["ttft_s"].min())
        parts = []
        if tpot_target_s is not None and best_tpot > tpot_target_s:
            parts.append(f"TPOT ≥ {best_tpot * 1e3:.0f} ms at any batch on this GPU")
        if ttft_target_s is not None and best_ttft > ttft_target_s:
            parts.append(f"TTFT ≥ {best_ttft * 1e3:.0f} ms at any batch on this GPU")
        doc["message"] = "no batch size meets the SLO: " + "; ".join(parts or ["targets conflict"])
    else:
        doc["message"] = f"knee at batch {knee:.0f}; largest batch meeting the SLO: {slo:.0f}"
    return doc
