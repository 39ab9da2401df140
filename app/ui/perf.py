"""The performance model every timed page uses: the roofline, or the roofline calibrated on a
measured profile when the session has chosen one ("use this calibration" on Measured profiles).

Contract: ``st.session_state[keys.CALIBRATION]`` holds a :class:`calculators.perf.calibration.Calibration`
(or nothing); ``st.session_state[keys.CALIBRATION_PARAM]`` its compact form, which the permalink
carries as ``cal=`` and the entry point restores.
"""
from __future__ import annotations

import streamlit as st

from app.ui import keys
from app.ui.state import Computed
from calculators.errors import InvalidInputError
from calculators.perf.calibration import Calibration
from calculators.perf.roofline import Efficiencies, Roofline


def use_calibration(cal: Calibration | None) -> None:
    """Switch every page to this calibration (``None``: back to the datasheet roofline)."""
    st.session_state[keys.CALIBRATION] = cal
    st.session_state[keys.CALIBRATION_PARAM] = cal.to_param() if cal else None


def efficiencies(ctx: Computed) -> tuple[Efficiencies, str]:
    """The constants in force and where they come from."""
    cal = st.session_state.get(keys.CALIBRATION)
    if cal is not None:
        return cal.efficiencies, (f"calibrated on {cal.source or 'a measured profile'} "
                                  f"({cal.model} on {cal.gpu}, median |error| {cal.median_abs_error:.1%})")
    if ctx.scenario.calibration:
        try:
            return Calibration.efficiencies_from_param(ctx.scenario.calibration), "calibration from the link"
        except InvalidInputError:
            pass
    from calculators.perf.coefficients import load_fit
    from calculators.report.explain_fleet import fitted_runs
    runs = f": for the {ctx.gpu.id}, {fitted_runs(ctx.gpu)}" if ctx.gpu is not None else ""
    return Efficiencies(), (f"datasheet roofline with coefficients fitted on public measurements per GPU family "
                            f"and engine{runs} ({load_fit().fitted:%Y-%m-%d}; see Model accuracy)")


#: Why the timed pages have no figures for these data-parallel ranks (the capacity pages give one rank's).
DATA_PARALLEL_NOTE = ("Timed figures cover one engine, or data-parallel ranks of one GPU each with the experts spread "
                      "over them (a mixture-of-experts model, tensor_parallel_size 1, enable_expert_parallel: the "
                      "Fleet planner's \"DP attention\"). These data-parallel ranks are engines of their own: set "
                      "data_parallel_size 1 to time one; the KV-cache figures are one rank's.")


def performance_model(ctx: Computed) -> tuple[Roofline | None, str]:
    """The scenario's performance model and a sentence saying which one it is; ``(None, why)`` where there is
    none (``why`` may be empty: an error the page shows already)."""
    if ctx.error is not None or ctx.model is None or ctx.doc is None:
        return None, ""
    if not ctx.scenario.timed(ctx.model):
        return None, DATA_PARALLEL_NOTE
    ranks = ctx.scenario.attention_ranks(ctx.model)
    s = ctx.doc["settings"]
    eff, source = efficiencies(ctx)
    try:  # data-parallel attention: the replica is the ranks' GPUs (the capacity is one rank's)
        r = Roofline(ctx.model, ctx.gpu, tensor_parallel_size=s["tensor_parallel_size"] * ranks,
                     pipeline_parallel_size=s["pipeline_parallel_size"], quantization=s["quantization"],
                     dtype=s["dtype"], kv_cache_dtype=s["kv_cache_dtype"], efficiencies=eff,
                     max_num_batched_tokens=s["max_num_batched_tokens"], enable_dp_attention=ranks > 1)
    except InvalidInputError as exc:
        st.error(str(exc))
        return None, ""
    return r, source
