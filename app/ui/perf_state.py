"""The performance summary shared by the Overview, Roofline and Latency-budget pages, memoised (see
:mod:`app.ui.memo`) so that a rerun, another page or another session with the same inputs does not
compute it twice."""
from __future__ import annotations

import streamlit as st

from app.ui.memo import memoised
from app.ui.state import Computed
from calculators.errors import InvalidInputError
from calculators.perf.curves import KNEE_THRESHOLD
from calculators.perf.roofline import Roofline
from calculators.report import explain_perf


def page_model(ctx: Computed, needs: str) -> Roofline | None:
    """The performance model for a timed page, with a caption saying which one is in force; ``None``
    (after saying why) when there is none or the configuration does not fit."""
    from app.ui import perf
    r, source = perf.performance_model(ctx)
    if r is None:
        if source:
            st.info(source)
        return None
    st.caption(f"Performance model in force: {source}. {ctx.doc['model']} on {ctx.doc['gpu']} · TP "
               f"{r.tensor_parallel_size} × PP {r.pipeline_parallel_size} · {r.dtype_used}")
    if not ctx.doc["fits"]:
        st.error(f"{needs} needs a configuration that fits — {ctx.doc['message']}")
        return None
    return r


def lengths(ctx: Computed) -> tuple[int, int]:
    """The scenario's input and output lengths as whole tokens (as ``llmcap perf`` takes them)."""
    s = ctx.scenario
    return max(1, int(round(s.input_len))), max(1, int(round(s.output_len)))


def targets_s(ctx: Computed) -> tuple[float | None, float | None]:
    """The scenario's p99 TTFT and TPOT targets [s] (``None``: no target)."""
    s = ctx.scenario
    return (None if s.ttft_p99_ms is None else s.ttft_p99_ms / 1e3,
            None if s.tpot_p99_ms is None else s.tpot_p99_ms / 1e3)


def summary(ctx: Computed, r: Roofline, *, input_len: int | None = None, output_len: int | None = None,
            threshold: float = KNEE_THRESHOLD) -> dict | InvalidInputError:
    """:func:`calculators.report.explain_perf.performance_summary` for the scenario (lengths default to its own)."""
    i, o = lengths(ctx)
    i, o = input_len or i, output_len or o
    ttft, tpot = targets_s(ctx)
    advice = (ctx.doc or {}).get("max_num_seqs_advice")
    kv = advice["recommended_max_num_seqs"] if advice and (i, o) == lengths(ctx) else None
    key = (ctx.scenario, ctx.model, ctx.gpu, r.efficiencies, r.max_num_batched_tokens, i, o, threshold, kv)

    def compute() -> dict | InvalidInputError:
        try:
            return explain_perf.performance_summary(r, ctx.result, input_len=i, output_len=o, ttft_target_s=ttft,
                                                    tpot_target_s=tpot, threshold=threshold, kv_max_num_seqs=kv)
        except InvalidInputError as exc:
            return exc
    return memoised("perf", key, compute)


def keep_default(key: str, default) -> None:
    """Seed a page widget with a default that follows the scenario: reset it when the default changes
    (or the widget was not rendered last run), keep the user's value otherwise."""
    mark = f"_default_{key}"
    if key not in st.session_state or st.session_state.get(mark) != default:
        st.session_state[key] = default
        st.session_state[mark] = default
