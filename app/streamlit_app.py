"""Entry point: the scenario inputs in the sidebar (bound to the URL) and the navigation."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app.ui import inputs, state  # noqa: E402
from calculators.catalog import CatalogError  # noqa: E402

st.set_page_config(page_title="LLM capacity planner", page_icon=":material/memory:", layout="wide")

try:
    scenario, placeholders = inputs.sidebar()
except CatalogError as exc:
    st.error(f"The spec catalog could not be loaded: {exc}")
    st.stop()

ctx = state.compute(scenario)
st.session_state["_computed"] = ctx
inputs.show_input_error(ctx, placeholders)
inputs.show_permalink(ctx)

HERE = Path(__file__).resolve().parent
page = st.navigation([
    st.Page(HERE / "views" / "overview.py", title="Overview", icon=":material/dashboard:", default=True),
    st.Page(HERE / "views" / "kv_cache.py", title="KV cache & concurrency", icon=":material/stacked_bar_chart:",
            url_path="kv_cache"),
    # pages: performance (issue 4)
    # pages: measured profiles (issue 5)
    # pages: fleet (issue 6)
    # pages: simulator (issue 7)
    st.Page(HERE / "views" / "catalog.py", title="Catalog", icon=":material/list:", url_path="catalog"),
])
page.run()
