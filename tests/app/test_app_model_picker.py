"""The sidebar's model picker: names it answers to, a model added by its Hub id (from a local stand-in for
the Hub, see tests/specs/test_hf_hub.py) or by its config.json, and failures that keep the scenario."""
from __future__ import annotations

import json

from tests.app import helpers
from tests.app.helpers import metrics
from tests.specs.test_hf_hub import TINY, TINY_KV_BYTES_PER_TOKEN, HubHandler, hub  # noqa: F401

make_app = helpers.make_app
_clear_caches = helpers._clear_caches
KV = "KV cache per token per GPU [bytes]"


def test_picker_offers_the_names_people_type(make_app):
    at = make_app()
    options = at.selectbox(key="model").options
    # the selectbox searches its options: the Instruct variant and the older Meta- name are there, after the id
    i = options.index("meta-llama/Llama-3.1-70B")
    assert options[i + 1:i + 4] == ["meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Meta-Llama-3.1-70B",
                                    "meta-llama/Meta-Llama-3.1-70B-Instruct"]
    assert "llama-3.1-70b" not in options  # short aliases would only repeat the id in lower case


def test_picking_an_instruct_variant_sizes_the_base_model_and_serves_the_name(make_app):
    at = make_app()
    at.selectbox(key="model").select("meta-llama/Llama-3.1-70B-Instruct")
    at.number_input(key="tp").set_value(4).run()
    assert not at.exception and not at.error
    assert metrics(at)[KV] == f"{2 * 8 // 4 * 128 * 2 * 80:,}"  # 8 KV heads over TP 4, 128 dims, bf16, 80 layers
    assert any("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4" in t.value for t in at.text)


def test_hub_id_is_fetched_picked_and_computed(make_app, hub):  # noqa: F811
    at = make_app()
    at.text_input(key="model_hub_id").input("acme/tiny-llama")
    at.button(key="model_fetch").click().run()
    assert not at.exception and not at.error
    assert at.selectbox(key="model").value == "acme/tiny-llama"
    assert any("Added acme/tiny-llama" in s.value for s in at.sidebar.success)
    assert metrics(at)[KV] == f"{TINY_KV_BYTES_PER_TOKEN:,}"  # 2 × 4 layers × 2 KV heads × 32 × 2 B
    assert "cmodel=" in helpers.permalink(at)  # the link carries the config, so it opens offline too


def test_catalog_name_in_the_hub_box_just_picks_it(make_app, hub):  # noqa: F811
    at = make_app()
    at.text_input(key="model_hub_id").input("llama-3.1-70b-instruct")
    at.button(key="model_fetch").click().run()
    assert at.selectbox(key="model").value == "meta-llama/Llama-3.1-70B"
    assert HubHandler.requests == []  # never reached the network


def test_unknown_hub_id_is_a_message_and_keeps_the_scenario(make_app, hub):  # noqa: F811
    at = make_app(model="Qwen/Qwen3-8B")
    before = metrics(at)[KV]
    at.text_input(key="model_hub_id").input("acme/no-such-model")
    at.button(key="model_fetch").click().run()
    assert not at.exception
    err = " ".join(e.value for e in at.sidebar.error)
    assert "acme/no-such-model could not be added" in err and "unchanged" in err
    assert at.selectbox(key="model").value == "Qwen/Qwen3-8B" and metrics(at)[KV] == before


def test_uploaded_config_is_named_by_name_or_path(make_app):
    at = make_app()
    cfg = {**TINY, "_name_or_path": "acme/from-upload"}
    at.file_uploader(key="model_upload").upload("config.json", json.dumps(cfg).encode(), "application/json").run()
    assert not at.exception
    assert at.selectbox(key="model").value == "acme/from-upload"
    assert metrics(at)[KV] == f"{TINY_KV_BYTES_PER_TOKEN:,}"


def test_uploaded_config_without_a_name_is_named_by_its_shape(make_app):
    at = make_app()
    at.file_uploader(key="model_upload").upload("config.json", json.dumps(TINY).encode(), "application/json").run()
    assert at.selectbox(key="model").value == "uploaded/llama-4L"  # not "config"


def test_unreadable_config_is_a_message_and_keeps_the_scenario(make_app):
    at = make_app()
    at.file_uploader(key="model_upload").upload("config.json", b"{not json", "application/json").run()
    assert not at.exception
    assert any("config.json could not be read" in e.value for e in at.sidebar.error)
    assert at.selectbox(key="model").value == "meta-llama/Llama-3.1-8B"


def test_link_with_a_hub_id_fetches_it(make_app, hub):  # noqa: F811
    at = make_app(model="acme/tiny-llama")
    assert not at.exception and not at.sidebar.warning
    assert at.selectbox(key="model").value == "acme/tiny-llama"
    assert metrics(at)[KV] == f"{TINY_KV_BYTES_PER_TOKEN:,}"


def test_link_with_an_unknown_hub_id_says_so_and_uses_the_default(make_app, hub):  # noqa: F811
    at = make_app(model="acme/no-such-model")
    assert not at.exception
    assert any("model='acme/no-such-model' ignored" in w.value for w in at.sidebar.warning)
    assert at.selectbox(key="model").value == "meta-llama/Llama-3.1-8B"
