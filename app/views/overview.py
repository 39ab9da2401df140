"""Overview: does it fit, the per-GPU memory, KV tokens, concurrency, max_num_seqs and the serve line."""
from __future__ import annotations

import math

import streamlit as st

from app.ui import state, widgets
from app.ui.glossary import GLOSSARY
from calculators.errors import InvalidInputError
from calculators.report import explain_capacity as explain
from calculators.units import GiB
from calculators.vllm.advice import vllm_serve_command
from calculators.vllm.concurrency import concurrency


def _summary(ctx):
    """The performance summary (knee, recommendation, figures at it) and the model's source, or a message."""
    from app.ui import perf, perf_state
    if not ctx.doc["fits"]:
        return None, "Throughput, latency and a max_num_seqs recommendation need a configuration that fits."
    r, source = perf.performance_model(ctx)
    if r is None:
        return None, source or "No performance model for this GPU."
    summ = perf_state.summary(ctx, r)
    if not isinstance(summ, dict) or summ["perf"] is None:
        return None, str(summ) if not isinstance(summ, dict) else summ["knee"]["message"]
    return {**summ, "source": source, "shipped": r.efficiencies.is_shipped()}, None


def _recommendation(ctx, summ: dict | None, note: str | None) -> None:
    """The one max_num_seqs to set, its reason, and the other figures as what they are."""
    st.subheader("max_num_seqs to set")
    advice = ctx.doc.get("max_num_seqs_advice")
    if summ is None:
        st.info(note)
        return
    rec, knee = summ["recommendation"], summ["knee"]
    c = st.columns([1, 3])
    c[0].metric("Recommended max_num_seqs", f"{rec['max_num_seqs']:,}", help=GLOSSARY["max_num_seqs"])
    c[1].markdown(f"**Why:** {rec['reason']}.")
    parts, pools = [], summ["pools"]
    if advice:
        whose = f"each of the {pools} data-parallel ranks' KV cache" if pools > 1 else "the KV cache"
        parts.append(f"{whose} holds {advice['concurrency_at_mean']:,} sequences of the mean length "
                     f"({advice['mean_len']:,.0f} tokens)"
                     + (f" and {advice['concurrency_at_p95']:,} at p95 ({advice['p95_len']:,.0f})"
                        if advice["p95_len"] else ""))
    if knee["slo_batch_size"] is not None:
        parts.append(f"up to {int(knee['slo_batch_size']):,} in flight meet the p99 latency targets")
    if knee["knee_batch_size"]:
        parts.append(f"throughput flattens above {int(knee['knee_batch_size']):,} (the knee)")
    ranks = (f" max_num_seqs is each rank's: the {pools} ranks run {pools} × it in flight ({summ['batch']:,})."
             if pools > 1 else "")
    st.caption("For reference: " + "; ".join(parts) + ". The serve line below uses the recommendation." + ranks)


def _throughput_latency(summ: dict, gpu) -> None:
    """Throughput & latency with the recommended number of requests in flight (``llmcap perf``)."""
    st.subheader("Throughput & latency")
    p = summ["perf"]
    c = st.columns(5)
    c[0].metric("Tokens/s per replica", f"{p['output_tokens_per_s']:,.0f}", help="output tokens per second")
    c[1].metric("Tokens/s per GPU", f"{p['output_tokens_per_s_per_gpu']:,.0f}", help="output tokens per second")
    c[2].metric("TTFT (no queue) [ms]", f"{p['ttft_s'] * 1e3:,.1f}", help=GLOSSARY["ttft"])
    c[3].metric("TPOT [ms]", f"{p['tpot_s'] * 1e3:,.2f}", help=GLOSSARY["tpot"])
    c[4].metric("End-to-end [s]", f"{p['e2e_latency_s']:,.2f}", help=GLOSSARY["e2e"])
    widgets.band_caption(p["tpot_s"], p["ttft_s"], p["output_tokens_per_s"], gpu, summ["shipped"])
    widgets.published_runs_note(p["published_runs"] or p["family_runs"])
    used = ("the recommended max_num_seqs, fully used" if summ["pools"] == 1 else
            f"the recommended max_num_seqs on each of the {summ['pools']} data-parallel ranks")
    st.caption(f"With {p['batch_size']:,} requests in flight ({used}), "
               f"{p['input_len']:,} tokens in / {p['output_len']:,} out, {p['bound']}-bound decode · "
               f"{summ['source']}. Details: Roofline & batch size, Latency budget.")


def _costs(ctx) -> None:
    """What this layout costs at the sidebar's traffic: replicas, GPUs, the same six cost figures as the
    Fleet planner and the quote."""
    from app.ui import fleet_charts as fc
    from calculators.planning.costs import COST_LABELS
    from calculators.planning.fleet import slo_bound_note, unbounded_tpot_note
    st.subheader("Cost at your traffic")
    if not ctx.scenario.timed(ctx.model):
        from app.ui.perf import DATA_PARALLEL_NOTE
        st.info(DATA_PARALLEL_NOTE)
        return
    try:
        plan = fc.planned_scenario_layout(ctx)
    except InvalidInputError as exc:
        st.info(f"No cost for this workload — {exc}")
        return
    scn = ctx.scenario
    if not plan.fits or plan.usd_per_hour is None:
        st.info(f"No cost: {plan.message}" if not plan.fits else f"{plan.gpu} has no on-demand price in the catalog; "
                "set one on the Fleet planner.")
        return
    c = st.columns(4)
    per_replica = plan.tensor_parallel_size * plan.pipeline_parallel_size
    c[0].metric("GPUs", f"{plan.total_gpus:,}", help=f"{plan.replicas:,} replica(s) × {per_replica} GPUs")
    for col, key, digits in zip(c[1:], ("usd_per_hour", "usd_per_month", "usd_per_million_output_tokens"), (2, 0, 3),
                                strict=True):
        col.metric(COST_LABELS[key], fc.money(getattr(plan, key), digits))
    verdict = "meets" if plan.meets_slo else "does not meet"
    p99s = (f": TTFT {plan.ttft_p99_s * 1e3:,.0f} ms, TPOT {plan.tpot_p99_s * 1e3:,.1f} ms"
            if plan.ttft_p99_s is not None and plan.tpot_p99_s is not None and math.isfinite(plan.ttft_p99_s) else "")
    st.caption(f"{plan.replicas:,} replica(s) of TP {plan.tensor_parallel_size} × PP {plan.pipeline_parallel_size} "
               f"on {plan.gpu} at {scn.request_rate_per_s:g} requests/s ({verdict} the p99 targets{p99s}), "
               f"{fc.money(plan.usd_per_gpu_hour)} per GPU-hour ({plan.price_source}); "
               f"{COST_LABELS['usd_per_million_tokens']} {fc.money(plan.usd_per_million_tokens, 3)}. "
               "Other GPUs and layouts: Fleet planner.")
    if note := unbounded_tpot_note(scn.workload(), plan):
        st.caption(f"{note} Set a p99 TPOT target (sidebar: Workload & SLO) to bound it.")
    if note := slo_bound_note(scn.workload(), plan):
        st.caption(note)


def render() -> None:
    """Draw the page."""
    ctx = state.computed()
    st.title("Overview")
    if not widgets.show_error(ctx):
        doc, model, s = ctx.doc, ctx.model, ctx.doc["settings"]
        st.caption(f"{doc['model']} on {doc['gpu']} · TP {s['tensor_parallel_size']} × PP "
                   f"{s['pipeline_parallel_size']} · vLLM {s['vllm_version']} ({s['engine']})")
        (st.success if doc["fits"] else st.error)(doc["message"])
        advice = doc.get("max_num_seqs_advice")
        typical = advice["mean_len"] if advice else None
        c = st.columns(3)
        c[0].metric("GPU KV cache size [tokens]", f"{doc['kv_cache_tokens']:,}", help=GLOSSARY["kv_tokens"])
        c[1].metric(f"Max concurrency at max_model_len {s['max_model_len']:,}", f"{doc['max_concurrency']:.2f}x",
                    help=GLOSSARY["max_concurrency"])
        c[2].metric("Available KV cache per GPU [GiB]", f"{doc['available_kv_cache_bytes'] / GiB:.2f}",
                    help=GLOSSARY["available_kv"])
        c = st.columns(3)
        c[0].metric("KV cache per token per GPU [bytes]", f"{doc['kv_cache_bytes_per_token']:,}",
                    help=GLOSSARY["kv_per_token"])
        if typical:
            c[1].metric(f"Concurrency at {typical:,.0f} tokens",
                        f"{float(concurrency(model, ctx.result, typical)):,.2f}x",
                        help="sequences of the workload's mean length (prompt + output) the KV cache holds at once")
        widgets.show_math("GPU KV cache size and blocks", explain.math_blocks_and_tokens(doc))
        widgets.show_math("Max concurrency", explain.math_concurrency(doc))
        widgets.show_math("Available KV cache", explain.math_available_kv(doc, ctx.gpu))
        widgets.show_math("KV cache per token", explain.math_kv_bytes_per_token(model, doc))
        widgets.show_math("What the KV cache holds at the mean length", explain.math_advice(doc))

        summ, note = _summary(ctx)
        _recommendation(ctx, summ, note)
        if summ is not None:
            _throughput_latency(summ, ctx.gpu)

        _costs(ctx)

        st.subheader("Per-GPU memory (binding stage)")
        widgets.memory_markdown(explain.memory_rows(doc))
        widgets.show_math("Budget", explain.math_budget(doc))

        st.subheader("vllm serve")
        serve = doc["vllm_serve"] if summ is None else vllm_serve_command(
            state.served_name(ctx.scenario, model), ctx.result, summ["recommendation"]["max_num_seqs"],
            data_parallel_size=ctx.scenario.data_parallel_size)
        st.text(serve)  # not st.code: its highlighter chunk holds the first paint ~1 s (cold start)
        st.subheader("What vLLM prints at start-up (predicted)")
        st.text("\n".join(doc["vllm_lines"]))
        for note in doc["notes"]:
            st.info(note)
        widgets.downloads(doc, key="overview")


render()
