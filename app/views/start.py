"""Start: the three tasks people come for, each a button into the right page with a filled-in example."""
from __future__ import annotations

import streamlit as st

from app.ui import state
from app.ui.examples import EXAMPLES, Example
from app.ui.inputs import unbound_params


def _apply(example: Example) -> None:
    """Button callback: put the example's inputs into the sidebar's widgets (before they are drawn)."""
    st.session_state.update(example.widget_values)


def _card(example: Example) -> None:
    with st.container(border=True):
        st.subheader(example.title)
        st.write(example.question)
        st.caption(example.summary)
        if st.button(example.button, key=f"start_{example.name}", type="primary", on_click=_apply,
                     args=(example,), width="stretch"):
            # keep the link's other parameters; the sidebar's widgets write their own back to the URL
            st.switch_page(example.page, query_params=unbound_params())


def render() -> None:
    """Draw the page."""
    ctx = state.computed()
    st.title("LLM serving capacity planner")
    st.write("How much GPU a model needs to serve your traffic, what vLLM will report at start-up, and what it "
             "costs — with the math and the public sources behind every number.")
    cols = st.columns(len(EXAMPLES))
    for col, example in zip(cols, EXAMPLES, strict=True):
        with col:
            _card(example)
    if ctx.doc is not None:
        st.caption(f"The sidebar holds your scenario ({ctx.doc['model']} on {ctx.doc['gpu']}): "
                   f"{ctx.doc['message']}. Every page reads it; the permalink at its foot brings it back.")


render()
