"""Entry point: the scenario inputs in the sidebar (bound to the URL) and the navigation."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.ui import inputs, keys, state
from app.ui.compat import guard_integer_inputs_from_non_finite_urls
from calculators.specs.catalog import CatalogError

guard_integer_inputs_from_non_finite_urls()
st.set_page_config(page_title="LLM capacity planner", page_icon=":material/memory:", layout="wide")

try:
    scenario, placeholders = inputs.sidebar()
except CatalogError as exc:
    st.error(f"The spec catalog could not be loaded: {exc}")
    st.stop()

ctx = state.compute(scenario)
st.session_state[keys.COMPUTED] = ctx
inputs.show_input_error(ctx, placeholders)
inputs.show_permalink(ctx)

HERE = Path(__file__).resolve().parent
OVERVIEW = st.Page(HERE / "views" / "overview.py", title="Overview", icon=":material/dashboard:", url_path="overview")
page = st.navigation([
    st.Page(HERE / "views" / "start.py", title="Start", icon=":material/home:", default=True),
    OVERVIEW,
    st.Page(HERE / "views" / "kv_cache.py", title="KV cache & concurrency", icon=":material/stacked_bar_chart:",
            url_path="kv_cache"),
    st.Page(HERE / "views" / "roofline.py", title="Roofline & batch size", icon=":material/show_chart:",
            url_path="roofline"),
    st.Page(HERE / "views" / "latency_budget.py", title="Latency budget", icon=":material/timer:",
            url_path="latency_budget"),
    st.Page(HERE / "views" / "profiles.py", title="Measured profiles", icon=":material/speed:", url_path="profiles"),
    st.Page(HERE / "views" / "fleet.py", title="Fleet planner", icon=":material/dns:", url_path="fleet"),
    st.Page(HERE / "views" / "compare_gpus.py", title="Compare GPUs", icon=":material/compare:", url_path="compare"),
    st.Page(HERE / "views" / "simulator.py", title="Batching simulator", icon=":material/tune:", url_path="simulator"),
    st.Page(HERE / "views" / "accuracy.py", title="Model accuracy", icon=":material/fact_check:", url_path="accuracy"),
    st.Page(HERE / "views" / "catalog.py", title="Catalog", icon=":material/list:", url_path="catalog"),
])
if st.session_state.pop(keys.OPENED_WITH_SCENARIO, False) and page.url_path == "":
    # a shared link to the start page (older permalinks pointed there) opens on its numbers
    st.switch_page(OVERVIEW, query_params=inputs.unbound_params())
from app.ui.errors import run_page  # noqa: E402

run_page(page)
