"""What a user reads: no internal vocabulary or repository paths on any page, no "None"/"nan" shown as a
value, and every sidebar input explained by a help tooltip."""
from __future__ import annotations

import pytest

from tests.app import helpers
from tests.words import INTERNAL

make_app = helpers.make_app
_clear_caches = helpers._clear_caches
PAGES = ["views/start.py", "views/overview.py", "views/kv_cache.py", "views/roofline.py", "views/latency_budget.py",
         "views/profiles.py", "views/fleet.py", "views/compare_gpus.py", "views/simulator.py", "views/accuracy.py",
         "views/catalog.py"]


def _texts(at) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "error", "warning", "success", "info", "title", "header", "subheader",
                 "text", "code"):
        out += [str(e.value) for e in getattr(at, kind)]
    out += [f"{m.label} {m.value} {m.proto.help}" for m in at.metric]
    out += [e.label for e in at.expander] + [f"{b.label} {b.help or ''}" for b in at.button]
    for d in at.dataframe:
        frame = d.value
        out += [str(c) for c in frame.columns]
        out += [str(v) for v in frame.select_dtypes(include=["object", "str"]).to_numpy().ravel()]
    return out


@pytest.mark.parametrize("page", PAGES)
def test_no_internal_words_or_empty_values(make_app, page):
    at = helpers.open_math(make_app(page))
    assert not at.exception
    texts = _texts(at)
    bad = [t for t in texts if INTERNAL.search(t)]
    assert not bad, bad[:3]
    shown = [m.value for m in at.metric]
    assert not [v for v in shown if v.strip().lower() in ("none", "nan", "-nan", "inf")], shown


def test_every_sidebar_input_has_a_help_tooltip(make_app):
    at = make_app()
    widgets = [*at.sidebar.selectbox, *at.sidebar.number_input, *at.sidebar.checkbox, *at.sidebar.text_input]
    missing = [w.label for w in widgets if not (w.help or "").strip()]
    assert not missing, missing


@pytest.mark.parametrize("page", ["views/overview.py", "views/kv_cache.py", "views/roofline.py"])
def test_jargon_figures_explain_themselves(make_app, page):
    at = make_app(page)
    jargon = ("TTFT", "TPOT", "KV cache", "max_num_seqs", "Knee", "Crossover", "Ridge", "concurrency")
    unexplained = [m.label for m in at.metric if any(j.lower() in m.label.lower() for j in jargon)
                   and not (m.proto.help or "").strip()]
    assert not unexplained, unexplained
