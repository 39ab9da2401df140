"""Compare GPUs: the best layout per GPU type for the sidebar's workload and SLO, and the catalog facts behind it."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import fleet_charts as fc
from app.ui import state, widgets
from calculators.errors import InvalidInputError
from calculators.planning.costs import COST_LABELS
from calculators.planning.fleet import closest_plan, gpu_price, slo_text
from calculators.report.explain_fleet import fitted_runs
from calculators.report.perf import layout_family_runs, layout_published_runs, published_ratios_text


def _band_ms(low_s: float | None, high_s: float | None) -> str:
    """A plan's 80 % band as "31.2–47.9" [ms]; "—" where it has none (a calibration's plan)."""
    return "—" if low_s is None or high_s is None else f"{low_s * 1e3:,.1f}–{high_s * 1e3:,.1f}"


def render() -> None:
    """Draw the page."""
    ctx = state.computed()
    st.title("Compare GPUs")
    if widgets.show_error(ctx):
        st.stop()
    scn, model = ctx.scenario, ctx.model
    options = state.gpu_options()
    default = [g for g in dict.fromkeys([ctx.gpu.id, "H200-SXM", "MI300X"]) if g in options]
    gpu_ids = st.multiselect("GPU types", options, default=default, key="compare_gpus")
    st.caption(f"{state.served_name(scn, model)} · {scn.request_rate_per_s:g} requests/s · {scn.input_len:g} in / "
               f"{scn.output_len:g} out · {slo_text(scn.workload())} · utilisation cap 0.8, catalog prices (change "
               "them on the Fleet planner)")
    if not gpu_ids:
        st.info("Pick at least one GPU type.")
        st.stop()
    gpus = [state.resolve_gpu(g) for g in gpu_ids]
    try:
        plans, w, kw, eff_source, key = fc.planned(ctx, model, gpus, "compare")
    except InvalidInputError as exc:
        st.error(f"Cannot plan this workload — {exc}")
        st.stop()
    rows = []
    for g in gpus:
        mine = [p for p in plans if p.gpu == g.id]
        best = closest_plan(mine)
        if best is None:
            rows.append({"GPU": g.id, "layout": mine[0].message if mine else "no layout", "meets SLO": False})
            continue
        rows.append({"GPU": g.id, "layout": f"{best.replicas} × TP{best.tensor_parallel_size}×PP"
                                           f"{best.pipeline_parallel_size} at batch {best.batch_size}",
                     "GPUs": best.total_gpus,
                     **{label: getattr(best, key) for key, label in COST_LABELS.items()},
                     "tok/s per GPU": best.output_tokens_per_s_per_gpu,
                     "TTFT p99 [ms]": best.ttft_p99_s * 1e3,
                     "TTFT p99 80 % band [ms]": _band_ms(best.ttft_p99_band_low_s, best.ttft_p99_band_high_s),
                     "TPOT p99 [ms]": best.tpot_p99_s * 1e3,
                     "TPOT p99 80 % band [ms]": _band_ms(best.tpot_p99_band_low_s, best.tpot_p99_band_high_s),
                     "public runs: measured ÷ model": published_ratios_text(
                         layout_published_runs(model, best, w.input_len, kw["efficiencies"])
                         or layout_family_runs(best, kw["efficiencies"])),
                     "meets SLO": best.meets_slo})
    frame = pd.DataFrame(rows)
    st.subheader("Best layout per GPU type")
    st.caption(f"Performance model: {eff_source}")
    widgets.table(frame, column_config=fc.column_config(frame), key="compare_table")
    widgets.band_factors_caption(gpus=gpus, shipped=kw["efficiencies"].is_shipped())
    st.caption("Public runs: where the public measurement corpus ran a layout's own setup (model, GPUs, layout, "
               "weights, prompts of this size), what those runs measured ÷ the model's figure at the median, each "
               "predicted by the fit without its source; details on the Fleet planner's chosen layout.")
    out_cost = COST_LABELS["usd_per_million_output_tokens"]
    bars = frame.dropna(subset=["GPUs", out_cost]) if {"GPUs", out_cost} <= set(frame.columns) else frame.iloc[0:0]
    if len(bars):
        st.plotly_chart(fc.compare_bars(bars), key="compare_bars")
    st.subheader("Catalog facts")
    facts = []
    for g in gpus:
        price, price_source = gpu_price(g)
        facts.append({"GPU": g.id, "name": g.name, "memory [GB marketed]": g.memory_gb_marketed,
                      "memory [GiB reported]": round(g.memory_gib, 1),
                      "HBM bandwidth [TB/s]": g.memory_bandwidth_bytes_per_s / 1e12,
                      "bf16 dense [TFLOP/s]": g.peak_flop_per_s.get("bf16", 0) / 1e12,
                      "fp8 dense [TFLOP/s]": g.peak_flop_per_s.get("fp8", 0) / 1e12 or None,
                      "scale-up [GB/s per direction]": g.scale_up_bytes_per_s_per_direction / 1e9,
                      "GPUs per node": g.gpus_per_node, "$/GPU-hour": price, "price basis": price_source,
                      "efficiencies fitted on": fitted_runs(g),
                      "datasheet source": g.source, "as of": g.as_of})
    st.dataframe(pd.DataFrame(facts), hide_index=True, key="compare_facts",
                 column_config={"$/GPU-hour": st.column_config.NumberColumn(format="$%.2f")})


render()
