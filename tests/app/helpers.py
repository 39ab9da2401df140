"""Fixtures and helpers of the AppTest suite (imported by the test modules; not a conftest.py, so that
the top-level tests keep their `from conftest import ...`)."""
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

ENTRY = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
LOG_70B_TP4 = """\
INFO 09-10 12:00:01 [gpu_model_runner.py:2007] Model loading took 32.8894 GiB and 30.1 seconds
INFO 09-10 12:00:40 [gpu_worker.py:298] Available KV cache memory: 32.06 GiB
INFO 09-10 12:00:41 [kv_cache_utils.py:864] GPU KV cache size: 420,208 tokens
INFO 09-10 12:00:41 [kv_cache_utils.py:868] Maximum concurrency for 131,072 tokens per request: 3.21x
"""


def _clear_all() -> None:
    from app.ui import memo
    st.cache_data.clear()
    st.cache_resource.clear()
    memo.clear_shared()


@pytest.fixture(autouse=True)
def _clear_caches():
    _clear_all()
    yield
    _clear_all()


OVERVIEW = "views/overview.py"
START = "views/start.py"


@pytest.fixture
def make_app():
    """``make(page=..., **url_params)``: the app opened on ``page`` (default: the Overview; ``START`` is the
    landing page) with those URL parameters."""
    def make(page: str = OVERVIEW, **params: str) -> AppTest:
        at = AppTest.from_file(ENTRY, default_timeout=30)
        for k, v in params.items():
            at.query_params[k] = v
        return at.switch_page(page).run()
    return make


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def open_math(at: AppTest) -> AppTest:
    """Open every "Show the math" expander of the page (as a click does) and rerun."""
    from app.ui.widgets import MATH_PREFIX, math_key
    for e in at.expander:
        if e.label.startswith(MATH_PREFIX):
            at.session_state[math_key(e.label.removeprefix(MATH_PREFIX))] = True
    return at.run()


def permalink(at: AppTest) -> str:
    """The permalink's URL as the sidebar shows it."""
    return next(c.value.strip("`") for c in at.sidebar.caption if c.value.startswith("`/?v=1"))
