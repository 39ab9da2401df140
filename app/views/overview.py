"""Overview: does it fit, the per-GPU memory, KV tokens, concurrency, max_num_seqs and the serve line."""
from __future__ import annotations

import streamlit as st

from app.ui import state, widgets
from calculators.report import explain_capacity as explain
from calculators.units import GiB
from calculators.vllm.concurrency import concurrency


def _throughput_latency(ctx) -> None:
    """Throughput & latency at the scenario's lengths and the suggested batch (``llmcap perf``)."""
    from app.ui import perf, perf_state
    st.subheader("Throughput & latency")
    if not ctx.doc["fits"]:
        st.info("Throughput and latency need a configuration that fits (see above).")
        return
    r, source = perf.performance_model(ctx)
    if r is None:
        return
    summ = perf_state.summary(ctx, r)
    if not isinstance(summ, dict) or summ["perf"] is None:
        st.info(str(summ) if not isinstance(summ, dict) else summ["knee"]["message"])
        return
    p, knee = summ["perf"], summ["knee"]
    c = st.columns(5)
    c[0].metric("Output tokens/s per replica", f"{p['output_tokens_per_s']:,.0f}")
    c[1].metric("Output tokens/s per GPU", f"{p['output_tokens_per_s_per_gpu']:,.0f}")
    c[2].metric("TTFT (no queue) [ms]", f"{p['ttft_s'] * 1e3:,.1f}")
    c[3].metric("TPOT [ms]", f"{p['tpot_s'] * 1e3:,.2f}")
    c[4].metric("End-to-end [s]", f"{p['e2e_latency_s']:,.2f}")
    which = "the knee" if p["batch_size"] == knee["knee_batch_size"] else "the largest batch meeting the SLO"
    st.caption(f"At batch {p['batch_size']:,} ({which}; KV limit {summ['limit']:,}), {p['input_len']:,} tokens in "
               f"/ {p['output_len']:,} out, {p['bound']}-bound "
               f"decode · {source}. {knee['message'][:1].upper() + knee['message'][1:]}. Details: Roofline & "
               "batch size, Latency budget.")


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
        c[0].metric("GPU KV cache size [tokens]", f"{doc['kv_cache_tokens']:,}")
        c[1].metric(f"Max concurrency at max_model_len {s['max_model_len']:,}", f"{doc['max_concurrency']:.2f}x")
        c[2].metric("Available KV cache per GPU [GiB]", f"{doc['available_kv_cache_bytes'] / GiB:.2f}")
        c = st.columns(3)
        c[0].metric("KV cache per token per GPU [bytes]", f"{doc['kv_cache_bytes_per_token']:,}")
        if typical:
            c[1].metric(f"Concurrency at typical length {typical:,.0f}",
                        f"{float(concurrency(model, ctx.result, typical)):,.2f}x")
            c[2].metric("Suggested max_num_seqs", f"{advice['recommended_max_num_seqs']:,}",
                        help=f"pool holds {advice['concurrency_at_mean']:,} sequences of mean length, "
                             f"{advice['concurrency_at_p95']:,} at p95")
        else:
            c[1].metric("Concurrency at typical length", "—", help="set mean_len in the sidebar")
            c[2].metric("Suggested max_num_seqs", "—", help="set mean_len in the sidebar (and fit the scenario)")
        widgets.show_math("GPU KV cache size and blocks", explain.math_blocks_and_tokens(doc))
        widgets.show_math("Max concurrency", explain.math_concurrency(doc))
        widgets.show_math("Available KV cache", explain.math_available_kv(doc, ctx.gpu))
        widgets.show_math("KV cache per token", explain.math_kv_bytes_per_token(model, doc))
        widgets.show_math("Suggested max_num_seqs and typical concurrency", explain.math_advice(doc))

        _throughput_latency(ctx)

        st.subheader("Per-GPU memory (binding stage)")
        widgets.memory_markdown(explain.memory_rows(doc))
        widgets.show_math("Budget", explain.math_budget(doc))

        st.subheader("vllm serve")
        st.text(doc["vllm_serve"])  # not st.code: its highlighter chunk holds the first paint ~1 s (cold start)
        st.subheader("What vLLM prints at start-up (predicted)")
        st.text("\n".join(doc["vllm_lines"]))
        for note in doc["notes"]:
            st.info(note)
        widgets.downloads(doc, key="overview")


render()
