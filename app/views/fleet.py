"""Fleet planner: ranked layouts per GPU type for the sidebar's model, workload and SLO; cost vs SLO, the Pareto
front, disaggregated prefill/decode, mixed pools, the math of the chosen layout, and the quote downloads."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import fleet_charts as fc
from app.ui import inputs, state, widgets
from calculators.errors import InvalidInputError
from calculators.planning.disagg import plan_disaggregated
from calculators.planning.fleet import cost_vs_tpot_target, fleet_summary, pareto_front
from calculators.planning.pools import PoolSpec, plan_pools
from calculators.report.explain_fleet import math_chain, math_disagg, serve_line
from calculators.report.quote import quote_document, quote_html, quote_pdf, ranked_csv, ranked_json


def _inputs(ctx: state.Computed) -> tuple[list, float, bool, float | None]:
    """GPU types, utilisation cap, N+1 and the price override; stops the page when no GPU is picked."""
    scn = ctx.scenario
    options = state.gpu_options()
    default = [g for g in dict.fromkeys([ctx.gpu.id, "H200-SXM", "MI300X"]) if g in options]
    c1, c2, c3 = st.columns([3, 2, 2])
    gpu_ids = c1.multiselect("GPU types", options, default=default, key="fleet_gpus")
    cap = c2.slider("Utilisation cap (headroom)", 0.3, 1.0, 0.8, 0.05, key="fleet_cap",
                    help="largest share of a replica's throughput the load may use")
    n_plus_one = c2.checkbox("N+1: one spare replica", key="fleet_n1")
    price = c3.number_input("$/GPU-hour override (0 = catalog median)", 0.0, 1000.0, 0.0, 0.1, format="%g",
                            key="fleet_price") or None
    st.caption(f"{state.served_name(scn, ctx.model)} · {scn.request_rate_per_s:g} requests/s · {scn.input_len:g} in "
               f"/ {scn.output_len:g} out · p99 TTFT ≤ {scn.ttft_p99_ms or 0:g} ms · p99 TPOT ≤ "
               f"{scn.tpot_p99_ms or 0:g} ms (sidebar: Workload & SLO)")
    if not gpu_ids:
        st.info("Pick at least one GPU type.")
        st.stop()
    return [state.resolve_gpu(g) for g in gpu_ids], cap, n_plus_one, price


def _ranked(model, plans: list) -> None:
    (st.success if any(p.meets_slo for p in plans) else st.warning)(fleet_summary(model, plans))
    st.subheader("Ranked layouts")
    table = fc.plans_frame(plans)
    st.dataframe(table, hide_index=True, column_config=fc.column_config(table), key="fleet_table")
    unfit = fc.unfit_frame(plans)
    if len(unfit):
        with st.expander(f"Layouts that do not fit ({len(unfit)})"):
            st.dataframe(unfit, hide_index=True)


def _charts(model, gpus: list, plans: list, w, kw: dict, key) -> None:
    """Cost against the TPOT target, and the throughput-interactivity Pareto front."""
    c1, c2 = st.columns(2)
    with c1:
        sweep = fc.memo("sweep", key, lambda: cost_vs_tpot_target(model, gpus, w, **kw))
        if sweep:
            st.plotly_chart(fc.cost_vs_slo_chart(sweep), key="fleet_cost_slo")
        else:
            st.info("No TPOT target in the sweep can be met (or no prices): no cost-vs-SLO curve.")
    with c2:
        if any(p.fits for p in plans):
            st.plotly_chart(fc.pareto_chart(plans, pareto_front(plans)), key="fleet_pareto")


def _chosen(model, fitting: list, w, served: str, cap: float, n_plus_one: bool):
    """The layout for the quote, its headline figures, serve line and math."""
    st.subheader("Chosen layout")
    labels = [f"{p.gpu} · TP{p.tensor_parallel_size}×PP{p.pipeline_parallel_size} · {p.replicas} replicas · "
              f"{p.total_gpus} GPUs" + ("" if p.meets_slo else " (misses the SLO)") for p in fitting]
    idx = st.selectbox("Layout for the quote", range(len(fitting)), format_func=lambda i: labels[i], key="fleet_choice")
    chosen = fitting[idx]
    m = st.columns(4)
    m[0].metric("GPUs", f"{chosen.total_gpus:,}")
    m[1].metric("$/hour", "—" if chosen.usd_per_hour is None else f"${chosen.usd_per_hour:,.2f}",
                help=None if chosen.usd_per_month is None else f"${chosen.usd_per_month:,.0f} per month (730 h), "
                                                               f"${chosen.usd_per_year:,.0f} per year")
    m[2].metric("$/1M output tokens", "—" if chosen.usd_per_million_output_tokens is None
                else f"${chosen.usd_per_million_output_tokens:.3f}")
    m[3].metric("p99 TTFT / TPOT", f"{chosen.ttft_p99_s * 1e3:,.0f} / {chosen.tpot_s * 1e3:.1f} ms")
    st.code(serve_line(chosen, model.id, served), language="bash", wrap_lines=True)
    _math("Show the math: rate → batch → replica throughput → replicas → GPUs → $/hour → $/1M tokens",
          math_chain(chosen, w, utilisation_cap=cap, n_plus_one=n_plus_one))
    return chosen


def _math(title: str, steps: list[dict]) -> None:
    with st.expander(title):
        for step in steps:
            st.markdown(f"**{step['title']}**  \n`{step['formula']}`  \n{step['substituted']}  \n"
                        f"*Source: {'; '.join(step['sources'])}*")


def _disagg_row(d) -> dict:
    if not d.fits:
        return {"GPU": d.gpu, "verdict": d.message}
    return {"GPU": d.gpu, "prefill pool": f"{d.prefill.instances} × TP{d.prefill.tensor_parallel_size}",
            "decode pool": f"{d.decode.instances} × TP{d.decode.tensor_parallel_size} (batch {d.decode.batch_size})",
            "prefill:decode GPU ratio": d.prefill_decode_gpu_ratio, "KV moved [MB]": d.kv_bytes_per_request / 1e6,
            "transfer [ms]": d.transfer_s * 1e3, "TTFT p99 [ms]": d.ttft_p99_s * 1e3, "TPOT [ms]": d.tpot_s * 1e3,
            "GPUs": d.total_gpus, "GPUs co-located": d.colocated.total_gpus if d.colocated else None,
            "$/hour": d.usd_per_hour, "$/1M tokens": d.usd_per_million_tokens, "meets SLO": d.meets_slo,
            "verdict": d.verdict}


def _disaggregated(model, gpus: list, plans: list, w, kw: dict, key, cap: float, price: float | None) -> None:
    st.subheader("Disaggregated prefill/decode")
    inter = st.number_input("KV link between the pools [GB/s per direction] (0 = same node, the GPU's scale-up link)",
                            0.0, 100_000.0, 0.0, 25.0, format="%g", key="fleet_inter_gbps") or None
    dkw = {k: v for k, v in kw.items() if k not in ("utilisation_cap", "usd_per_gpu_hour", "n_plus_one")}
    disagg = fc.memo("disagg", (key, inter), lambda: [
        plan_disaggregated(model, g, w, inter_node_gb_per_s=inter, utilisation_cap=cap, usd_per_gpu_hour=price,
                           colocated=plans, **dkw) for g in gpus])
    dframe = pd.DataFrame([_disagg_row(d) for d in disagg])
    st.dataframe(dframe, hide_index=True, column_config={
        **fc.column_config(dframe), "prefill:decode GPU ratio": st.column_config.NumberColumn(format="%.2f"),
        "KV moved [MB]": st.column_config.NumberColumn(format="%.1f"),
        "transfer [ms]": st.column_config.NumberColumn(format="%.3f")}, key="fleet_disagg")
    first = next((d for d in disagg if d.fits), None)
    if first is not None:
        _math(f"Show the math: disaggregation on {first.gpu}", math_disagg(first))


def _pool_inputs() -> list[PoolSpec]:
    c = st.columns(5)
    share = c[0].number_input("latency pool share [%]", 0.0, 100.0, 30.0, 5.0, format="%g", key="pool_share") / 100
    lat_ttft = c[1].number_input("latency p99 TTFT [ms]", 1.0, 1e6, 500.0, 50.0, format="%g", key="pool_lat_ttft")
    lat_tpot = c[2].number_input("latency p99 TPOT [ms]", 1.0, 1e6, 30.0, 5.0, format="%g", key="pool_lat_tpot")
    thr_ttft = c[3].number_input("throughput p99 TTFT [ms]", 1.0, 1e7, 10_000.0, 500.0, format="%g",
                                 key="pool_thr_ttft")
    thr_tpot = c[4].number_input("throughput p99 TPOT [ms]", 1.0, 1e6, 100.0, 10.0, format="%g", key="pool_thr_tpot")
    return [PoolSpec("latency", share, lat_ttft / 1e3, lat_tpot / 1e3),
            PoolSpec("throughput", 1 - share, thr_ttft / 1e3, thr_tpot / 1e3)]


def _pools(model, gpus: list, w, kw: dict, key) -> None:
    st.subheader("Mixed pools: latency pool + throughput pool")
    specs = _pool_inputs()
    try:
        mixed = fc.memo("pools", (key, specs), lambda: plan_pools(model, gpus, w, specs, max_pp=1, **kw))
    except InvalidInputError as exc:
        st.error(str(exc))
        return
    prow = [{"pool": r.pool.name, "share": r.pool.share, "requests/s": r.workload.request_rate_per_s,
             "layout": r.plan.message if r.plan else "nothing fits", "GPUs": r.plan.total_gpus if r.plan else None,
             "$/hour": r.plan.usd_per_hour if r.plan else None,
             "TTFT p99 [ms]": r.plan.ttft_p99_s * 1e3 if r.plan else None,
             "TPOT [ms]": r.plan.tpot_s * 1e3 if r.plan else None, "meets SLO": bool(r.plan and r.plan.meets_slo)}
            for r in mixed.pools]
    pframe = pd.DataFrame(prow)
    st.dataframe(pframe, hide_index=True, column_config={**fc.column_config(pframe),
                                                          "share": st.column_config.NumberColumn(format="percent")},
                 key="fleet_pools")
    mm = st.columns(3)
    mm[0].metric("Pools: GPUs", f"{mixed.total_gpus:,}")
    mm[1].metric("Pools: $/hour", "—" if mixed.usd_per_hour is None else f"${mixed.usd_per_hour:,.2f}")
    mm[2].metric("Pools: $/1M tokens", "—" if mixed.usd_per_million_tokens is None
                 else f"${mixed.usd_per_million_tokens:.3f}")
    st.caption(mixed.verdict + " (pools use TP layouts, PP 1)")


def _downloads(ctx, model, gpus: list, w, plans: list, chosen, kw: dict, eff_source: str, cap: float,
               n_plus_one: bool, price: float | None) -> None:
    st.subheader("Quote and downloads")
    served = state.served_name(ctx.scenario, model)
    with st.expander("Quote details (free text, printed on the quote)"):
        q1, q2 = st.columns(2)
        customer = q1.text_input("Customer", key="quote_customer")
        prepared = q2.text_input("Prepared by", key="quote_prepared_by")
        notes = st.text_area("Notes", key="quote_notes")
    doc = quote_document(model, gpus, w, plans, chosen=chosen, permalink=inputs.permalink(ctx), served_name=served,
                         efficiencies=kw["efficiencies"], efficiency_source=eff_source, utilisation_cap=cap,
                         n_plus_one=n_plus_one, usd_per_gpu_hour=price, customer=customer, prepared_by=prepared,
                         notes=notes)
    d1, d2, d3, d4 = st.columns(4)
    d1.download_button("Download quote (HTML)", quote_html(doc), file_name="quote.html", mime="text/html",
                       key="dl_quote_html", on_click="ignore")
    d2.download_button("Download quote (PDF)", lambda: quote_pdf(doc), file_name="quote.pdf", mime="application/pdf",
                       key="dl_quote_pdf", on_click="ignore")
    d3.download_button("Download ranked table (JSON)", ranked_json(plans, model_id=served, workload=w),
                       file_name="fleet.json", mime="application/json", key="dl_fleet_json", on_click="ignore")
    d4.download_button("Download ranked table (CSV)", ranked_csv(plans), file_name="fleet.csv", mime="text/csv",
                       key="dl_fleet_csv", on_click="ignore")


def render() -> None:
    """Draw the page."""
    ctx = state.computed()
    st.title("Fleet planner")
    if widgets.show_error(ctx):
        st.stop()
    model = ctx.model
    gpus, cap, n_plus_one, price = _inputs(ctx)
    try:
        plans, w, kw, eff_source, key = fc.planned(ctx, model, gpus, "plans", utilisation_cap=cap,
                                                   n_plus_one=n_plus_one, usd_per_gpu_hour=price)
    except InvalidInputError as exc:
        st.error(f"Cannot plan this workload — {exc}")
        st.stop()
    st.caption(f"Performance model: {eff_source}")
    _ranked(model, plans)
    _charts(model, gpus, plans, w, kw, key)
    fitting = [p for p in plans if p.fits]
    if not fitting:
        st.stop()
    chosen = _chosen(model, fitting, w, state.served_name(ctx.scenario, model), cap, n_plus_one)
    _disaggregated(model, gpus, plans, w, kw, key, cap, price)
    _pools(model, gpus, w, kw, key)
    _downloads(ctx, model, gpus, w, plans, chosen, kw, eff_source, cap, n_plus_one, price)


render()
