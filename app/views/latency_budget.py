"""Latency budget: at a batch size, TTFT = queue + prefill, then (O − 1) × TPOT, plus network, against
an end-to-end target; margin or shortfall per component; the largest max_wait for a micro-batcher."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import perf_charts, perf_state, state, widgets
from calculators.errors import InvalidInputError
from calculators.perf.serving import serving_metrics, slot_view
from calculators.report import explain_perf


def _inputs(ctx: state.Computed, r, summ: dict, out_len: int) -> tuple[int, int, float, float, str]:
    """Batch, replicas, network [s], target [s] and a sentence on where the target comes from."""
    ttft_t, tpot_t = perf_state.targets_s(ctx)
    scn = ctx.scenario
    slo = summ["knee"]["slo_batch_size"]
    perf_state.keep_default("lb_batch", int(summ["batch"]))
    c = st.columns(4)
    batch = int(c[0].number_input("Batch size [sequences]", 1, max(1, summ["limit"]), step=1, key="lb_batch",
                                  help=f"default: the {'SLO batch' if slo == summ['batch'] else 'knee'} "
                                       f"({summ['batch']:,}); at most the KV limit {summ['limit']:,}"))
    m = slot_view(r, serving_metrics(r, batch, *perf_state.lengths(ctx)), batch, out_len)  # as the fleet sizes
    rps = float(m["requests_per_s"])
    perf_state.keep_default("lb_replicas", explain_perf.default_replicas(scn.request_rate_per_s, rps))
    replicas = int(c[1].number_input("Replicas", 1, 1_000_000, step=1, key="lb_replicas",
                                     help=f"default: fewest replicas at ≤ 80 % utilisation for "
                                          f"{scn.request_rate_per_s:g} requests/s at this batch"))
    network_ms = c[2].number_input("Network overhead [ms]", 0.0, 1e6, 0.0, 1.0, format="%g", key="lb_network",
                                   help="client ↔ server round trip, TLS, gateway; added once")
    derived, basis = explain_perf.default_target_s(ttft_target_s=ttft_t, tpot_target_s=tpot_t, output_len=out_len,
                                                   predicted_e2e_s=float(m["e2e_latency_s"]))
    perf_state.keep_default("lb_target", round(derived * 1e3, 3))
    target_ms = c[3].number_input("End-to-end target [ms]", 0.001, 1e9, step=100.0, format="%g", key="lb_target",
                                  help=f"default {derived * 1e3:,.0f} ms, {basis}")
    return batch, replicas, network_ms / 1e3, target_ms / 1e3, basis


def _show(ctx: state.Computed) -> None:
    r = perf_state.page_model(ctx, "Latency")
    if r is None:
        return
    summ = perf_state.summary(ctx, r)
    if isinstance(summ, InvalidInputError):
        st.error(f"Cannot compute this scenario — {summ}")
        return
    if summ["perf"] is None:
        st.error(summ["knee"]["message"])
        return
    in_len, out_len = perf_state.lengths(ctx)
    batch, replicas, network_s, target_s, basis = _inputs(ctx, r, summ, out_len)
    view = explain_perf.budget_at_batch(r, batch=batch, input_len=in_len, output_len=out_len,
                                        request_rate_per_s=ctx.scenario.request_rate_per_s, replicas=replicas,
                                        target_s=target_s, network_s=network_s)
    st.caption(f"{in_len:,} tokens in, {out_len:,} out, {ctx.scenario.request_rate_per_s:g} requests/s over "
               f"{replicas:,} replica(s) = {view['rate_per_replica']:,.3f} requests/s each · target {basis}")
    if not view["stable"]:
        busy = (f"its slots' utilisation ρ = {view['utilisation']:.2f}" if view["utilisation"] >= 1 else
                f"its prompts keep the steps' token budget busy ρ_p = {view['prompt_utilisation']:.2f} of the time")
        st.error(f"The queue is unstable at {replicas:,} replica(s): {busy} ≥ 1 — add replicas (a replica at batch "
                 f"{batch:,} serves {view['m']['requests_per_s']:,.3f} requests/s).")
        return
    b = view["budget"]
    ttft_t, tpot_t = perf_state.targets_s(ctx)
    if b["meets_target"]:
        st.success(f"Meets the {target_s * 1e3:,.0f} ms target with {b['margin_s'] * 1e3:,.1f} ms to spare.")
    else:
        st.error(f"Misses the {target_s * 1e3:,.0f} ms target by {-b['margin_s'] * 1e3:,.1f} ms.")
    c = st.columns(4)
    c[0].metric("TTFT = queue + prefill [ms]", f"{b['ttft_s'] * 1e3:,.1f}",
                help=f"p99 wait for a slot and the token budget {b['queue_s'] * 1e3:,.1f} ms + prefill "
                     f"{b['prefill_s'] * 1e3:,.1f} ms")
    c[1].metric("p99 TPOT [ms]", f"{view['tpot_p99_s'] * 1e3:,.2f}",
                help=f"at {view['rate_per_replica']:,.3f} requests/s per replica: other requests' prompts mixed into "
                     f"a request's steps (99th percentile over requests); a full batch of {batch:,}: "
                     f"{view['m']['tpot_s'] * 1e3:,.2f} ms")
    c[2].metric("End-to-end [ms]", f"{b['total_s'] * 1e3:,.1f}")
    c[3].metric("Margin [ms]" if b["margin_s"] >= 0 else "Shortfall [ms]", f"{abs(b['margin_s']) * 1e3:,.1f}")
    c = st.columns(4)
    c[0].metric("Largest max_wait for a micro-batcher [ms]", f"{b['max_wait_s'] * 1e3:,.1f}",
                help="target − service time (prefill + decode) − network")
    c[1].metric("Slot utilisation ρ per replica", f"{view['utilisation']:.0%}",
                help="λ × the time a request holds a slot ÷ batch slots")
    c[2].metric("p99 wait: slot / token budget [ms]",
                f"{view['wait_p99_s'] * 1e3:,.1f} / {view['prompt_wait_p99_s'] * 1e3:,.1f}",
                help="for one of the batch's slots (M/G/c), then for the steps' token budget among the other "
                     f"prompts (M/D/1, {view['prompt_utilisation']:.0%} busy); the queue is their sum")
    c[3].metric("Output tokens/s per replica", f"{view['m']['output_tokens_per_s']:,.0f}")
    widgets.band_caption(view["tpot_p99_s"], b["ttft_s"], view["m"]["output_tokens_per_s"], r.gpu,
                         r.efficiencies.is_shipped())
    rows = explain_perf.budget_rows(b, output_len=out_len, target_s=target_s, ttft_target_s=ttft_t,
                                    tpot_target_s=tpot_t)
    st.plotly_chart(perf_charts.budget_waterfall(rows, target_ms=target_s * 1e3), key="budget_chart")
    widgets.table(pd.DataFrame(rows).rename(columns={
        "component": "Component", "predicted_ms": "Predicted [ms]", "budget_ms": "Budget [ms]",
        "margin_ms": "Margin [ms] (− = shortfall)"}), key="budget_table")
    st.caption("Budgets: TTFT gets the p99 TTFT target, decode (O − 1) × the p99 TPOT target, network what the "
               "end-to-end target leaves. Adding p99 parts over-estimates the p99 of the sum (a safe budget).")
    widgets.show_math("Latency budget and max_wait", explain_perf.math_budget(
        view, batch=batch, output_len=out_len, replicas=replicas, target_s=target_s))
    widgets.show_math("Queue part of TTFT", explain_perf.math_queue(
        view, batch=batch, replicas=replicas, request_rate_per_s=ctx.scenario.request_rate_per_s))
    widgets.show_math(f"TPOT at batch {batch:,}", explain_perf.math_step_time(r, batch, in_len + out_len / 2))


def render() -> None:
    """Draw the page."""
    ctx = state.computed()
    st.title("Latency budget")
    if not widgets.show_error(ctx):
        _show(ctx)


render()
