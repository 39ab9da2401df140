"""Measured profiles: import benchmark runs, see their curves, knee and SLO point, calibrate the roofline on them.

The uploaded profile lives in ``st.session_state`` only (never a process-wide cache: an upload belongs to
one user's session). Session-state contract (tests put a profile here directly, AppTest cannot upload):

- ``measured_profile``: the :class:`calculators.profiles.Profile` shown;
- ``prof_calibration``: the calibration last fitted on this page (not yet in force until "Use this
  calibration", which calls :func:`app.ui.perf.use_calibration`).
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from app.ui import keys, perf, profile_charts, state, widgets
from calculators.errors import InvalidInputError
from calculators.perf.calibration import Calibration, calibrate, profile_points
from calculators.perf.roofline import Roofline
from calculators.profiles import MAX_PROFILE_BYTES, load_many
from calculators.profiles import analysis as pa
from calculators.report import explain_profiles as ex

ss = st.session_state


def _read_uploads(files) -> None:
    """Load the uploaded files once per selection; a bad file keeps the profile loaded before."""
    sig = tuple((f.file_id, f.name, f.size) for f in files)
    if not files or sig == ss.get(keys.PROFILE_SIGNATURE):
        return
    ss[keys.PROFILE_SIGNATURE], ss[keys.PROFILE_ERROR] = sig, None
    try:
        for f in files:
            if f.size > MAX_PROFILE_BYTES:
                raise InvalidInputError(f"{f.name}: file size", f"{f.size} bytes", f"at most {MAX_PROFILE_BYTES} bytes")
        ss[keys.PROFILE] = load_many([(f.name, f.getvalue()) for f in files])
    except InvalidInputError as exc:
        ss[keys.PROFILE_ERROR] = str(exc)


def _defaults_for(profile) -> None:
    """Point the model/GPU/TP selectors at the profile's metadata (catalog matches), else the sidebar.

    Set for each new profile, and again whenever Streamlit dropped the widgets' state (another page shown)."""
    scn = state.computed().scenario
    model = pa.catalog_match(profile.model, state.resolve_model)
    gpu = pa.catalog_match(profile.gpu, state.resolve_gpu)
    defaults = {"prof_model": model if model in state.model_options() else scn.model,
                "prof_gpu": gpu if gpu in state.gpu_options() else scn.gpu,
                "prof_tp": int(profile.tensor_parallel_size or scn.tensor_parallel_size)}
    ss[keys.PROFILE_FROM] = {"model": model is not None, "gpu": gpu is not None,
                        "tp": profile.tensor_parallel_size is not None}
    key = (profile.source_files, profile.model, profile.gpu)
    new = ss.get(keys.PROFILE_DEFAULTS_FOR) != key
    for k, v in defaults.items():
        if new or k not in ss:
            ss[k] = v
    if new:
        ss[keys.PROFILE_DEFAULTS_FOR] = key
        ss[keys.CANDIDATE], ss[keys.CALIBRATION_ERROR] = None, None
        ss.pop("prof_axis", None)  # the new profile's first axis


def _roofline(model: str, gpu: str, tp: int) -> Roofline:
    return Roofline(state.resolve_model(model), state.resolve_gpu(gpu), tensor_parallel_size=int(tp))


def _calibrate() -> None:
    profile = ss[keys.PROFILE]
    files = profile.source_files
    source = files[0] + (f" and {len(files) - 1} more file(s)" if len(files) > 1 else "")
    try:
        r = _roofline(ss["prof_model"], ss["prof_gpu"], ss["prof_tp"])
        ss[keys.CANDIDATE] = calibrate(r, profile_points(profile), source=source)
        ss[keys.CALIBRATION_ERROR] = None
    except InvalidInputError as exc:
        ss[keys.CANDIDATE], ss[keys.CALIBRATION_ERROR] = None, str(exc)


def _set_sidebar(cal: Calibration) -> None:
    ss["model"], ss["gpu"], ss["tp"] = cal.model, cal.gpu, int(cal.tensor_parallel_size)


def _metadata(profile) -> None:
    engine = " ".join(x for x in (profile.engine, profile.engine_version) if x) or "not stated"
    rows = [("model", profile.model or "not stated"), ("GPU", profile.gpu or "not stated"),
            ("tensor_parallel_size", profile.tensor_parallel_size or "not stated"), ("engine", engine),
            ("format", profile.source_format), ("load points", len(profile.load_points)),
            ("files", ", ".join(profile.source_files))]
    st.markdown("| run | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows))
    for note in profile.notes:
        st.caption(f"Note: {note}")


def _curves(profile) -> None:
    frame = pa.profile_frame(profile)
    scn = state.computed().scenario
    ttft_t = scn.ttft_p99_ms / 1e3 if scn.ttft_p99_ms else None
    tpot_t = scn.tpot_p99_ms / 1e3 if scn.tpot_p99_ms else None
    knee = pa.measured_knee(frame)
    slo = pa.slo_point(frame, ttft_target_s=ttft_t, tpot_target_s=tpot_t)
    goodput = pa.has_goodput(frame)

    st.subheader("Load points")
    st.dataframe(pa.display_table(frame).round(2), hide_index=True, key="prof_table")

    st.subheader("Measured curves")
    axes = pa.load_axes(frame)
    if ss.get("prof_axis") not in axes:
        ss.pop("prof_axis", None)
    axis = st.radio("Plot against", axes, format_func=lambda a: pa.LOAD_AXES[a].split(" [")[0].split(" =")[0],
                    horizontal=True, key="prof_axis",
                    help="only axes on which every load point has a distinct finite value (a rate of inf "
                         "— all requests at once — cannot be placed on a rate axis)")
    c1, c2, c3 = st.columns(3)
    if knee is None:
        c1.metric("Measured knee", "—", help="needs two load points with throughput and TPOT")
    else:
        c1.metric("Measured knee [batch B]", f"{knee.batch_size:,.1f}" if knee.reached else
                  f"≥ {knee.batch_size:,.1f} (not reached)",
                  help=f"{knee.output_tokens_per_s:,.0f} output tok/s at that load")
    if slo.point is None:
        c2.metric("SLO point", "none meets the targets" if (ttft_t or tpot_t) else "no target")
    else:
        row = frame[frame["point"] == slo.point].iloc[0]
        c2.metric("SLO point (largest load meeting p99 targets)", row["label"],
                  help=f"B = {row['batch_size']:.1f}")
        c3.metric("Output at the SLO point [tok/s]", f"{row['output_tokens_per_s']:,.0f}")
        if goodput and np.isfinite(row["request_goodput_per_s"]):
            c3.metric("Goodput at the SLO point [req/s]", f"{row['request_goodput_per_s']:,.2f}")
    st.plotly_chart(profile_charts.throughput_chart(
        frame, axis, knee_point=knee.point if knee else None, knee_reached=bool(knee and knee.reached),
        slo_point=slo.point, goodput=goodput), key="prof_throughput_chart")
    if not goodput:
        st.caption("This file reports no goodput (vLLM writes `request_goodput` with `--goodput ttft:MS tpot:MS`; "
                   "AIPerf with `--goodput`).")
    for metric, stat in (("TTFT", slo.ttft_stat), ("TPOT", slo.tpot_stat)):
        if stat is None:
            st.caption(f"The file has no {metric} percentile at every load point: the {metric} target is not checked.")
        elif stat != "p99":
            st.caption(f"The file has no p99 {metric}: the target is checked on its {stat}.")
    l1, l2 = st.columns(2)
    l1.plotly_chart(profile_charts.latency_chart(frame, axis, "ttft", target_s=ttft_t), key="prof_ttft_chart")
    l2.plotly_chart(profile_charts.latency_chart(frame, axis, "tpot", target_s=tpot_t), key="prof_tpot_chart")
    shown = slo.point if slo.point is not None else (knee.point if knee else int(frame["point"].iloc[-1]))
    widgets.show_math("Little's-law batch", ex.math_littles_law(frame, shown))
    if knee is not None:
        widgets.show_math("measured knee", ex.math_knee(knee))
    widgets.show_math("SLO point", ex.math_slo(frame, slo))


def _calibration_section(profile) -> None:
    st.subheader("Calibrate the roofline on this profile")
    src = ss.get(keys.PROFILE_FROM, {})
    c1, c2, c3 = st.columns([3, 2, 1])
    c1.selectbox("Model", state.model_options(), key="prof_model",
                 help="from the profile" if src.get("model") else "the profile's model is not in the catalog: "
                 "the sidebar's model")
    c2.selectbox("GPU", state.gpu_options(), key="prof_gpu",
                 help="from the profile" if src.get("gpu") else "the profile names no catalog GPU: the sidebar's GPU")
    c3.number_input("tensor_parallel_size", 1, 1024, key="prof_tp",
                    help="from the profile" if src.get("tp") else "the profile states none: the sidebar's")
    st.caption("Confirm what the run was measured on: " + ", ".join(
        f"{k} {'from the profile' if src.get(k) else 'from the sidebar (the profile does not say)'}"
        for k in ("model", "gpu", "tp")) + ". Weights and KV cache in the model's own dtype.")
    st.button("Calibrate", key="prof_calibrate", type="primary", on_click=_calibrate)
    if ss.get(keys.CALIBRATION_ERROR):
        st.error(f"Cannot calibrate: {ss[keys.CALIBRATION_ERROR]}")
    cal: Calibration | None = ss.get(keys.CANDIDATE)
    if cal is None:
        return
    m = st.columns(4)
    m[0].metric("compute efficiency", f"{cal.compute_efficiency:.3f}")
    m[1].metric("memory efficiency", f"{cal.memory_efficiency:.3f}")
    m[2].metric("step overhead [ms]", f"{cal.step_overhead_s * 1e3:.2f}")
    m[3].metric("median |error|", f"{cal.median_abs_error:.1%}")
    try:
        r = _roofline(cal.model, cal.gpu, cal.tensor_parallel_size)
        overlay = pa.prediction_overlay(r, profile_points(profile), cal)
    except InvalidInputError as exc:
        st.error(str(exc))
        return
    st.caption(f"{cal.model} on {cal.gpu} × TP {cal.tensor_parallel_size}, {cal.points} load points; the default "
               f"roofline's median |error| was {float(np.median(np.abs(overlay['default_error']))):.1%}.")
    st.plotly_chart(profile_charts.overlay_chart(overlay), key="prof_overlay_chart")
    widgets.show_math("fitted TPOT", ex.math_fitted_tpot(cal, overlay, r))
    b1, b2, b3 = st.columns(3)
    b1.button("Use this calibration", key="prof_use_cal", type="primary", on_click=perf.use_calibration, args=(cal,))
    b2.download_button("Download the calibration (JSON)", cal.to_json() + "\n", file_name="calibration.json",
                       mime="application/json", key="prof_cal_download", on_click="ignore")
    sc = state.computed().scenario
    if (sc.model, sc.gpu, sc.tensor_parallel_size) != (cal.model, cal.gpu, cal.tensor_parallel_size):
        b3.button(f"Set the sidebar to {cal.gpu} × TP {cal.tensor_parallel_size}", key="prof_set_sidebar",
                  on_click=_set_sidebar, args=(cal,),
                  help=f"model {cal.model}, GPU {cal.gpu}, tensor_parallel_size {cal.tensor_parallel_size}")


def _in_force_section() -> None:
    st.subheader("Calibration in force")
    _, source = perf.efficiencies(state.computed())
    st.markdown(f"Every timed page uses: **{source}**.")
    active = ss.get(keys.CALIBRATION) is not None or bool(ss.get(keys.CALIBRATION_PARAM))
    st.button("Back to the datasheet roofline", key="prof_back", on_click=perf.use_calibration, args=(None,),
              disabled=not active)
    saved = st.file_uploader("Use a saved calibration (JSON)", type=["json"], key="prof_cal_upload")
    if saved is None:
        return
    try:
        if saved.size > MAX_PROFILE_BYTES:
            raise InvalidInputError(f"{saved.name}: file size", f"{saved.size} bytes", "a small JSON file")
        loaded = Calibration.from_json(saved.getvalue())
    except InvalidInputError as exc:
        st.error(f"{saved.name}: {exc}")
        return
    st.success(f"{saved.name}: {loaded.model} on {loaded.gpu} × TP {loaded.tensor_parallel_size} — compute "
               f"{loaded.compute_efficiency:.3f}, memory {loaded.memory_efficiency:.3f}, overhead "
               f"{loaded.step_overhead_s * 1e3:.2f} ms, median |error| {loaded.median_abs_error:.1%}")
    st.button("Use the uploaded calibration", key="prof_use_saved", on_click=perf.use_calibration, args=(loaded,))


def render() -> None:
    """Draw the page."""
    st.title("Measured profiles")
    st.caption("Upload one benchmark run or several files of one sweep: `vllm bench serve` / `benchmark_serving.py "
               "--save-result`, GuideLLM, GenAI-Perf / AIPerf, LLMPerf, or the generic CSV/JSON "
               "(docs/profile-formats.md §9). Measured data beats formulas: calibrate the roofline on it.")
    uploads = st.file_uploader("Benchmark files", accept_multiple_files=True, key="prof_files",
                               type=["json", "jsonl", "csv"])
    _read_uploads(uploads or [])
    if ss.get(keys.PROFILE_ERROR):
        kept = " The profile loaded before is still shown." if ss.get(keys.PROFILE) is not None else ""
        st.error(f"Could not read the upload — {ss[keys.PROFILE_ERROR]}.{kept}")
    profile = ss.get(keys.PROFILE)
    if profile is None:
        st.info("No profile loaded yet. Drop one or more benchmark files above.")
    else:
        _defaults_for(profile)
        st.subheader("Run")
        _metadata(profile)
        _curves(profile)
        _calibration_section(profile)
    _in_force_section()


render()
