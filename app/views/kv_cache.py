"""KV cache & concurrency: memory stack, KV bytes per token, concurrency curve, printed lines, log check."""
from __future__ import annotations

import streamlit as st

from app.ui import charts, state, widgets
from app.ui.glossary import GLOSSARY
from calculators.errors import InvalidInputError
from calculators.report import explain_capacity as explain
from calculators.scenario import VLLM_RELEASES
from calculators.units import GiB
from calculators.vllm.concurrency import concurrency_curve


def render() -> None:
    """Draw the page."""
    ctx = state.computed()
    st.title("KV cache & concurrency")
    if not widgets.show_error(ctx):
        doc, model, s = ctx.doc, ctx.model, ctx.doc["settings"]
        st.subheader("Per-GPU memory")
        st.plotly_chart(charts.memory_bar(explain.memory_breakdown(doc), doc["gpu_memory_bytes"] / GiB,
                                          doc["budget_bytes"] / GiB), key="memory_chart")
        st.caption("Hatched parts are estimates of what vLLM measures at start-up; the whiskers show their "
                   "range, and the KV cache's whisker the range that follows. Weights are computed.")
        for note in doc["notes"]:
            st.caption(f"Note: {note}")
        widgets.show_math("Available KV cache", explain.math_available_kv(doc, ctx.gpu))

        st.subheader("KV cache per token")
        st.metric("KV cache per token per GPU [bytes]", f"{doc['kv_cache_bytes_per_token']:,}",
                  help=GLOSSARY["kv_per_token"])
        kvm = explain.math_kv_bytes_per_token(model, doc)
        st.markdown(f"`{kvm['formula']}`  \n= `{kvm['substituted']}`")
        widgets.show_math("KV cache per token", kvm)

        st.subheader("Concurrency against context length")
        advice = doc.get("max_num_seqs_advice")
        st.plotly_chart(charts.concurrency_chart(
            concurrency_curve(model, ctx.result, typical_len=advice["mean_len"] if advice else None),
            s["max_model_len"], advice["mean_len"] if advice else None), key="concurrency_chart")
        st.metric(f"Max concurrency at max_model_len {s['max_model_len']:,}", f"{doc['max_concurrency']:.2f}x",
                  help=GLOSSARY["max_concurrency"])
        widgets.show_math("Max concurrency", explain.math_concurrency(doc))

        st.subheader("What vLLM prints, by version")
        versions = list(dict.fromkeys([*VLLM_RELEASES, s["vllm_version"]]))
        chosen = st.selectbox("vLLM version for the printed lines", versions, index=versions.index(s["vllm_version"]),
                              key="lines_vllm")
        other = doc if chosen == s["vllm_version"] else state.compute_detached(
            ctx.scenario.model_copy(update={"vllm_version": chosen}), model, ctx.gpu)
        if isinstance(other, InvalidInputError):
            st.warning(f"vLLM {chosen}: {other}")
        else:
            st.code("\n".join(other["vllm_lines"]), language=None, wrap_lines=True)
            widgets.show_math(f"GPU KV cache size in vLLM {chosen}", explain.math_blocks_and_tokens(other))

        st.subheader("Check against a real start-up log")
        text = st.text_area("Paste a vLLM start-up log", key="log_text", height=160,
                            placeholder="INFO ... Available KV cache memory: 32.06 GiB\n"
                                        "INFO ... GPU KV cache size: 420,208 tokens\n"
                                        "INFO ... Maximum concurrency for 131,072 tokens per request: 3.21x")
        if text.strip():
            from app.ui import logcheck
            logcheck.show(text, ctx)


render()
