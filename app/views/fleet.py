"""Fleet planner: ranked layouts per GPU type for the sidebar's model, workload and SLO; cost vs SLO, the Pareto
front, the chosen layout with its timing bands and the simulator beside it, disaggregated prefill/decode, mixed
pools, and the quote downloads. The page's own inputs and the chosen layout live in the URL (bound widgets), so
a link or the quote's permalink brings them back."""
from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from app.ui import fleet_charts as fc
from app.ui import inputs, keys, state, widgets
from calculators.errors import InvalidInputError
from calculators.planning.check import simulate_plan
from calculators.planning.costs import COST_LABELS
from calculators.planning.disagg import plan_disaggregated
from calculators.planning.fleet import (
    best_plan,
    cost_vs_tpot_target,
    fleet_summary,
    pareto_front,
    slo_bound_note,
    slo_text,
    unbounded_tpot_note,
)
from calculators.planning.pools import PoolSpec, plan_pools
from calculators.planning.sizing import sizing_sentence
from calculators.report.explain_fleet import math_chain, math_disagg, serve_line
from calculators.report.perf import layout_family_runs, layout_published_runs
from calculators.report.quote import quote_document, quote_html, quote_pdf, ranked_csv, ranked_json


def _inputs(ctx: state.Computed) -> tuple[list, float, bool, float | None, str]:
    """GPU types, utilisation cap, N+1, the price override and the sizing; stops the page when no GPU is picked."""
    scn = ctx.scenario
    options = state.gpu_options()
    default = [g for g in dict.fromkeys([ctx.gpu.id, "H200-SXM", "MI300X"]) if g in options]
    c1, c2, c3 = st.columns([3, 2, 2])
    gpu_ids = c1.multiselect("GPU types", options, default=default, key=keys.FLEET_GPUS, bind="query-params")
    cap = c2.slider("Utilisation cap (headroom)", 0.3, 1.0, 0.8, 0.05, key=keys.FLEET_CAP, bind="query-params",
                    help="largest share of a replica's throughput the load may use")
    n_plus_one = c2.checkbox("N+1: one spare replica", key=keys.FLEET_N_PLUS_ONE, bind="query-params")
    price = c3.number_input("$/GPU-hour override (0 = catalog median)", 0.0, 1000.0, 0.0, 0.1, format="%g",
                            key=keys.FLEET_PRICE, bind="query-params") or None
    conservative = c3.checkbox("Conservative sizing",
                               key=keys.FLEET_CONSERVATIVE, bind="query-params",
                               help="size for the pessimistic edge of the 80 % timing bands (measured on public "
                                    "benchmarks) instead of the model's estimate")
    st.caption(f"{state.served_name(scn, ctx.model)} · {scn.request_rate_per_s:g} requests/s · {scn.input_len:g} in "
               f"/ {scn.output_len:g} out · {slo_text(scn.workload())} (sidebar: Workload & SLO)")
    if not gpu_ids:
        st.info("Pick at least one GPU type.")
        st.stop()
    sizing = "conservative" if conservative else "estimate"
    return [state.resolve_gpu(g) for g in gpu_ids], cap, n_plus_one, price, sizing


def _ranked(model, plans: list, w) -> None:
    (st.success if any(p.meets_slo for p in plans) else st.warning)(fleet_summary(model, plans))
    if note := unbounded_tpot_note(w, best_plan(plans)):
        st.info(f"{note} Set a p99 TPOT target (sidebar: Workload & SLO) to bound it.")
    if note := slo_bound_note(w, best_plan(plans)):
        st.info(note)
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


def _chosen(model, fitting: list, w, served: str, cap: float, n_plus_one: bool, efficiencies):
    """The layout for the quote (by its stable name, kept in the URL), its costs, timing bands, what the public runs
    of its setup measured, serve line, math."""
    st.subheader("Chosen layout")
    names = [fc.layout_name(p) for p in fitting]
    name = st.selectbox("Layout for the quote", names, key=keys.FLEET_LAYOUT, bind="query-params",
                        help="GPU · tensor × pipeline parallel; the ranked table's first row by default")
    chosen = fitting[names.index(name)] if name in names else fitting[0]
    st.caption(fc.layout_caption(chosen))
    m = st.columns(4)
    m[0].metric("GPUs", f"{chosen.total_gpus:,}", help=f"{chosen.nodes} node(s)")
    for col, key in zip(m[1:], ("usd_per_hour", "usd_per_month", "usd_per_year"), strict=True):
        col.metric(COST_LABELS[key], fc.money(getattr(chosen, key), 2 if key == "usd_per_hour" else 0))
    t = st.columns(4)
    for col, key in zip(t[:3], ("usd_per_million_input_tokens", "usd_per_million_output_tokens",
                                "usd_per_million_tokens"), strict=True):
        col.metric(COST_LABELS[key], fc.money(getattr(chosen, key), 3))
    t[3].metric("p99 TTFT / TPOT [ms]", f"{chosen.ttft_p99_s * 1e3:,.0f} / {chosen.tpot_p99_s * 1e3:.1f}",
                help="99th percentiles over requests at this load: time to first token (queueing included) / "
                     "time per output token (other requests' prompts mixed into the steps)")
    st.markdown("\n".join(f"- {line}" for line in fc.band_lines(chosen)))
    widgets.published_runs_note(layout_published_runs(model, chosen, w.input_len, efficiencies)
                                or layout_family_runs(chosen, efficiencies))
    st.code(serve_line(chosen, model.id, served), language="bash", wrap_lines=True)
    for note in chosen.notes:
        st.caption(note)
    _math("Show the math: rate → batch → replica throughput → replicas → GPUs → $/hour → $/1M tokens",
          math_chain(chosen, w, utilisation_cap=cap, n_plus_one=n_plus_one))
    return chosen


def _sim_check(model, gpus: list, chosen, w, kw: dict, key) -> None:
    """The discrete-event simulator's p99 TTFT and TPOT for one replica of the chosen layout, beside the plan's."""
    st.subheader("Checked by the simulator")
    gpu = next(g for g in gpus if g.id == chosen.gpu)
    check = fc.memo("simcheck", (key, fc.layout_name(chosen)), lambda: simulate_plan(model, gpu, chosen, w, **kw))
    frame = fc.sim_check_frame(check)
    st.dataframe(frame, hide_index=True, column_config=fc.column_config(frame), key="fleet_simcheck")
    (st.success if check.agree else st.warning)(check.verdict())
    st.caption(f"One replica at {check.replica_rate_per_s:.3g} requests/s (the load ÷ {chosen.replicas} replicas), "
               f"Poisson arrivals, {check.duration_s:,.0f} s simulated, the first {check.warmup_s:,.0f} s (warm-up) "
               "left out.")


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
            "$/hour": d.usd_per_hour, COST_LABELS["usd_per_million_tokens"]: d.usd_per_million_tokens,
            "meets SLO": d.meets_slo,
            "verdict": d.verdict}


def _disaggregated(model, gpus: list, plans: list, w, kw: dict, key, cap: float, price: float | None) -> None:
    st.subheader("Disaggregated prefill/decode")
    inter = st.number_input("KV link between the pools [GB/s per direction] (0 = same node, the GPU's scale-up link)",
                            0.0, 100_000.0, 0.0, 25.0, format="%g", key="fleet_inter_gbps") or None
    dkw = {k: v for k, v in kw.items() if k not in ("utilisation_cap", "usd_per_gpu_hour", "n_plus_one", "sizing")}
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
             "TPOT p99 [ms]": r.plan.tpot_p99_s * 1e3 if r.plan else None,
             "meets SLO": bool(r.plan and r.plan.meets_slo)}
            for r in mixed.pools]
    pframe = pd.DataFrame(prow)
    st.dataframe(pframe, hide_index=True, column_config={**fc.column_config(pframe),
                                                          "share": st.column_config.NumberColumn(format="percent")},
                 key="fleet_pools")
    mm = st.columns(3)
    mm[0].metric("Pools: GPUs", f"{mixed.total_gpus:,}")
    mm[1].metric("Pools: $/hour", "—" if mixed.usd_per_hour is None else f"${mixed.usd_per_hour:,.2f}")
    mm[2].metric("Pools: " + COST_LABELS["usd_per_million_tokens"], "—" if mixed.usd_per_million_tokens is None
                 else f"${mixed.usd_per_million_tokens:.3f}")
    st.caption(mixed.verdict + " (pools use TP layouts, PP 1)")


def _fleet_query(gpus: list, cap: float, n_plus_one: bool, price: float | None, sizing: str, chosen) -> str:
    """The page's own inputs and the chosen layout as URL parameters (the bound widgets' keys)."""
    return urlencode({keys.FLEET_GPUS: [g.id for g in gpus], keys.FLEET_CAP: f"{cap:g}",
                      keys.FLEET_N_PLUS_ONE: str(n_plus_one).lower(), keys.FLEET_PRICE: f"{price or 0:g}",
                      keys.FLEET_CONSERVATIVE: str(sizing == "conservative").lower(),
                      keys.FLEET_LAYOUT: fc.layout_name(chosen)}, doseq=True)


def _downloads(ctx, model, gpus: list, w, plans: list, chosen, kw: dict, eff_source: str, cap: float,
               n_plus_one: bool, price: float | None) -> None:
    st.subheader("Quote and downloads")
    served = state.served_name(ctx.scenario, model)
    with st.expander("Quote details (free text, printed on the quote)"):
        q1, q2 = st.columns(2)
        customer = q1.text_input("Customer", key="quote_customer")
        prepared = q2.text_input("Prepared by", key="quote_prepared_by")
        notes = st.text_area("Notes", key="quote_notes")
    alternatives = st.checkbox("List the alternatives in the quote", key="quote_alternatives",
                               help="the chosen layout comes first and alone; tick to add the other layouts")
    link = inputs.permalink(ctx) + "&" + _fleet_query(gpus, cap, n_plus_one, price, kw["sizing"], chosen)
    doc = quote_document(model, gpus, w, plans, chosen=chosen, permalink=link, served_name=served,
                         efficiencies=kw["efficiencies"], efficiency_source=eff_source, utilisation_cap=cap,
                         n_plus_one=n_plus_one, usd_per_gpu_hour=price, sizing=kw["sizing"],
                         include_alternatives=alternatives, vllm_version=ctx.scenario.vllm_version,
                         customer=customer, prepared_by=prepared, notes=notes)
    d1, d2, d3, d4 = st.columns(4)
    d1.download_button("Download quote (HTML)", quote_html(doc), file_name="quote.html", mime="text/html",
                       key="dl_quote_html", on_click="ignore")
    d2.download_button("Download quote (PDF)", lambda: quote_pdf(doc), file_name="quote.pdf", mime="application/pdf",
                       key="dl_quote_pdf", on_click="ignore")
    d3.download_button("Download ranked table (JSON)", ranked_json(plans, model_id=served, workload=w),
                       file_name="fleet.json", mime="application/json", key="dl_fleet_json", on_click="ignore")
    d4.download_button("Download ranked table (CSV)", ranked_csv(plans), file_name="fleet.csv", mime="text/csv",
                       key="dl_fleet_csv", on_click="ignore")
    st.caption(f"Quote permalink (this page's inputs and the chosen layout): `{link}`")


def render() -> None:
    """Draw the page."""
    ctx = state.computed()
    st.title("Fleet planner")
    if widgets.show_error(ctx):
        st.stop()
    model = ctx.model
    gpus, cap, n_plus_one, price, sizing = _inputs(ctx)
    try:
        plans, w, kw, eff_source, key = fc.planned(ctx, model, gpus, "plans", utilisation_cap=cap,
                                                   n_plus_one=n_plus_one, usd_per_gpu_hour=price, sizing=sizing)
    except InvalidInputError as exc:
        st.error(f"Cannot plan this workload — {exc}")
        st.stop()
    st.caption(f"Performance model: {eff_source}. "
               f"{sizing_sentence(sizing, gpus, kw['efficiencies'].is_shipped())}")
    _ranked(model, plans, w)
    _charts(model, gpus, plans, w, kw, key)
    fitting = [p for p in plans if p.fits]
    if not fitting:
        st.stop()
    chosen = _chosen(model, fitting, w, state.served_name(ctx.scenario, model), cap, n_plus_one, kw["efficiencies"])
    _sim_check(model, gpus, chosen, w, kw, key)
    _disaggregated(model, gpus, plans, w, kw, key, cap, price)
    _pools(model, gpus, w, kw, key)
    _downloads(ctx, model, gpus, w, plans, chosen, kw, eff_source, cap, n_plus_one, price)


render()
