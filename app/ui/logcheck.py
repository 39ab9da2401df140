"""The pasted-log panel: what the log says beside what the calculators predict."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import state
from calculators.errors import InvalidInputError
from calculators.vllm.startup_log import comparison_rows, parse_vllm_log, scenario_updates


def show(text: str, ctx: state.Computed) -> None:
    try:
        log = parse_vllm_log(text)
    except InvalidInputError as exc:
        st.error(f"This does not look like a vLLM start-up log: {exc.allowed}.")
        return
    updates = scenario_updates(log)
    st.success(f"Read {log.recognised_lines} start-up line(s): vLLM {log.version} ({log.engine}); "
               f"version {log.version_range}.")
    st.write("Settings the log reveals:", {**log.settings, **updates})
    try:
        scratch_scn = ctx.scenario.model_copy(update={k: v for k, v in updates.items() if k != "kv_cache_memory_gib"})
        measured_scn = ctx.scenario.model_copy(update=updates)
    except Exception as exc:  # a value the scenario cannot hold
        st.warning(f"The log's settings could not be applied: {exc}")
        return
    for title, scn in (("Prediction from scratch (this page's model and GPU, the log's settings)", scratch_scn),
                       ("Prediction from the log's KV cache memory", measured_scn)):
        if title.endswith("memory") and "kv_cache_memory_gib" not in updates:
            continue
        doc = state.compute_detached(scn, ctx.model, ctx.gpu)
        st.markdown(f"**{title}**")
        if isinstance(doc, InvalidInputError):
            st.warning(str(doc))
            continue
        rows = comparison_rows(log, doc)
        if rows:
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key=f"cmp_{title[:20]}")
        st.code("\n".join(doc["vllm_lines"]), language=None, wrap_lines=True)
