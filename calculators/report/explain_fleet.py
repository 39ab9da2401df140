""""Show the math" for the fleet planner: the chain rate → batch → replica throughput → replicas → GPUs →
$/hour → $/1M tokens, with the plan's numbers substituted and the source of every constant.

Each step is a dict ``{"title", "formula", "substituted", "sources"}`` (the shape of
:mod:`calculators.report.explain_capacity`), so the app's ``show_math`` widget and the quote render the same text.
"""
from __future__ import annotations

import math

from calculators.perf.roofline import Efficiencies
from calculators.planning.costs import COST_LABELS, HOURS_PER_MONTH, HOURS_PER_YEAR, SECONDS_PER_HOUR
from calculators.planning.fleet import LayoutPlan, Workload
from calculators.report.explain_perf import compute_efficiency_text
from calculators.specs.schema import GPUSpec

#: The product's method pages, cited by their titles (what a reader of a quote can look up).
PERF_PAGE = "method page “The performance model”"
QUEUE_PAGE = "method page “Queueing, fleet sizing, pools, disaggregation and batching”"
MEMORY_PAGE = "method page “How vLLM sizes the KV cache at start-up”"
VLLM_RELEASE_URL = "https://github.com/vllm-project/vllm/releases/tag/v{version}"


def serve_line(plan: LayoutPlan, model_id: str, served_name: str | None = None) -> str:
    """The plan's ``vllm serve`` command, with the name the user gave the model (an alias) if any."""
    if not served_name or served_name == model_id:
        return plan.vllm_serve
    return plan.vllm_serve.replace(f"vllm serve {model_id}", f"vllm serve {served_name}", 1)


def math_chain(plan: LayoutPlan, w: Workload, *, utilisation_cap: float = 0.8, n_plus_one: bool = False) -> list[dict]:
    """The sizing chain of one fitting plan, step by step [units in each formula]."""
    lam, i, o, b = w.request_rate_per_s, w.input_len, w.output_len, plan.batch_size
    r = plan.replica_requests_per_s or math.nan
    e2e = plan.e2e_latency_s or math.nan
    g = plan.tensor_parallel_size * plan.pipeline_parallel_size
    tpot_ms = (plan.tpot_s or math.nan) * 1e3
    base = math.ceil(lam / (utilisation_cap * r))
    steps = [
        {"title": "Request rate", "formula": "λ [requests/s] (the load to serve)",
         "substituted": f"λ = {lam:g} requests/s of {i:g} input + {o:g} output tokens",
         "sources": ["your input (sidebar: Workload & SLO)"]},
        {"title": "Batch", "formula": "B = the batch (max_num_seqs) that needs the fewest replicas, ≤ the KV-cache "
                                      "limit",
         "substituted": f"B = {b} (KV limit {plan.kv_batch_limit:,} requests of {w.longest_len:,} tokens"
                        + (f", {plan.tensor_parallel_size} pools of one GPU each: attention data-parallel"
                           if plan.dp_attention else "") + "); "
                        f"TPOT of a full batch = {tpot_ms:.1f} ms (decode steps with the arriving prompts mixed in)",
         "sources": [f"KV limit: vLLM start-up accounting ({MEMORY_PAGE})",
                     f"step times: roofline ({PERF_PAGE} §3)"]},
        {"title": "Replica throughput",
         "formula": "end-to-end = TTFT + (O − 1) × TPOT; r = B / end-to-end [requests/s] (Little's law)",
         "substituted": f"end-to-end = {e2e:.3f} s; r = {b} / {e2e:.3f} s = {r:.3f} requests/s "
                        f"= {plan.output_tokens_per_s or 0:,.0f} output tokens/s per replica",
         "sources": [f"continuous batching in steady state ({PERF_PAGE} §2)"]},
        {"title": "Replicas",
         "formula": "replicas = max(⌈λ / (cap × r)⌉, fewest meeting p99 TPOT = decode step + the p99 count of "
                    "other prompts mixed into a request's steps (Poisson) × each one's step time ÷ O, fewest meeting "
                    "p99 TTFT = TTFT + p99 wait for a slot (M/G/c, c = B, Allen–Cunneen) + p99 wait for the token "
                    "budget (M/G/1))"
                    + (" + 1 (N+1)" if n_plus_one else ""),
         "substituted": f"⌈{lam:g} / ({utilisation_cap:g} × {r:.3f})⌉ = {base}; with the targets → "
                        f"{plan.replicas} (p99 TPOT {(plan.tpot_p99_s or 0) * 1e3:.1f} ms"
                        + (f" ≤ {w.tpot_p99_s * 1e3:g} ms" if w.tpot_p99_s else "")
                        + f" at {lam / plan.replicas:.3g} requests/s per replica; p99 TTFT "
                        f"{(plan.ttft_p99_s or 0) * 1e3:.0f} ms = TTFT {(plan.ttft_s or 0) * 1e3:.0f} ms + p99 waits "
                        f"{((plan.ttft_p99_s or 0) - (plan.ttft_s or 0)) * 1e3:.0f} ms, "
                        f"utilisation {(plan.utilisation or 0):.0%})",
         "sources": [f"utilisation cap {utilisation_cap:g} (your headroom input)",
                     f"queueing: {QUEUE_PAGE} §4–5 (Gross & Harris 1998 §7.2; Kingman 1962; Cornish & Fisher "
                     "1938)"]},
        {"title": "GPUs", "formula": "GPUs = replicas × tensor_parallel_size × pipeline_parallel_size",
         "substituted": f"{plan.replicas} × {plan.tensor_parallel_size} × {plan.pipeline_parallel_size} = "
                        f"{plan.total_gpus} GPUs ({g} per replica, {plan.nodes} node(s))",
         "sources": [f"layout: TP within a node, PP across nodes ({QUEUE_PAGE} §5)"]},
    ]
    if plan.usd_per_hour is not None:
        p, share = plan.usd_per_gpu_hour, plan.prefill_share or 0.0
        steps += [
            {"title": "$/hour, $/month, $/year", "formula": "$/hour = GPUs × $/GPU-hour; $/month = $/hour × 730 h; "
                                                          "$/year = $/hour × 8,760 h",
             "substituted": f"{plan.total_gpus} × ${p:.2f} = ${plan.usd_per_hour:,.2f}/hour; "
                            f"× {HOURS_PER_MONTH:g} h = ${plan.usd_per_month:,.0f}/month; "
                            f"× {HOURS_PER_YEAR:,.0f} h = ${plan.usd_per_year:,.0f}/year",
             "sources": [f"$/GPU-hour: {plan.price_source}"]},
            {"title": "$/1M input, output and all tokens",
             "formula": "$/1M output tokens = $/hour / 3600 × (1 − prefill share) / (λ × O) × 10⁶; "
                        "$/1M input tokens = $/hour / 3600 × prefill share / (λ × I) × 10⁶; "
                        "$/1M tokens (input + output) = $/hour / 3600 / (λ × (I + O)) × 10⁶",
             "substituted": f"${plan.usd_per_hour:,.2f} / {SECONDS_PER_HOUR:g} × {1 - share:.3f} / ({lam:g} × {o:g}) "
                            f"× 10⁶ = ${plan.usd_per_million_output_tokens:.3f} per 1M output tokens; × {share:.3f} / "
                            f"({lam:g} × {i:g}) × 10⁶ = ${plan.usd_per_million_input_tokens:.3f} per 1M input tokens; "
                            f"/ ({lam:g} × {i + o:g}) × 10⁶ = ${plan.usd_per_million_tokens:.3f} per 1M tokens "
                            "(input + output)",
             "sources": [f"cost split by the prefill and decode shares of a request cycle ({QUEUE_PAGE} §5)"]},
        ]
    return steps


def efficiency_sources(eff: Efficiencies, source: str, gpu: GPUSpec | None = None,
                       compute_dtype: str = "bf16") -> list[str]:
    """Where the performance model's constants come from: for the shipped model, the coefficients fitted on
    public measurements for ``gpu``'s family (vLLM V1) and matmuls in ``compute_dtype``, with the fit's
    date and method pages (§4, §11); for a calibration, the caller's ``source``."""
    if eff.is_default() and gpu is not None:
        from calculators.perf.coefficients import load_fit
        fit, used = load_fit(), Efficiencies.fitted(gpu, compute_dtype=compute_dtype)
        return [f"performance model: {source}",
                f"{gpu.id} (vLLM V1, {compute_dtype} matmuls): "
                f"compute efficiency {compute_efficiency_text(used, compute_dtype)}, "
                f"memory efficiency {used.memory:.2f}, "
                f"step overhead {float(used.step_overhead_s) * 1e3:.2f} ms, "
                f"fitted on {fitted_runs(gpu)} of the {fit.corpus} "
                f"({fit.fitted:%Y-%m-%d}; {PERF_PAGE} §4, accuracy on sources left out of the fit in §11)"]
    return [
        f"compute efficiency {eff.compute:g} ({source})", f"memory efficiency {eff.memory:g} ({source})",
        f"step overhead {float(eff.step_overhead_s) * 1e3:g} ms ({source}; {PERF_PAGE} §4)",
        f"performance model: {source}",
    ]


def fitted_runs(gpu: GPUSpec) -> str:
    """Whose public runs the shipped efficiencies of ``gpu`` were fitted on: ``"NVIDIA Hopper runs"``, or for a
    family with no run in the corpus ``"every GPU family's runs (none on NVIDIA Turing: the reference set)"``."""
    from calculators.perf.coefficients import fitted_on, gpu_family, load_fit
    family = fitted_on(load_fit().shipped, gpu.vendor, gpu.architecture)
    if family is not None:
        return f"{family} runs"
    return f"every GPU family's runs (none on {gpu_family(gpu.vendor, gpu.architecture)}: the reference set)"


def gpu_sources(gpu: GPUSpec) -> list[str]:
    """The datasheet and price sources of a catalog GPU."""
    out = [f"{gpu.id} datasheet ({gpu.as_of}): {gpu.source}"]
    out += [f"{gpu.id} price ${p.usd_per_gpu_hour:.2f}/GPU-hour, {p.provider} ({p.as_of}): {p.source}"
            for p in gpu.prices]
    return out


def vllm_source(version: str) -> str:
    """The vLLM release whose start-up accounting the plan follows, as its public release page."""
    return f"vLLM {version} release: {VLLM_RELEASE_URL.format(version=version)}"


def cost_rows(plan: LayoutPlan) -> list[tuple[str, float | None]]:
    """The plan's six cost figures under their labels (:data:`calculators.planning.costs.COST_LABELS`) [USD]."""
    return [(label, getattr(plan, key)) for key, label in COST_LABELS.items()]


def math_disagg(d) -> list[dict]:
    """The disaggregation arithmetic of a :class:`calculators.planning.disagg.DisaggPlan`."""
    if not d.fits:
        return []
    p, q = d.prefill, d.decode
    return [
        {"title": "KV bytes moved", "formula": "input_len × KV bytes per token of the whole model",
         "substituted": f"= {d.kv_bytes_per_request:,.0f} B", "sources": [f"{MEMORY_PAGE} §3.1 (TP 1)"]},
        {"title": "Transfer time", "formula": "KV bytes / link bandwidth per direction",
         "substituted": f"{d.kv_bytes_per_request:,.0f} B / {d.link_bytes_per_s / 1e9:g} GB/s = "
                        f"{d.transfer_s * 1e3:.3f} ms", "sources": [d.link]},
        {"title": "Prefill:decode GPU ratio", "formula": "prefill GPU-s per request / decode GPU-s per request",
         "substituted": f"{p.gpu_seconds_per_request:.4f} / {q.gpu_seconds_per_request:.4f} = "
                        f"{d.prefill_decode_gpu_ratio:.2f}",
         "sources": [f"prefill at batch {p.batch_size} (TP{p.tensor_parallel_size}), decode at batch "
                     f"{q.batch_size} (TP{q.tensor_parallel_size})"]},
        {"title": "Pools", "formula": "instances = fewest meeting the utilisation cap and the SLO",
         "substituted": f"{p.instances} prefill ({p.gpus} GPUs) + {q.instances} decode ({q.gpus} GPUs) = "
                        f"{d.total_gpus} GPUs; p99 TTFT {d.ttft_p99_s * 1e3:.0f} ms incl. transfer; "
                        f"TPOT {d.tpot_s * 1e3:.1f} ms", "sources": [f"{QUEUE_PAGE} §7"]},
    ]
