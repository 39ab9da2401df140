"""What the performance pages show beside the ``llmcap perf`` / ``llmcap knee`` documents: the
knee and SLO batch at the scenario's KV limit, roofline operating points, the latency budget at a
batch size, the curve as CSV, and "show the math" texts with the user's numbers substituted.

Pure functions of a :class:`calculators.perf.roofline.Roofline`, a
:class:`calculators.vllm.capacity.CapacityResult` and the documents of
:mod:`calculators.report.perf`; no Streamlit, no plotly. SI units inside; the ``math_*`` texts
show latency in ms, compute in TFLOP/s and bandwidth in GB/s (decimal).
"""
from __future__ import annotations

import math

import numpy as np

from calculators.perf.curves import KNEE_THRESHOLD
from calculators.perf.latency_budget import latency_budget
from calculators.perf.roofline import (
    Efficiencies,
    Roofline,
    attention_dtype,
    attention_read_efficiency,
    decode_terms,
    expert_read_slowdown,
    prefill_terms,
)
from calculators.perf.serving import prompt_service_time_s, serving_metrics, slot_view
from calculators.planning.fleet import UTILISATION_CAP, Workload
from calculators.planning.queueing import batched_server_wait, mg1_wait_quantile_s, replica_ttft_wait_p99_s
from calculators.planning.replica_tails import TtftQueue, tpot_curve
from calculators.report.perf import knee_document, perf_document
from calculators.vllm.advice import recommend_max_num_seqs
from calculators.vllm.capacity import CapacityResult
from calculators.vllm.concurrency import attention_ranks, batch_limit

#: Decode batch sizes whose operating points the roofline chart shows (with the knee and the KV limit).
ROOFLINE_BATCHES = (1, 4, 16, 64, 256, 1024)


def _f(x) -> float:
    return float(np.ravel(x)[0])


def _ms(x: float) -> str:
    return f"{x * 1e3:,.2f} ms"


# --- the documents at the scenario's KV limit --------------------------------------------------

def performance_summary(r: Roofline, result: CapacityResult, *, input_len: int, output_len: int,
                        ttft_target_s: float | None, tpot_target_s: float | None,
                        threshold: float = KNEE_THRESHOLD, kv_max_num_seqs: int | None = None) -> dict:
    """The knee document (``llmcap knee --max-batch <KV limit> --json``), the one ``max_num_seqs``
    recommendation (:func:`calculators.vllm.advice.recommend_max_num_seqs`) and the perf document with
    that many requests in flight (``llmcap perf --concurrency <n> --json``), for the scenario's KV limit.

    ``result`` is one KV pool's capacity: with data-parallel attention (``r.enable_dp_attention``) the replica
    runs ``pools`` of them, one per GPU (:func:`~calculators.vllm.concurrency.attention_ranks`; vLLM's data-parallel
    ranks), so its limit is ``pools`` times the pool's and the recommendation is each rank's ``max_num_seqs``
    (vLLM's flag is per rank), with ``pools`` times as many requests in flight. ``kv_max_num_seqs`` is what the pool
    holds at the scenario's length mix (the capacity advice); without it, the pool's limit at ``input_len +
    output_len``. Returns ``{"limit", "knee", "recommendation", "perf" (None when nothing fits), "batch",
    "crossover", "pools"}``.
    """
    pools = attention_ranks(int(np.ravel(r.tensor_parallel_size)[0]), r.enable_dp_attention).pools
    pool_limit = batch_limit(r.model, result, input_len + output_len)
    limit = pools * pool_limit
    if limit < 1:
        knee: dict = {"model": r.model.id, "gpu": r.gpu.id, "kv_batch_limit": limit, "knee_batch_size": None,
                "slo_batch_size": None, "curve": [],
                "message": f"not even one sequence of {input_len + output_len:,} tokens fits in the KV cache"
                           + (f" (max_model_len {result.settings.max_model_len:,})"
                              if input_len + output_len > result.settings.max_model_len else "")}
        return {"limit": limit, "knee": knee, "recommendation": None, "perf": None, "batch": None,
                "crossover": None, "pools": pools}
    knee = knee_document(r, input_len=input_len, output_len=output_len, ttft_target_s=ttft_target_s,
                         tpot_target_s=tpot_target_s, threshold=threshold, max_batch=limit)
    knee["kv_batch_limit"] = limit
    per_rank = {k: None if knee[k] is None else max(1, int(knee[k]) // pools)
                for k in ("slo_batch_size", "knee_batch_size")}
    rec = recommend_max_num_seqs(min(kv_max_num_seqs or pool_limit, pool_limit), per_rank["slo_batch_size"],
                                 per_rank["knee_batch_size"],
                                 has_targets=ttft_target_s is not None or tpot_target_s is not None)
    batch = int(rec["max_num_seqs"]) * pools
    perf = perf_document(r, concurrency=batch, input_len=input_len, output_len=output_len)
    perf["kv_batch_limit"] = limit
    if batch <= limit:
        perf.pop("warning", None)
    return {"limit": limit, "knee": knee, "recommendation": rec, "perf": perf, "batch": batch,
            "crossover": perf["crossover_batch_size"], "pools": pools}


def context_options(default: int, maximum: int, minimum: int = 16) -> list[int]:
    """Prompt lengths a context slider offers: powers of two from ``minimum`` to ``maximum``, the
    scenario's own length and ``maximum`` itself [tokens]."""
    top = max(1, int(maximum))
    grid = [int(x) for x in 2 ** np.arange(int(np.log2(max(minimum, 1))), int(np.log2(top)) + 1) if x <= top]
    return sorted({*grid, min(int(default), top), top})


def curve_columns(knee_doc: dict) -> dict[str, np.ndarray]:
    """The knee document's curve as columns (one array per field) with ``ttft_ms`` and ``tpot_ms`` added."""
    curve = knee_doc.get("curve", [])
    if not curve:
        return {}
    cols = {k: np.array([p[k] for p in curve], dtype=np.float64) for k in curve[0]}
    cols["ttft_ms"] = cols["ttft_s"] * 1e3
    cols["tpot_ms"] = cols["tpot_s"] * 1e3
    return cols


def curve_csv(knee_doc: dict) -> str:
    """The curve as CSV (SI units in the column names, one row per batch size)."""
    import pandas as pd
    df = pd.DataFrame(knee_doc.get("curve", []))
    df.insert(0, "output_len", knee_doc.get("output_len"))
    df.insert(0, "input_len", knee_doc.get("input_len"))
    return df.to_csv(index=False, lineterminator="\n")


def slo_text(knee_doc: dict) -> str:
    """The SLO batch in words: the largest batch meeting the targets, or the closest feasible."""
    slo = knee_doc.get("slo_batch_size")
    if slo is not None:
        return f"largest batch meeting the p99 TTFT and TPOT targets: {slo:,.0f}"
    return knee_doc["message"]


# --- roofline chart data -----------------------------------------------------------------------

def _tp(r: Roofline) -> int:
    return int(np.ravel(r.tensor_parallel_size)[0])


def decode_points(r: Roofline, batches, context_tokens: float) -> dict[str, np.ndarray]:
    """Decode operating points per GPU: arithmetic intensity [FLOP/byte] and attained FLOP/s (FLOP ÷ the step's
    kernel time, its linear layers' and its attention's each at the slower of their matmuls and their memory
    traffic: on the efficiency-scaled roof where both are bound by the same one, below it where they are not)."""
    b = np.unique(np.asarray(batches, dtype=np.float64))
    t = decode_terms(r.coefficients, r.efficiencies, b, np.float64(context_tokens), 1)
    flop, byt = np.broadcast_to(t["flop"], b.shape), np.broadcast_to(t["bytes"], b.shape)
    busy = t["kernels_s"] / r.coefficients.pp  # one micro-batch takes pp stage slots; FLOP and bytes are a stage's
    return {"batch_size": b, "flop": flop, "bytes": byt, "intensity_flop_per_byte": flop / byt,
            "flop_per_s": flop / busy, "memory_bound": np.broadcast_to(t["memory_bound"], b.shape)}


def prefill_point(r: Roofline, prompt_tokens: float) -> dict:
    """Prefill of one prompt per GPU: intensity [FLOP/byte] and attained FLOP/s (FLOP ÷ kernel time, as
    :func:`decode_points`; chunked as vLLM)."""
    c, e = r.coefficients, r.efficiencies
    t = prefill_terms(c, e, np.float64(prompt_tokens), np.float64(1), r.max_num_batched_tokens)
    flop = _f(t["flop"])
    byt = _f(t["memory_s"]) / c.pp * c.bandwidth_bytes_per_s * e.memory
    return {"prompt_tokens": prompt_tokens, "flop": flop, "bytes": byt, "intensity_flop_per_byte": flop / byt,
            "flop_per_s": flop / (_f(t["kernels_s"]) / c.pp), "memory_bound": bool(np.ravel(t["memory_bound"])[0])}


def roofs(r: Roofline, intensity_min: float, intensity_max: float, points: int = 48) -> dict[str, np.ndarray]:
    """The datasheet roof ``min(peak, I · bandwidth)`` and the efficiency-scaled roof [FLOP/s]: the compute dtype's
    peak at the linear layers' efficiency, ``compute × compute_dtype_share``."""
    c, e = r.coefficients, r.efficiencies
    i = np.geomspace(intensity_min, intensity_max, points)
    ridge = c.peak_flop_per_s / c.bandwidth_bytes_per_s
    i = np.unique(np.append(i, ridge))
    return {"intensity_flop_per_byte": i,
            "peak_flop_per_s": np.minimum(c.peak_flop_per_s, i * c.bandwidth_bytes_per_s),
            "effective_flop_per_s": np.minimum(c.peak_flop_per_s * e.compute * e.compute_dtype_share,
                                               i * c.bandwidth_bytes_per_s * e.memory)}


# --- latency budget ----------------------------------------------------------------------------

def default_target_s(*, ttft_target_s: float | None, tpot_target_s: float | None, output_len: float,
                     predicted_e2e_s: float) -> tuple[float, str]:
    """End-to-end target [s] and its basis: ``TTFT target + (O − 1) · TPOT target`` from the p99
    targets, or 20 % above the predicted end-to-end latency (rounded up to 0.1 s) when there are none."""
    if ttft_target_s is None and tpot_target_s is None:
        return (math.ceil(predicted_e2e_s * 1.2 * 10) / 10,
                "no p99 targets in the scenario: 20 % above the predicted end-to-end latency")
    parts = [f"TTFT {ttft_target_s * 1e3:g} ms" if ttft_target_s is not None else "no TTFT target",
             f"({output_len:g} − 1) × TPOT {tpot_target_s * 1e3:g} ms" if tpot_target_s is not None
             else "no TPOT target"]
    return ((ttft_target_s or 0.0) + (output_len - 1) * (tpot_target_s or 0.0),
            "from the scenario's p99 targets: " + " + ".join(parts))


def default_replicas(request_rate_per_s: float, replica_requests_per_s: float,
                     utilisation_cap: float = UTILISATION_CAP) -> int:
    """Fewest replicas that keep each one's utilisation at or below the cap (the fleet planner's first step)."""
    return max(1, math.ceil(request_rate_per_s / (utilisation_cap * replica_requests_per_s) - 1e-9))


def budget_at_batch(r: Roofline, *, batch: int, input_len: float, output_len: float, request_rate_per_s: float,
                    replicas: int, target_s: float, network_s: float = 0.0, slot_cv: float = 0.0,
                    prompt_cv: float = 0.0) -> dict:
    """TTFT = p99 queue wait + prefill, (O − 1) · p99 TPOT and network against an end-to-end target.

    The queue is the wait for a slot, :func:`calculators.planning.queueing.batched_server_wait` at
    ``request_rate / replicas`` with ``batch`` slots and the end-to-end latency at that batch as service time,
    plus the wait for the steps' token budget (:func:`calculators.planning.queueing.mg1_wait_quantile_s`, prompts
    of :func:`calculators.perf.serving.prompt_service_time_s`), their p99s added as the fleet planner adds them
    (docs/queueing.md §4). ``slot_cv`` and ``prompt_cv`` are the coefficients of variation of the slot time and
    the prompt service, 0 for fixed lengths, as the fleet planner takes a workload without p95 lengths: at the
    plan's batch and replicas the TTFT here is the plan's p99 TTFT. The p99 TPOT at ``request_rate / replicas``
    is the fleet planner's too (:func:`calculators.planning.replica_tails.tpot_curve`: other requests' prompts
    mixed into a request's steps, at most a full batch's TPOT). Returns the serving metrics (``m``), both queues,
    the p99 TPOT (``tpot_p99_s``) and the budget of :func:`latency_budget` (``None`` when either queue is
    unstable).
    """
    m = {k: _f(v) for k, v in slot_view(r, serving_metrics(r, batch, input_len, output_len), batch,
                                        output_len).items()}
    rate = request_rate_per_s / replicas
    wait = batched_server_wait(rate, m["slot_time_s"], int(batch), service_cv=slot_cv)
    prompt_s = _f(prompt_service_time_s(r, batch, input_len, output_len))
    prompt_wait_s = _f(mg1_wait_quantile_s(rate, prompt_s, prompt_cv, 0.99))
    stable = bool(np.ravel(wait.stable)[0]) and math.isfinite(prompt_wait_s)
    queue = TtftQueue(np.array([m["slot_time_s"]]), np.array([int(batch)]), np.array([prompt_s]), slot_cv, prompt_cv)
    w = Workload(request_rate_per_s=request_rate_per_s, input_len=input_len, output_len=output_len)
    tpot_p99_s = tpot_curve(r, w, [batch], queue).p99_at_s(rate)
    budget = None
    if stable:
        budget = {k: _f(v) for k, v in latency_budget(
            target_s=target_s, prefill_s=m["ttft_s"], tpot_s=tpot_p99_s, output_len=output_len,
            queue_s=_f(replica_ttft_wait_p99_s(rate, m["slot_time_s"], int(batch), prompt_s, slot_cv=slot_cv,
                                               prompt_cv=prompt_cv)),
            network_s=network_s).items()}
    return {"m": m, "rate_per_replica": rate, "utilisation": _f(wait.utilisation), "stable": stable,
            "wait_mean_s": _f(wait.mean_wait_s), "wait_p99_s": _f(wait.p99_wait_s),
            "prob_wait": _f(wait.probability_of_wait), "slot_cv": slot_cv, "prompt_service_s": prompt_s,
            "prompt_utilisation": rate * prompt_s, "prompt_wait_p99_s": prompt_wait_s, "tpot_p99_s": tpot_p99_s,
            "budget": budget}


def budget_rows(budget: dict, *, output_len: float, target_s: float, ttft_target_s: float | None,
                tpot_target_s: float | None) -> list[dict]:
    """Each component against its share of the target [ms]; ``margin_ms`` < 0 is a shortfall.

    Shares: TTFT (queue + prefill) gets the TTFT target, decode ``(O − 1) ×`` the TPOT target, network
    what the end-to-end target leaves; the shares add up to the target, so the margins add up too.
    """
    decode_t = None if tpot_target_s is None else (output_len - 1) * tpot_target_s
    net_t = None if ttft_target_s is None or decode_t is None else target_s - ttft_target_s - decode_t
    rows = [("queue (p99 wait for a slot and the token budget)", budget["queue_s"], None),
            ("prefill", budget["prefill_s"], None),
            ("TTFT = queue + prefill", budget["ttft_s"], ttft_target_s),
            (f"decode = ({output_len:g} − 1) × p99 TPOT", budget["decode_s"], decode_t),
            ("network overhead", budget["network_s"], net_t), ("end-to-end", budget["total_s"], target_s)]
    return [{"component": c, "predicted_ms": round(v * 1e3, 6), "budget_ms": None if t is None else round(t * 1e3, 6),
             "margin_ms": None if t is None else round((t - v) * 1e3, 6) + 0.0} for c, v, t in rows]


# --- show the math -----------------------------------------------------------------------------

def _pm_sources(r: Roofline) -> list[str]:
    e, g = r.efficiencies, r.gpu
    attn = attention_dtype(r.model, g, r.dtype)
    return [f"peak {g.peak_flop_per_s[r.dtype_used] / 1e12:,.1f} TFLOP/s ({r.dtype_used}, dense"
            + (f"; attention {g.peak_flop_per_s[attn] / 1e12:,.1f} TFLOP/s, {attn}" if attn != r.dtype_used else "")
            + ") and HBM "
            f"{g.memory_bandwidth_bytes_per_s / 1e9:,.0f} GB/s: {g.id} datasheet ({g.source or 'custom GPU'})",
            f"efficiencies: compute {compute_efficiency_text(e, r.dtype_used)}, memory {e.memory:.2f}, step overhead "
            f"{e.step_overhead_s * 1e3:.2f} ms (docs/performance-model.md §4, or the calibration in force)",
            f"weights and KV bytes per GPU: {r.model.id} config, TP {_tp(r)} × PP {r.pipeline_parallel_size}"]


def compute_efficiency_text(e: Efficiencies, compute_dtype: str) -> str:
    """The 16-bit compute efficiency and, in brackets, the shares of it that the linear layers' ``compute_dtype``
    matmuls and attention's take (docs/performance-model.md §3.1, §4), as every sources line states them."""
    narrow = f"× {e.compute_dtype_share:.2f} for the {compute_dtype} matmuls, " if e.compute_dtype_share < 1 else ""
    return f"{e.compute:.2f} ({narrow}× {e.attention_compute_share:.2f} for attention's)"


def math_step_time(r: Roofline, batch: float, context_tokens: float) -> dict:
    """The decode step at ``batch`` sequences of ``context_tokens``, term by term: the printed terms add up to the
    printed step (each is :func:`calculators.perf.roofline.decode_terms`' own)."""
    c, e = r.coefficients, r.efficiencies
    t = {k: _f(v) for k, v in r.decode_breakdown(batch, context_tokens).items()}
    mb = r.micro_batches or r.pipeline_parallel_size
    bs, stages = batch / mb, mb + c.pp - 1
    w = min(context_tokens, c.window_tokens)
    kv = _f(c.kv_full_bytes_per_token) * context_tokens + _f(c.kv_window_bytes_per_token) * w
    touched = 1 - (1 - c.expert_hit_fraction) ** bs
    slow, attn_eff = _f(expert_read_slowdown(c, e, bs)), _f(attention_read_efficiency(c, e, context_tokens))
    experts = _f(c.expert_flop_per_token)
    formula = ("step = (m + pp − 1) × (max(linear, weights) + max(attention, KV)) + all-reduce + overhead "
               "+ hand-offs; linear = B × linear FLOP/token ÷ (peak × eff_c × dtype share), the experts' FLOP at "
               "s_moe of that; "
               "weights = (dense weights + expert weights × touched × expert slowdown) ÷ (bandwidth × eff_m); "
               "attention = B × attention FLOP/token/ctx × C ÷ (16-bit peak × eff_c × attention share); "
               "KV = B × KV bytes/seq(C) ÷ (bandwidth × attention efficiency(C))")
    attn = _f(c.attn_full_flop_per_token_ctx * context_tokens + c.attn_window_flop_per_token_ctx * w)
    bw = f"{c.bandwidth_bytes_per_s / 1e9:,.0f} GB/s"
    sub = (f"B = {bs:g}, C = {context_tokens:,.0f}; "
           f"linear = {bs:g} × ({_f(c.linear_flop_per_token) / 1e9:,.3f} GFLOP"
           + (f" + {experts / 1e9:,.3f} GFLOP of experts × (1 ÷ {e.moe_compute_share:.3f} − 1)" if experts else "")
           + f") ÷ ({c.peak_flop_per_s / 1e12:,.1f} TFLOP/s × {e.compute:.3f}"
           + (f" × {e.compute_dtype_share:.3f}" if e.compute_dtype_share < 1 else "")
           + f") = {_ms(t['linear_s'])}; "
           f"weights = ({_f(c.dense_weight_bytes) / 1e9:,.2f} GB"
           + (f" + {_f(c.expert_weight_bytes) / 1e9:,.2f} GB × {touched:.3f} touched × {slow:.2f} slower"
              if c.expert_hit_fraction else "")
           + f") ÷ ({bw} × {e.memory:.2f}) = {_ms(t['weights_s'])}; "
           f"attention = {bs:g} × {attn / 1e9:,.3f} GFLOP ÷ ({c.attn_peak_flop_per_s / 1e12:,.1f} TFLOP/s × "
           f"{e.compute:.3f} × {e.attention_compute_share:.3f}) = {_ms(t['attention_s'])}; "
           f"KV = {bs:g} × {kv / 1e6:,.2f} MB ÷ ({bw} × {attn_eff:.2f}) = {_ms(t['kv_s'])}; "
           + (f"{stages:g} stage slots × " if stages > 1 else "")
           + f"(max({_ms(t['linear_s'])}, {_ms(t['weights_s'])}) + max({_ms(t['attention_s'])}, {_ms(t['kv_s'])})) "
           f"= {_ms(t['kernels_s'])}; all-reduce {_ms(t['allreduce_s'])}"
           + (f" (NCCL over PCIe: {e.pcie_allreduce_latency_s * 1e6:,.0f} µs each, {e.pcie_link_efficiency:.2f} of "
              f"{c.link_bytes_per_s / 1e9:,.0f} GB/s)" if c.pcie_link and np.any(c.tp > 1) else "")
           + (" (three a layer: q and k are normalised over all heads)" if c.qk_norm_allreduce and np.any(c.tp > 1)
              else "")
           + f"; overhead (per step, sequence and layer) {_ms(t['overhead_s'])}"
           + (f"; {c.pp - 1} hand-offs {_ms(t['handoff_s'])} (bubble {t['bubble_fraction']:.0%})" if c.pp > 1 else "")
           + f" → step = TPOT = {_ms(t['step_s'])} ({'memory' if t['memory_bound'] else 'compute'}-bound overall)")
    return {"formula": formula, "substituted": sub, "sources": _pm_sources(r) + [
        "rule: docs/performance-model.md §3.1 (decode step)"]}


def _significant(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, thousands separated: a divisor shown to 2 decimals (0.31 for 0.3066)
    would put the quotient printed beside it 1 % off."""
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x)))) if x else 0
    return f"{x:,.{decimals}f}"


def math_crossover(r: Roofline, context_tokens: float, crossover: float | None) -> dict:
    """Where decode's compute time reaches its memory time, from the model's own terms
    (:func:`calculators.perf.roofline.decode_terms`): the matmuls' and the KV reads' seconds per sequence (both grow
    in proportion to the batch) and the weights' read at the crossover batch ``B*``, so ``B* = t_W ÷ (t_F − t_KV)``
    holds as printed (docs/performance-model.md §5)."""
    c, e = r.coefficients, r.efficiencies
    ctx = np.float64(context_tokens)
    one = {k: _f(v) for k, v in decode_terms(c, e, 1.0, ctx, 1).items()}
    b_star = math.inf if crossover is None else float(crossover)
    found = math.isfinite(b_star)
    t_w = _f(decode_terms(c, e, b_star, ctx, 1)["weights_s"]) if found else math.nan  # only a crossover has one
    t_f, t_kv = one["linear_s"] + one["attention_s"], one["kv_s"]
    w = min(context_tokens, c.window_tokens)
    f_attn = _f(c.attn_full_flop_per_token_ctx * context_tokens + c.attn_window_flop_per_token_ctx * w)
    kv_seq = _f(c.kv_full_bytes_per_token * context_tokens + c.kv_window_bytes_per_token * w)
    experts = _f(c.expert_flop_per_token)
    formula = ("B* × t_F = t_W + B* × t_KV per decode step, t_F = (linear FLOP + expert FLOP × (1 ÷ s_moe − 1)) ÷ "
               "(peak × eff_c × dtype share) + attention FLOP ÷ (16-bit peak × eff_c × attention share), "
               "t_KV = KV_seq ÷ (bandwidth × attention efficiency(C)) per sequence, t_W = the weights' read at B*  ⇒  "
               "B* = t_W ÷ (t_F − t_KV), no crossover when t_F ≤ t_KV")
    sub = (f"t_F = ({_f(c.linear_flop_per_token) / 1e9:,.3f} GFLOP"
           + (f" + {experts / 1e9:,.3f} GFLOP × (1 ÷ {e.moe_compute_share:.2f} − 1)" if experts else "")
           + f") ÷ ({c.peak_flop_per_s / 1e12:,.1f} T × {e.compute:.2f} × {e.compute_dtype_share:.2f}) + "
           f"{f_attn / 1e9:,.3f} GFLOP ÷ ({c.attn_peak_flop_per_s / 1e12:,.1f} T × {e.compute:.2f} × "
           f"{e.attention_compute_share:.2f}) = {t_f * 1e6:,.2f} µs; "
           f"t_KV = {kv_seq / 1e6:,.2f} MB ÷ ({c.bandwidth_bytes_per_s / 1e9:,.0f} G × "
           f"{_f(attention_read_efficiency(c, e, context_tokens)):.2f}) = {t_kv * 1e6:,.2f} µs at C = "
           f"{context_tokens:,.0f}; ")
    if not found:
        sub += (f"t_F − t_KV = {(t_f - t_kv) * 1e6:,.2f} µs ≤ 0: KV-cache reads keep decode memory-bound at every "
                "batch size at this context")
    else:
        sub += (f"t_W = {_ms(t_w)}" + (" (the experts B* touches: found by bisection)" if c.expert_hit_fraction else "")
                + f"; B* = {t_w * 1e3:,.3f} ms ÷ {_significant((t_f - t_kv) * 1e6)} µs = {b_star:,.0f} sequences")
    return {"formula": formula, "substituted": sub, "sources": _pm_sources(r) + [
        "rule: docs/performance-model.md §5 (crossover batch size)"]}


def math_ridge(r: Roofline) -> dict:
    """Ridge point = peak FLOP/s ÷ bandwidth."""
    g = r.gpu
    peak, bw = g.peak_flop_per_s[r.dtype_used], g.memory_bandwidth_bytes_per_s
    return {"formula": "ridge = peak FLOP/s ÷ memory bandwidth [FLOP/byte]",
            "substituted": f"{peak / 1e12:,.1f} TFLOP/s ÷ {bw / 1e12:,.3f} TB/s = {peak / bw:,.1f} FLOP/byte",
            "sources": _pm_sources(r)[:1] + ["Williams, Waterman & Patterson, 'Roofline', CACM 52(4), 2009"]}


def math_knee(knee_doc: dict) -> dict:
    """The knee rule with each doubling's gain."""
    th = knee_doc.get("knee_threshold", KNEE_THRESHOLD)
    curve = knee_doc.get("curve", [])
    b = np.array([p["batch_size"] for p in curve], dtype=np.float64)
    t = np.array([p["output_tokens_per_s"] for p in curve], dtype=np.float64)
    gains = []
    if b.size >= 2:
        doubled = np.interp(np.log2(b * 2), np.log2(b), t)
        gains = [f"{bb:,.0f}→{2 * bb:,.0f}: {(d / tt - 1):+.1%}" for bb, tt, d in zip(b, t, doubled, strict=True)
                 if 2 * bb <= b.max()]
    sub = "; ".join(gains) or "fewer than two batch sizes fit"
    sub += (f" → knee = {knee_doc['knee_batch_size']:,.0f} (first gain below {th:.0%}; the KV limit "
            f"{knee_doc['kv_batch_limit']:,} when every doubling still pays)" if knee_doc.get("knee_batch_size")
            else "")
    return {"formula": f"knee = smallest B on the 1, 2, 4, … grid with T(2B) ÷ T(B) − 1 < {th:.0%} "
                       "(T: output tokens/s per replica; T(2B) interpolated in log B at the KV limit)",
            "substituted": sub,
            "sources": ["knee rule, docs/performance-model.md §7 (stop where doubling the batch gains < 15 %)",
                        "the same as `llmcap knee --json`"]}


def math_throughput(perf_doc: dict) -> dict:
    """Output tokens/s of a replica at a load (continuous batching, steady state: Little's law)."""
    n, o, i = perf_doc["concurrency"], perf_doc["output_len"], perf_doc["input_len"]
    e2e, ttft, tpot = perf_doc["e2e_latency_s"], perf_doc["ttft_s"], perf_doc["tpot_s"]
    parts = [f"{_ms(perf_doc['request_overhead_s'])} outside the engine's steps"]
    if perf_doc.get("queue_wait_s"):
        parts.append(f"{_ms(perf_doc['queue_wait_s'])} waiting for one of {perf_doc['batch_size']:,} slots")
    return {"formula": "tokens/s = N × O ÷ end-to-end (N requests in flight, Little's law); per GPU = ÷ (TP × PP); "
                       "end-to-end = TTFT + (O − 1) × TPOT",
            "substituted": f"{n:,.4g} × {o:,} ÷ {_ms(e2e)} = {perf_doc['output_tokens_per_s']:,.0f} tokens/s; per GPU "
                           f"{perf_doc['output_tokens_per_s_per_gpu']:,.0f}; end-to-end = {_ms(ttft)} + ({o:,} − 1) × "
                           f"{_ms(tpot)} = {_ms(e2e)}, TTFT holding {' and '.join(parts)} (I = {i:,})",
            "sources": ["docs/performance-model.md §2 (what a benchmark at concurrency N measures)"]}


def math_budget(view: dict, *, batch: int, output_len: float, replicas: int, target_s: float) -> dict:
    """The latency budget at a batch: queue + prefill + decode + network against the target."""
    b = view["budget"]
    return {"formula": "end-to-end = queue (p99) + prefill + (O − 1) × p99 TPOT + network; margin = target − "
                       "total; max_wait = target − (prefill + decode) − network "
                       "(docs/performance-model.md §8: budget − service time)",
            "substituted": f"{_ms(b['queue_s'])} + {_ms(b['prefill_s'])} + ({output_len:g} − 1) × "
                           f"{_ms(view['tpot_p99_s'])} + {_ms(b['network_s'])} = {_ms(b['total_s'])}; margin = "
                           f"{_ms(target_s)} − {_ms(b['total_s'])} = {_ms(b['margin_s'])}; max_wait = "
                           f"{_ms(target_s)} − {_ms(b['prefill_s'] + b['decode_s'])} − {_ms(b['network_s'])} "
                           f"= {_ms(b['max_wait_s'])} (batch {batch:,}, {replicas:,} replica(s))",
            "sources": ["docs/performance-model.md §8 (latency budget)",
                        "docs/performance-model.md §2 (serving metrics)",
                        "e.g. a p95 budget of 300 ms and a service time of 200 ms leave max_wait ≤ 100 ms"]}


def math_queue(view: dict, *, batch: int, replicas: int, request_rate_per_s: float) -> dict:
    """The queue part of TTFT: M/M/c with c = batch slots and service = the time a request holds a slot at that
    batch (end-to-end less the latency outside the engine's steps), then M/D/1 for the steps' token budget."""
    m = view["m"]
    r_over = m["e2e_latency_s"] - m["slot_time_s"]
    cv = view["slot_cv"]
    return {"formula": "λ = rate ÷ replicas; ρ = λ × S ÷ c; W_q(p99) = (1 + cv²)/2 × ln(C(c, λS) ÷ 0.01) ÷ "
                       f"(c ÷ S − λ) when C > 0.01, else 0 (Erlang C with the Allen–Cunneen factor (1 + cv²)/2 = "
                       f"{(1 + cv * cv) / 2:g} for cv = {cv:g}{': fixed lengths' if cv == 0 else ''})",
            "substituted": f"λ = {request_rate_per_s:g} ÷ {replicas:,} = {view['rate_per_replica']:,.3f} req/s; "
                           f"S = {_ms(m['e2e_latency_s'])} − {_ms(r_over)} outside the engine's steps = "
                           f"{_ms(m['slot_time_s'])}; c = {batch:,}; ρ = {view['utilisation']:.3f}; "
                           f"P(wait) = {view['prob_wait']:.4f}; mean wait {_ms(view['wait_mean_s'])}, "
                           f"p99 wait {_ms(view['wait_p99_s'])}; then the token budget (M/D/1): a prompt's share "
                           f"of a full step S_p = {_ms(view['prompt_service_s'])}, "
                           f"ρ_p = {view['prompt_utilisation']:.3f}, "
                           f"p99 wait S_p ÷ (2(1 − ρ_p)) × ln(ρ_p ÷ 0.01) = {_ms(view['prompt_wait_p99_s'])} (0 when "
                           f"ρ_p ≤ 0.01); queue = {_ms(view['wait_p99_s'])} + {_ms(view['prompt_wait_p99_s'])}",
            "sources": ["docs/queueing.md §4 (Kleinrock 1975 §3.5; Gross & Harris 1998 "
                        "§2.3, §7.2; the token budget's queue: Pollaczek–Khinchine, Kingman 1962)"]}
