"""The landing page: a default scenario that fits, and the three tasks, each a button into its page."""
from __future__ import annotations

import pytest

from app.ui.examples import EXAMPLES
from tests.app import helpers
from tests.app.helpers import START

make_app = helpers.make_app
_clear_caches = helpers._clear_caches


def test_landing_has_three_tasks_and_no_error(make_app):
    at = make_app(START)
    assert not at.exception and not at.error
    assert at.title[0].value == "LLM serving capacity planner"
    assert [b.label for b in at.main.button] == ["Plan a fleet", "Build a quote", "Check vLLM flags"]
    # the default scenario (Llama-3.1-8B on one H100) fits, and the page says so
    assert any("fits" in c.value and "Llama-3.1-8B" in c.value for c in at.caption)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_each_task_opens_its_page_with_the_example(make_app, example):
    at = make_app(START)
    at.number_input(key="rate").set_value(3.0).run()  # a value of the user's that the example replaces
    at.button(key=f"start_{example.name}").click().run(timeout=120)
    assert not at.exception
    s = example.scenario
    assert at.selectbox(key="model").value == s.model and at.selectbox(key="gpu").value == s.gpu
    assert at.number_input(key="rate").value == s.request_rate_per_s
    assert at.number_input(key="tp").value == s.tensor_parallel_size
    title = {"views/fleet.py": "Fleet planner", "views/kv_cache.py": "KV cache & concurrency"}[example.page]
    assert at.title[0].value == title


def test_examples_name_catalog_specs_and_fit():
    # every example's model and GPU are catalog ids (not aliases a selectbox would not find), and it fits
    from calculators.specs.catalog import load_gpus, load_models
    from calculators.vllm.capacity import vllm_capacity
    for e in EXAMPLES:
        s = e.scenario
        assert s.model in load_models() and s.gpu in load_gpus()
        assert vllm_capacity(load_models()[s.model], gpu=load_gpus()[s.gpu], **s.capacity_kwargs()).fits


def test_a_shared_link_to_the_start_page_opens_on_its_numbers(make_app):
    at = make_app(START, model="Qwen/Qwen3-8B", tp="2")
    assert not at.exception
    assert at.title[0].value == "Overview"
    assert at.selectbox(key="model").value == "Qwen/Qwen3-8B" and at.number_input(key="tp").value == 2
    # only the session's first open is redirected: the Start page stays reachable
    assert "_opened_with_scenario" not in at.session_state


def test_an_example_keeps_the_links_own_parameters_and_leaves_the_fleet_inputs(make_app):
    at = make_app(START)
    at.button(key="start_flags").click().run(timeout=120)
    assert not at.exception and at.title[0].value == "KV cache & concurrency"
    at.switch_page("views/fleet.py").run(timeout=120)
    at.checkbox(key="fleet_conservative").check().run(timeout=120)
    at.switch_page("views/start.py").run()
    at.button(key="start_fleet").click().run(timeout=120)  # the fleet page's bound inputs do not block it
    assert not at.exception and at.title[0].value == "Fleet planner"
    assert at.checkbox(key="fleet_conservative").value is True
