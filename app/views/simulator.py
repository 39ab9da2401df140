"""Batching simulator: a workload and one or two batching policies through the event simulator of one
replica — throughput, goodput, latency percentiles, the time line, CDFs, the closed forms beside the run,
the classic continuous-vs-static experiment and a max_num_seqs sweep against the analytic knee."""
from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import streamlit as st

from app.ui import keys, perf, sim_charts, state, widgets
from calculators.errors import InvalidInputError
from calculators.report import explain_sim
from calculators.sim import analysis
from calculators.sim.analysis import sweep_grid
from calculators.sim.engine import simulate
from calculators.sim.policies import SLO, ContinuousBatching, StaticBatching
from calculators.sim.sweeps import continuous_vs_static
from calculators.sim.workload import (
    MAX_SIM_REQUESTS,
    ClosedLoop,
    Constant,
    Fixed,
    Gamma,
    Poisson,
    bimodal,
    length_distribution,
    make_workload,
    read_trace,
)

ARRIVALS = ("Poisson", "Bursty (gamma)", "Constant", "Closed-loop users")
LENGTHS = ("Fixed", "Log-normal", "Bimodal mix", "Trace (CSV)")
POLICIES = ("continuous", "static")
NUM = st.column_config.NumberColumn(format="%.1f")


def _defaults(sc, s: dict, ranks: int = 1) -> dict:
    """The page's inputs, started from the scenario in the sidebar (``max_num_seqs`` that of its ``ranks``
    data-parallel ranks together)."""
    inp, out = max(1, round(sc.input_len)), max(1, round(sc.output_len))
    defaults = {"sim_arrival": ARRIVALS[0], "sim_rate": float(sc.request_rate_per_s), "sim_cv": 2.0,
                "sim_users": 32, "sim_think": 1.0, "sim_lengths": LENGTHS[1], "sim_in": inp, "sim_out": out,
                "sim_in_p95": 2 * inp, "sim_out_p95": 2 * out, "sim_long_in": 4 * inp, "sim_long_out": 2 * out,
                "sim_long_frac": 0.2, "sim_duration": 120.0, "sim_warmup_pct": 10.0, "sim_seed": 0,
                "sim_compare": False}
    mns = ranks * int(s.get("max_num_seqs") or 256)
    mnbt = int(s.get("max_num_batched_tokens") or 8192)
    for tag, kind in (("a", "continuous"), ("b", "static")):
        defaults |= {f"sim_{tag}_kind": kind, f"sim_{tag}_mns": mns, f"sim_{tag}_mnbt": max(mnbt, mns),
                     f"sim_{tag}_hit": 0.0, f"sim_{tag}_bmax": min(mns, 32), f"sim_{tag}_wait": 50.0}
    return defaults


def _seed_defaults(defaults: dict) -> None:
    """First visit (or after a reset): the page's inputs start from the scenario in the sidebar."""
    for k, v in defaults.items():
        st.session_state.setdefault(k, v)


def _reset(input_keys: list[str]) -> None:
    for k in input_keys:
        st.session_state.pop(k, None)


def _forget_trace() -> None:
    st.session_state.pop(keys.SIM_TRACE, None)
    st.session_state[keys.SIM_UPLOAD_N] = st.session_state.get(keys.SIM_UPLOAD_N, 0) + 1  # a fresh, empty uploader


def _trace_input():
    """The uploaded trace (kept in session state) as a Workload, or None (an error is shown)."""
    up = st.file_uploader("Trace CSV (arrival_time_s,input_tokens,output_tokens)", type=["csv"],
                          key=f"sim_upload_{st.session_state.get(keys.SIM_UPLOAD_N, 0)}")
    if up is not None:
        data = up.getvalue()
        stored = st.session_state.get(keys.SIM_TRACE)
        if stored is None or stored["data"] != data:
            st.session_state[keys.SIM_TRACE] = {"name": up.name, "data": data, "sha": hashlib.sha1(data).hexdigest()}
    stored = st.session_state.get(keys.SIM_TRACE)
    if stored is None:
        st.info("Upload a CSV with a header `arrival_time_s,input_tokens,output_tokens`, one request per line.")
        return None
    cache = st.session_state.get(keys.SIM_TRACE_PARSED)
    if cache is None or cache[0] != stored["sha"]:
        with tempfile.TemporaryDirectory() as tmp:
            p = Path(tmp) / "trace.csv"
            p.write_bytes(stored["data"])
            try:
                cache = (stored["sha"], read_trace(p))
            except InvalidInputError as exc:
                cache = (stored["sha"], exc)
        st.session_state[keys.SIM_TRACE_PARSED] = cache
    wl = cache[1]
    c1, c2 = st.columns([4, 1])
    if isinstance(wl, InvalidInputError):
        c1.error(f"Trace {stored['name']} is malformed — {wl}. Fix that line and upload it again.")
        wl = None
    else:
        c1.caption(f"Trace **{stored['name']}**: {wl.num_requests:,} requests over {wl.arrival_s[-1]:,.1f} s "
                   f"(mean {wl.input_tokens.mean():,.0f} in / {wl.output_tokens.mean():,.0f} out tokens).")
    c2.button("Forget the trace", key="sim_forget_trace", on_click=_forget_trace)
    return wl


def _length_dists(kind: str, max_len: int | None):
    g = st.session_state
    if kind in ("Fixed", "Log-normal"):
        dist = "lognormal" if kind == "Log-normal" else "fixed"
        return (length_distribution(g.sim_in, g.sim_in_p95, kind=dist, max_len=max_len, field="input_tokens"),
                length_distribution(g.sim_out, g.sim_out_p95, kind=dist, max_len=max_len, field="output_tokens"))
    return (bimodal(Fixed(int(g.sim_in)), Fixed(int(g.sim_long_in)), g.sim_long_frac),
            bimodal(Fixed(int(g.sim_out)), Fixed(int(g.sim_long_out)), g.sim_long_frac))


def _workload_inputs(input_keys: list[str]) -> None:
    c1, c2, c3 = st.columns(3)
    arrival = c1.selectbox("Arrival process", ARRIVALS, key="sim_arrival")
    if arrival == "Closed-loop users":
        c1.number_input("Concurrent users", min_value=1, max_value=100_000, step=1, key="sim_users")
        c1.number_input("Mean think time [s]", min_value=0.0, step=0.5, key="sim_think")
    else:
        c1.number_input("Request rate [req/s]", min_value=0.001, step=1.0, format="%.3f", key="sim_rate")
        if arrival == "Bursty (gamma)":
            c1.number_input("Inter-arrival CV (1 = Poisson)", min_value=0.05, max_value=Gamma.CV_RANGE[1], step=0.5,
                            key="sim_cv")
    kind = c2.selectbox("Request lengths", LENGTHS, key="sim_lengths")
    if kind != "Trace (CSV)":
        c2.number_input("Input tokens (mean)", min_value=1, step=100, key="sim_in")
        c2.number_input("Output tokens (mean)", min_value=1, step=50, key="sim_out")
    if kind == "Log-normal":
        c2.number_input("Input tokens p95", min_value=1, step=100, key="sim_in_p95")
        c2.number_input("Output tokens p95", min_value=1, step=50, key="sim_out_p95")
    elif kind == "Bimodal mix":
        c2.number_input("Long requests: input tokens", min_value=1, step=100, key="sim_long_in")
        c2.number_input("Long requests: output tokens", min_value=1, step=50, key="sim_long_out")
        c2.slider("Share of long requests", 0.0, 1.0, step=0.05, key="sim_long_frac")
        c2.caption("Input and output lengths are each drawn from their mix.")
    c3.number_input("Duration (arrivals and simulated clock) [s]", min_value=1.0, step=10.0, key="sim_duration")
    c3.number_input("Warm-up left out of the statistics [% of the run]", min_value=0.0, max_value=90.0, step=5.0,
                    key="sim_warmup_pct", help="the first requests meet an empty server (or, in a closed loop, all "
                                               "arrive at once): leave that transient out of the steady state")
    c3.number_input("Seed", min_value=0, step=1, key="sim_seed")
    c3.button("Reset to the scenario's values", key="sim_reset", on_click=_reset, args=(input_keys,))


def _policy_inputs(tag: str, title: str, box) -> None:
    box.markdown(f"**{title}**")
    kind = box.radio("Batching", POLICIES, horizontal=True, key=f"sim_{tag}_kind")
    if kind == "continuous":
        box.number_input("max_num_seqs", min_value=1, step=16, key=f"sim_{tag}_mns")
        box.number_input("max_num_batched_tokens", min_value=1, step=1024, key=f"sim_{tag}_mnbt")
        box.slider("Prefix-cache hit rate", 0.0, 0.95, step=0.05, key=f"sim_{tag}_hit")
    else:
        box.number_input("Max batch size", min_value=1, step=8, key=f"sim_{tag}_bmax")
        box.number_input("max_wait_ms", min_value=0.0, step=10.0, key=f"sim_{tag}_wait")


def _policy(tag: str, num_blocks: int, block_size: int):
    g = st.session_state
    if g[f"sim_{tag}_kind"] == "continuous":
        return ContinuousBatching(max_num_seqs=int(g[f"sim_{tag}_mns"]),
                                  max_num_batched_tokens=int(g[f"sim_{tag}_mnbt"]), num_blocks=num_blocks,
                                  block_size=block_size,
                                  prefix_cache_hit_rate=float(g[f"sim_{tag}_hit"]))
    return StaticBatching(max_batch_size=int(g[f"sim_{tag}_bmax"]), max_wait_ms=float(g[f"sim_{tag}_wait"]),
                          num_blocks=num_blocks, block_size=block_size)


def _policy_label(tag: str) -> str:
    g = st.session_state
    if g[f"sim_{tag}_kind"] == "continuous":
        return f"{tag.upper()}: continuous, max_num_seqs {g[f'sim_{tag}_mns']}"
    return f"{tag.upper()}: static, batch {g[f'sim_{tag}_bmax']}"


def _workload(max_len: int | None, trace):
    """The workload the inputs describe (raises InvalidInputError), and the offered rate [1/s]."""
    g = st.session_state
    if g.sim_lengths == "Trace (CSV)":
        wl = trace
        if wl is None:
            raise InvalidInputError("trace", None, "a valid uploaded trace CSV")
        return wl, wl.num_requests / max(float(wl.arrival_s[-1]), 1e-9)
    ind, outd = _length_dists(g.sim_lengths, max_len)
    dur = float(g.sim_duration)
    if g.sim_arrival == "Closed-loop users":
        n = int(min(MAX_SIM_REQUESTS, max(int(g.sim_users), int(g.sim_rate * dur))))
        wl = make_workload(ClosedLoop(int(g.sim_users), float(g.sim_think)), ind, outd, num_requests=n,
                           seed=int(g.sim_seed))
        return wl, None
    rate = float(g.sim_rate)
    arr = {"Poisson": Poisson(rate), "Bursty (gamma)": Gamma(rate, float(g.sim_cv)),
           "Constant": Constant(rate)}[g.sim_arrival]
    return make_workload(arr, ind, outd, duration_s=dur, seed=int(g.sim_seed)), rate


def _warmup_s(duration_s: float) -> float:
    """The warm-up left out of the statistics [s]: the page's share of the run."""
    return duration_s * float(st.session_state.sim_warmup_pct) / 100


def _config_key(ctx, source: str, input_keys: list[str]) -> str:
    items = [(k, repr(st.session_state.get(k))) for k in sorted(input_keys)]
    trace = (st.session_state.get(keys.SIM_TRACE) or {}).get("sha")
    return hashlib.sha1(repr((items, trace, ctx.scenario, source)).encode()).hexdigest()


def _run(pm, ctx, source: str, input_keys: list[str], trace, num_blocks: int, block_size: int, slo: SLO) -> None:
    g = st.session_state
    try:
        wl, offered = _workload(ctx.doc["settings"].get("max_model_len"), trace)
        tags = ["a", "b"] if g.sim_compare else ["a"]
        pols = {_policy_label(t): _policy(t, num_blocks, block_size) for t in tags}
    except InvalidInputError as exc:
        st.error(f"Cannot run — {exc}")
        return
    dur = float(g.sim_duration) if g.sim_lengths != "Trace (CSV)" else float(wl.arrival_s[-1]) * 1.05 + 1.0
    bar = st.progress(0.0, text="Simulating…")
    runs = {}
    for k, (name, pol) in enumerate(pols.items()):
        bar.progress(k / len(pols), text=f"Simulating {name} ({wl.num_requests:,} requests)…")
        runs[name] = simulate(pm, wl, pol, duration_s=dur, slo=slo, warmup_s=_warmup_s(dur))
    bar.progress(1.0, text="Done")
    bar.empty()
    g[keys.SIM_RESULTS] = {"key": _config_key(ctx, source, input_keys), "runs": runs, "offered": offered, "slo": slo,
                  "servers": {name: pol.max_num_seqs for name, pol in pols.items()},
                  "requests": wl.num_requests, "source": source, "shipped": pm.efficiencies.is_shipped()}


def _show_run(name: str, res, offered, box, gpu, shipped: bool) -> None:
    h = explain_sim.headline(res)
    box.markdown(f"#### {name}")
    c1, c2, c3 = box.columns(3)
    c1.metric("Throughput [req/s]", f"{h['requests_per_s']:,.2f}")
    c2.metric("Output tokens/s", f"{h['output_tokens_per_s']:,.0f}")
    c3.metric("Goodput [req/s]", f"{h['goodput_requests_per_s']:,.2f}", help="requests finished within the SLO")
    c1.metric("SLO attainment", f"{h['slo_attainment']:.1%}")
    c2.metric("Finished / arrived", f"{h['completed']:,} / {h['arrived']:,}")
    c3.metric("Preemptions", f"{h['preemptions']:,}")
    box.caption(f"Mean batch {res.mean_batch_size:,.1f}; mean queue {res.mean_queue_depth:,.1f} "
                f"(max {res.max_queue_depth:,}); KV usage mean {res.mean_kv_usage:.0%}, max {res.max_kv_usage:.0%}; "
                f"{res.rejected:,} rejected (longer than the whole KV cache); clock stopped at {res.elapsed_s:,.1f} s "
                f"({res.stop_reason}).")
    widgets.band_factors_caption(box, [gpu], shipped)
    text = explain_sim.overload_text(res, offered)
    if text:
        box.warning(text, icon=":material/warning:")
    box.markdown("**Latency percentiles [ms]**")
    box.dataframe(explain_sim.percentile_table(res), hide_index=True,
                  column_config={c: NUM for c in ("mean [ms]", "p50 [ms]", "p95 [ms]", "p99 [ms]")},
                  key=f"sim_table_{name[0]}")


def _show_results(ctx, source: str, input_keys: list[str]) -> None:
    out = st.session_state.get(keys.SIM_RESULTS)
    if not out:
        return
    if out["key"] != _config_key(ctx, source, input_keys):
        st.info("The inputs changed since this run; press **Run simulation** to update the results below.")
    runs, slo = out["runs"], out["slo"]
    cols = st.columns(len(runs))
    for box, (name, res) in zip(cols, runs.items(), strict=True):
        _show_run(name, res, out["offered"], box, ctx.gpu, out.get("shipped", True))
    if len(runs) == 2:
        (na, a), (nb, b) = runs.items()
        st.subheader("Policy A beside policy B")
        st.metric("Throughput ratio A ÷ B (requests/s)", f"{analysis.throughput_ratio(a, b):,.2f}×")
        st.dataframe(explain_sim.compare_table(a, b), hide_index=True, key="sim_compare_table",
                     column_config={c: st.column_config.NumberColumn(format="%.2f") for c in ("A", "B", "A ÷ B")})
    st.subheader("Time line")
    st.plotly_chart(sim_charts.timeline({n: analysis.timeline_frame(r) for n, r in runs.items()}),
                    key="sim_timeline")
    st.subheader("Latency CDFs")
    curves = {label: {n: analysis.latency_cdf(r, m) for n, r in runs.items()}
              for m, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "end-to-end"))}
    targets = {"TTFT": slo.ttft_s and slo.ttft_s * 1e3, "TPOT": slo.tpot_s and slo.tpot_s * 1e3}
    st.plotly_chart(sim_charts.latency_cdfs(curves, slo_ms=targets), key="sim_cdfs")
    st.subheader("Little's law and the closed forms")
    for name, res in runs.items():
        chk = analysis.little_check(res)
        msg = (f"{name} — Little's law L = λW: L = {chk.L:,.3f} requests, λ·W = {chk.lambda_W:,.3f} "
               f"(gap {chk.relative_gap:.2%})")
        (st.success if chk.ok else st.warning)(msg)
        widgets.show_math(f"Little's law ({name})", explain_sim.math_little(chk))
        widgets.show_math(f"throughput and goodput ({name})", explain_sim.math_throughput(res, slo))
        cf = analysis.closed_forms(res, out["servers"][name])
        widgets.show_math(f"M/D/1 mean wait ({name})", explain_sim.math_md1(cf, res.mean_batch_size))
        widgets.show_math(f"M/M/1 mean wait ({name})", explain_sim.math_mm1(cf))
        widgets.show_math(f"Erlang C, one server per slot ({name})", explain_sim.math_erlang_c(cf))


def _seed_experiment(pm) -> None:
    st.subheader("Continuous vs static batching")
    st.caption("A closed loop of 2 × batch users with no think time keeps both policies saturated, so the ratio "
               "is a capacity ratio. Lengths are log-normal with the means and p95s above.")
    g = st.session_state
    c1, c2, c3 = st.columns(3)
    batch = c1.number_input("Batch size (both policies)", min_value=1, value=32, step=8, key="sim_seed_batch")
    n = c2.number_input("Requests", min_value=10, max_value=20_000, value=1000, step=500, key="sim_seed_n")
    if c3.button("Run continuous vs static", key="sim_seed_run"):
        try:
            with st.spinner("Simulating both policies…"):
                g[keys.SIM_SEED_RESULT] = continuous_vs_static(
                    pm, batch_size=int(batch), input_mean=float(g.sim_in), input_p95=float(g.sim_in_p95),
                    output_mean=float(g.sim_out), output_p95=float(g.sim_out_p95), num_requests=int(n),
                    seed=int(g.sim_seed))
        except InvalidInputError as exc:
            st.error(f"Cannot run — {exc}")
    r = g.get(keys.SIM_SEED_RESULT)
    if r:
        c1, c2, c3 = st.columns(3)
        c1.metric("Continuous ÷ static throughput", f"{r['throughput_ratio']:,.2f}×",
                  help="textbooks often quote 2–4×; this is what the simulation gives")
        c2.metric("Continuous [req/s]", f"{r['continuous_requests_per_s']:,.2f}")
        c3.metric("Static [req/s]", f"{r['static_requests_per_s']:,.2f}")
        st.dataframe([{"policy": p, "requests/s": r[f"{p}_requests_per_s"],
                       "output tokens/s": r[f"{p}_output_tokens_per_s"], "p99 TTFT [ms]": r[f"{p}_ttft_p99_s"] * 1e3,
                       "p99 e2e [ms]": r[f"{p}_e2e_p99_s"] * 1e3} for p in ("continuous", "static")],
                     hide_index=True, key="sim_seed_table")


def _sweep(pm, ctx, trace, num_blocks: int, block_size: int, slo: SLO) -> None:
    from calculators.report.perf import knee_document
    from calculators.sim.sweeps import sweep_max_num_seqs
    g = st.session_state
    if not st.toggle("Sweep max_num_seqs (knee and SLO point beside the analytic knee)", key="sim_sweep_on"):
        return
    st.caption("Runs the workload above under continuous batching (policy A's token budget and prefix-cache "
               "rate) at max_num_seqs = 1, 2, 4, … up to the top value. For the knee to mean capacity, offer more "
               "load than the replica serves.")
    c1, c2 = st.columns(2)
    top = c1.number_input("Top max_num_seqs", min_value=2, max_value=4096, value=256, step=64, key="sim_sweep_top")
    if c2.button("Run sweep", key="sim_sweep_run"):
        try:
            wl, _ = _workload(ctx.doc["settings"].get("max_model_len"), trace)
            base = _policy("a", num_blocks, block_size)
            if not isinstance(base, ContinuousBatching):
                base = ContinuousBatching(num_blocks=num_blocks, block_size=block_size)
        except InvalidInputError as exc:
            st.error(f"Cannot run — {exc}")
            return
        bar = st.progress(0.0, text="Sweeping…")
        dur = float(g.sim_duration)

        def progress(k: int, n: int, v: int) -> None:
            bar.progress(k / n, text=f"max_num_seqs = {v} ({k + 1} of {n})")
        sw = sweep_max_num_seqs(pm, wl, sweep_grid(int(top)), policy=base, duration_s=dur, slo=slo,
                                warmup_s=_warmup_s(dur), on_progress=progress)
        bar.empty()
        try:
            kd = knee_document(pm, input_len=int(g.sim_in), output_len=int(g.sim_out), ttft_target_s=slo.ttft_s,
                               tpot_target_s=slo.tpot_s, max_batch=int(top))
            analytic, note = kd.get("knee_batch_size"), kd.get("message", "")
        except InvalidInputError as exc:
            analytic, note = None, str(exc)
        g[keys.SIM_SWEEP_RESULT] = {"frame": sw.frame, "knee": sw.knee, "slo_point": sw.slo_point, "analytic": analytic,
                           "note": note}
    r = g.get(keys.SIM_SWEEP_RESULT)
    if r:
        c1, c2, c3 = st.columns(3)
        fmt = lambda x: "—" if x is None else f"{x:,.0f}"  # noqa: E731
        c1.metric("Simulated knee (max_num_seqs)", fmt(r["knee"]), help="smallest value whose doubling gains < 15 %")
        c2.metric("SLO point (max_num_seqs)", fmt(r["slo_point"]), help="largest value meeting the p99 targets")
        c3.metric("Analytic knee (roofline batch)", fmt(r["analytic"]))
        st.caption(f"Analytic: {r['note']}")
        st.plotly_chart(sim_charts.sweep_chart(r["frame"], knee=r["knee"], slo_point=r["slo_point"],
                                               analytic_knee=r["analytic"]), key="sim_sweep_chart")
        st.dataframe(r["frame"], hide_index=True, key="sim_sweep_table")


def render() -> None:
    """Draw the page."""
    ctx = state.computed()
    st.title("Batching simulator")
    st.caption("One replica, one engine step at a time (vLLM's scheduler: continuous batching with chunked prefill, "
               "KV blocks and preemption; or static batches padded to the longest). Step times come from the "
               "performance model; the KV cache from the KV cache page's accounting.")
    if not widgets.show_error(ctx):
        pm, source = perf.performance_model(ctx)
        doc = ctx.doc
        ranks = ctx.scenario.attention_ranks(ctx.model)  # data-parallel attention: the ranks' pools together
        blocks, block_size = ranks * int(doc["num_gpu_blocks"]), int(doc["settings"]["block_size"])
        if pm is None:
            st.warning(source or "No performance model for this scenario.")
        elif not doc["fits"] or blocks <= 0:
            st.error(f"Nothing to simulate: the model does not fit — {doc['message']}")
        else:
            sc = ctx.scenario
            slo = SLO(None if sc.ttft_p99_ms is None else sc.ttft_p99_ms / 1e3,
                      None if sc.tpot_p99_ms is None else sc.tpot_p99_ms / 1e3)
            defaults = _defaults(sc, doc["settings"], ranks)
            input_keys = list(defaults)
            _seed_defaults(defaults)
            pooled = (f", the {ranks} data-parallel ranks' caches scheduled as one pool, as `llmcap simulate "
                      "--enable-dp-attention` does" if ranks > 1 else "")
            st.caption(f"Step times: {source}. KV cache: {blocks:,} blocks of {block_size} tokens "
                       f"({blocks * block_size:,} tokens{pooled}). SLO for goodput: TTFT ≤ "
                       f"{'—' if sc.ttft_p99_ms is None else f'{sc.ttft_p99_ms:,.0f} ms'}, TPOT ≤ "
                       f"{'—' if sc.tpot_p99_ms is None else f'{sc.tpot_p99_ms:,.0f} ms'} (from the sidebar).")
            st.subheader("Workload")
            _workload_inputs(input_keys)
            trace = _trace_input() if st.session_state.sim_lengths == "Trace (CSV)" else None
            if st.session_state.sim_lengths == "Trace (CSV)":
                st.caption("A trace brings its own arrival times: the arrival process and duration above are not used.")
            st.subheader("Batching policy")
            st.toggle("Compare two policies side by side (same workload and seed)", key="sim_compare")
            if st.session_state.sim_compare:
                ca, cb = st.columns(2)
                _policy_inputs("a", "Policy A", ca)
                _policy_inputs("b", "Policy B", cb)
            else:
                _policy_inputs("a", "Policy", st)
            if st.button("Run simulation", type="primary", key="sim_run", icon=":material/play_arrow:"):
                _run(pm, ctx, source, input_keys, trace, blocks, block_size, slo)
            _show_results(ctx, source, input_keys)
            st.divider()
            _seed_experiment(pm)
            st.divider()
            _sweep(pm, ctx, trace, blocks, block_size, slo)


render()
