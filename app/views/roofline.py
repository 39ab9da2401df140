"""Roofline & batch size: throughput and latency against batch size (knee, SLO batch, crossover, KV
limit), the roofline with decode and prefill operating points, and the math behind them."""
from __future__ import annotations

import json

import streamlit as st

from app.ui import perf_charts, perf_state, state, widgets
from app.ui.glossary import GLOSSARY
from calculators.errors import InvalidInputError
from calculators.report import explain_perf


def _show(ctx: state.Computed) -> None:
    r = perf_state.page_model(ctx, "Throughput")
    if r is None:
        return
    in_len, out_len = perf_state.lengths(ctx)
    top = min(ctx.result.settings.max_model_len, ctx.model.max_position_embeddings) - out_len
    if top < 1:
        st.error(f"output_len {out_len:,} leaves no room for a prompt within max_model_len "
                 f"{ctx.result.settings.max_model_len:,}")
        return
    options = explain_perf.context_options(in_len, top)
    perf_state.keep_default("roof_ctx", min(in_len, top))
    c1, c2 = st.columns([3, 1])
    prompt = c1.select_slider("Context length: prompt tokens per request", options, key="roof_ctx",
                              format_func=lambda v: f"{v:,}",
                              help=f"the scenario's input_len is {in_len:,}; decode runs at the mean context "
                                   f"prompt + output_len / 2 (output_len {out_len:,})")
    pct = c2.number_input("Knee threshold [%]", 1.0, 100.0, 15.0, 1.0, format="%g", key="knee_pct",
                          help="the knee is the first batch whose doubling gains less than this")
    summ = perf_state.summary(ctx, r, input_len=prompt, output_len=out_len, threshold=pct / 100)
    if isinstance(summ, InvalidInputError):
        st.error(f"Cannot compute this context — {summ}")
        return
    knee_doc, perf_doc = summ["knee"], summ["perf"]
    if perf_doc is None:
        st.error(knee_doc["message"])
        return
    (st.success if knee_doc["slo_batch_size"] is not None else st.warning)(
        f"Knee at batch {knee_doc['knee_batch_size']:,.0f}; {explain_perf.slo_text(knee_doc)}.")
    _metrics(r, summ)
    frame = explain_perf.curve_columns(knee_doc)
    ttft_t, tpot_t = perf_state.targets_s(ctx)
    st.subheader("Throughput and latency against batch size")
    st.plotly_chart(perf_charts.batch_curves(
        frame, marks={"knee": knee_doc["knee_batch_size"], "SLO batch": knee_doc["slo_batch_size"],
                      "crossover": summ["crossover"], "KV limit": float(summ["limit"])},
        ttft_target_ms=ttft_t and ttft_t * 1e3, tpot_target_ms=tpot_t and tpot_t * 1e3), key="batch_chart")
    st.caption(f"{perf_doc['crossover_note']}. TTFT here is prefill alone (no queue); see Latency budget.")
    widgets.show_math("Knee rule", explain_perf.math_knee(knee_doc))
    widgets.show_math(f"Decode step time at the knee (batch {knee_doc['knee_batch_size']:,.0f})",
                      explain_perf.math_step_time(r, knee_doc["knee_batch_size"], prompt + out_len / 2))
    widgets.show_math("Crossover batch", explain_perf.math_crossover(r, prompt + out_len / 2, summ["crossover"]))
    widgets.show_math(f"Throughput at batch {perf_doc['batch_size']:,}", explain_perf.math_throughput(perf_doc))

    st.subheader("Roofline (per GPU)")
    batches = [b for b in (*explain_perf.ROOFLINE_BATCHES, knee_doc["knee_batch_size"], summ["limit"])
               if b <= summ["limit"]]
    decode = explain_perf.decode_points(r, batches, prompt + out_len / 2)
    pre = explain_perf.prefill_point(r, prompt)
    ridge = perf_doc["ridge_point_flop_per_byte"]
    lo = min(decode["intensity_flop_per_byte"].min(), pre["intensity_flop_per_byte"], ridge) / 4
    hi = max(decode["intensity_flop_per_byte"].max(), pre["intensity_flop_per_byte"], ridge) * 4
    st.plotly_chart(perf_charts.roofline_chart(explain_perf.roofs(r, lo, hi), decode, pre, ridge=ridge,
                                               peak_tflops=r.gpu.peak_flop_per_s[r.dtype_used] / 1e12,
                                               context_tokens=prompt + out_len / 2), key="roofline_chart")
    widgets.show_math("Ridge point", explain_perf.math_ridge(r))

    st.subheader("Downloads")
    d = st.columns(3)
    d[0].download_button("Curve (CSV)", lambda: explain_perf.curve_csv(knee_doc), file_name="batch_curve.csv",
                         mime="text/csv", key="roof_csv", on_click="ignore")
    d[1].download_button(f"Perf JSON at batch {perf_doc['batch_size']:,} (llmcap perf --json)",
                         json.dumps(perf_doc, indent=2) + "\n", file_name="perf.json", mime="application/json",
                         key="roof_perf_json", on_click="ignore")
    d[2].download_button("Knee JSON (llmcap knee --json)", json.dumps(knee_doc, indent=2) + "\n",
                         file_name="knee.json", mime="application/json", key="roof_knee_json", on_click="ignore")


def _metrics(r, summ: dict) -> None:
    knee_doc, perf_doc = summ["knee"], summ["perf"]
    knee = knee_doc["knee_batch_size"]
    at_knee = next(p for p in knee_doc["curve"] if p["batch_size"] == knee)
    slo, cross = knee_doc["slo_batch_size"], summ["crossover"]
    c = st.columns(4)
    c[0].metric("Knee batch [sequences]", f"{knee:,.0f}", help=GLOSSARY["knee"])
    c[1].metric("SLO batch [sequences]", "—" if slo is None else f"{slo:,.0f}",
                help=f"{GLOSSARY['slo_batch']}. {explain_perf.slo_text(knee_doc)}")
    c[2].metric("Crossover batch [sequences]", "—" if cross is None else f"{cross:,.0f}",
                help=f"{GLOSSARY['crossover']}. {perf_doc['crossover_note']}")
    c[3].metric("Ridge point [FLOP/byte]", f"{perf_doc['ridge_point_flop_per_byte']:,.0f}",
                help=f"{GLOSSARY['ridge']} ({r.gpu.id}, {r.dtype_used})")
    c = st.columns(4)
    c[0].metric("KV-capacity limit [sequences]", f"{summ['limit']:,}",
                help=GLOSSARY["kv_limit"])
    c[1].metric("Output tokens/s per replica at the knee", f"{at_knee['output_tokens_per_s']:,.0f}",
                help=GLOSSARY["knee"])
    c[2].metric("Output tokens/s per GPU at the knee", f"{at_knee['output_tokens_per_s_per_gpu']:,.0f}",
                help=GLOSSARY["knee"])
    c[3].metric("TPOT at the knee [ms]", f"{at_knee['tpot_s'] * 1e3:,.2f}", help=GLOSSARY["tpot"])
    widgets.band_caption(at_knee["tpot_s"], tokens_per_s=at_knee["output_tokens_per_s"], gpu=r.gpu,
                         shipped=r.efficiencies.is_shipped())
    if cross is None:
        st.caption(f"No crossover batch: {perf_doc['crossover_note']}")


def render() -> None:
    """Draw the page."""
    ctx = state.computed()
    st.title("Roofline & batch size")
    if not widgets.show_error(ctx):
        _show(ctx)


render()
