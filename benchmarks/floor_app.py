"""The lightest page ``load.py`` can drive: one ``tensor_parallel_size`` input bound to the URL, nothing else.

    python benchmarks/load.py --app benchmarks/floor_app.py [--sessions 50] [--think-s 10]

Run against it, ``load.py`` measures what Streamlit itself costs a browser and the server per change
(the floor under any page of the planner), so that a load figure can be read as "the planner's pages"
versus "any Streamlit page on this machine".
"""
import streamlit as st

st.sidebar.number_input("tensor_parallel_size", 1, 1024, 1, key="tp", bind="query-params")
