"""The pasted-log panel: what the log says beside what the calculators predict, a warning when the log is
of another setup, and buttons that switch the scenario to the log's setup or apply its numbers."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import state
from app.ui.inputs import widget_values
from calculators.errors import InvalidInputError
from calculators.specs.catalog import load_gpus
from calculators.vllm.startup_log import (
    LogMismatch,
    VllmLog,
    comparison_rows,
    log_mismatches,
    parse_vllm_log,
    scenario_updates,
)

_OTHER_SETUP = ("model", "weights", "gpu")
COLUMNS = {"quantity": "Quantity", "log": "Printed by vLLM", "predicted": "Predicted", "difference": "Difference",
           "difference_pct": "Difference [%]"}


def _apply(values: dict) -> None:
    """Button callback: set the sidebar's widgets (before they are drawn on the rerun)."""
    st.session_state.update(values)


def _switch_fields(found: list[LogMismatch]) -> dict:
    """Scenario fields that make the scenario the log's setup: its model (where the picker has it) and GPU."""
    out = {}
    for m in found:
        if m.field == "model" and m.suggestion in state.model_options():
            out["model"] = m.suggestion
        elif m.field == "gpu" and m.suggestion:
            out["gpu"] = m.suggestion
    return out


def _warn(found: list[LogMismatch], updates: dict) -> None:
    other = [m for m in found if m.field in _OTHER_SETUP]
    if not other:
        return
    st.warning("This log looks like another setup: " + "; ".join(m.message for m in other) + ".")
    switch = _switch_fields(found)
    if switch:
        names = " and ".join(f"{k} {v}" for k, v in switch.items())
        st.button(f"Switch the scenario to {names} (with the log's flags)", key="log_switch", on_click=_apply,
                  args=(widget_values({**{k: v for k, v in updates.items() if k != "kv_cache_memory_gib"},
                                       **switch}),))


def _use_numbers(log: VllmLog, updates: dict) -> None:
    flags = ", ".join(f"{k}={v}" for k, v in updates.items() if k != "kv_cache_memory_gib")
    kv = updates.get("kv_cache_memory_gib")
    what = (f"the printed KV cache memory ({kv:g} GiB per GPU)" if kv else "") + (
        f"{' and ' if kv and flags else ''}the flags {flags}" if flags else "")
    if what:
        st.button("Use these numbers", key="log_use", type="primary", on_click=_apply, args=(widget_values(updates),),
                  help=f"sets {what} in the sidebar; every page, including the max_num_seqs advice, follows")


def _comparisons(log: VllmLog, updates: dict, ctx: state.Computed) -> None:
    scratch = {k: v for k, v in updates.items() if k != "kv_cache_memory_gib"}
    for title, fields in (("Prediction from scratch (this page's model and GPU, the log's settings)", scratch),
                          ("Prediction from the log's KV cache memory", updates)):
        if title.endswith("memory") and "kv_cache_memory_gib" not in updates:
            continue
        try:
            scn = ctx.scenario.model_copy(update=fields)
        except Exception as exc:  # a value the scenario cannot hold
            st.warning(f"The log's settings could not be applied: {exc}")
            return
        doc = state.compute_detached(scn, ctx.model, ctx.gpu)
        st.markdown(f"**{title}**")
        if isinstance(doc, InvalidInputError):
            st.warning(str(doc))
            continue
        rows = comparison_rows(log, doc)
        if rows:
            st.dataframe(pd.DataFrame(rows).rename(columns=COLUMNS), hide_index=True, width="stretch",
                         key=f"cmp_{title[:20]}", column_config={
                             c: st.column_config.NumberColumn(format="%.2f") for c in list(COLUMNS.values())[1:]})
        st.code("\n".join(doc["vllm_lines"]), language=None, wrap_lines=True)


def show(text: str, ctx: state.Computed) -> None:
    try:
        log = parse_vllm_log(text)
    except InvalidInputError as exc:
        st.error(f"This does not look like a vLLM start-up log: {exc.allowed}.")
        return
    updates = scenario_updates(log)
    st.success(f"Read {log.recognised_lines} start-up line(s): vLLM {log.version} ({log.engine}); "
               f"version {log.version_range}.")
    found = log_mismatches(log, ctx.doc, model_ids=(ctx.model.id, *ctx.model.aliases),
                           gpu_memory_gib=ctx.gpu.memory_gib, gpus=load_gpus())
    _warn(found, updates)
    flags = [m.message for m in found if m.field not in _OTHER_SETUP]
    if flags:
        st.caption("The log's flags differ from the sidebar's (the predictions below use the log's): "
                   + "; ".join(flags) + ".")
    _use_numbers(log, updates)
    _comparisons(log, updates, ctx)
