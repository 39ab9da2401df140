"""Every fixture config.json imports, with the fields that matter read correctly."""
from __future__ import annotations

import json

import pytest

from calculators.errors import InvalidInputError
from calculators.specs.catalog import load_models
from calculators.specs.hf_config import load_config_file, model_from_config, model_from_json_text
from tests.conftest import HF_CONFIGS, hf

FIXTURES = sorted(p.stem for p in HF_CONFIGS.glob("*.json"))


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_imports(name):
    m = hf(name)
    assert m.num_hidden_layers == len(m.layer_types) > 0
    assert m.num_attention_heads % m.num_key_value_heads == 0


def test_falcon_refinedweb_names():
    m = hf("tiiuae__falcon-40b")  # n_head 128, n_head_kv 8, n_layer 60, no intermediate_size (4 × hidden)
    assert (m.num_attention_heads, m.num_key_value_heads, m.num_hidden_layers) == (128, 8, 60)
    assert (m.head_dim, m.intermediate_size, m.gated_mlp, m.max_position_embeddings) == (64, 32768, False, 2048)
    assert m.attention_type == "GQA"


def test_llama4_text_config_and_chunked_layers():
    m = hf("meta-llama__Llama-4-Maverick-17B-128E-Instruct")
    assert (m.hidden_size, m.num_hidden_layers, m.num_experts, m.num_experts_per_tok) == (5120, 48, 128, 1)
    assert m.moe_layers == tuple(range(1, 48, 2))  # interleave_moe_layer_step 2
    assert m.layer_types.count("full_attention") == 12  # every 4th layer is global (NoPE)
    assert m.layer_types[3] == "full_attention" and m.attention_chunk_size == 8192


def test_gemma2_alternates_sliding_and_global():
    m = hf("google__gemma-2-9b-it")
    assert m.layer_types[:4] == ("sliding_attention", "full_attention") * 2
    assert (m.sliding_window, m.head_dim, m.tie_word_embeddings) == (4096, 256, True)


def test_gemma3_pattern_from_catalog():
    m = load_models()["google/gemma-3-27b-it"]  # sliding_window_pattern 6: 52 local + 10 global of 62
    assert m.layer_types.count("sliding_attention") == 52 and m.layer_types.count("full_attention") == 10
    assert m.layer_types[5] == "full_attention" and m.sliding_window == 1024


def test_gpt_oss_layer_types_and_mxfp4():
    m = hf("openai__gpt-oss-20b")
    assert m.layer_types.count("sliding_attention") == 12 and m.sliding_window == 128
    assert (m.num_experts, m.num_experts_per_tok, m.quantization) == (32, 4, "mxfp4-moe")


def test_deepseek_mla_fields():
    m = hf("deepseek-ai__DeepSeek-V3")
    assert m.is_mla and (m.kv_lora_rank, m.qk_rope_head_dim, m.q_lora_rank) == (512, 64, 1536)
    assert len(m.moe_layers) == 58 and m.moe_layers[0] == 3  # first_k_dense_replace = 3
    assert (m.num_shared_experts, m.shared_expert_intermediate_size, m.quantization) == (1, 2048, "fp8")


def test_qwen3_moe_every_layer():
    m = hf("Qwen__Qwen3-30B-A3B")
    assert len(m.moe_layers) == 48 and m.intermediate_size == 0 and m.moe_intermediate_size == 768


def test_catalog_entries_match_fixture_configs():
    """The catalog's copies of the fixture configs import to the same architecture."""
    cat = load_models()
    keys = ("hidden_size", "num_hidden_layers", "num_key_value_heads", "head_dim", "layer_types", "moe_layers",
            "vocab_size", "quantization", "kv_lora_rank")
    checked = 0
    for name in FIXTURES:
        fixture = hf(name)
        entry = next((m for m in cat.values() if fixture.id.lower() in [m.id.lower(), *map(str.lower, m.aliases)]),
                     None)
        if entry:
            checked += 1
            assert {k: getattr(entry, k) for k in keys} == {k: getattr(fixture, k) for k in keys}, name
    assert checked >= 25


@pytest.mark.parametrize("cfg, field", [
    ({"architectures": ["X"], "hidden_size": 64, "num_attention_heads": 6, "num_key_value_heads": 4,
      "num_hidden_layers": 2, "vocab_size": 10, "intermediate_size": 8, "max_position_embeddings": 8},
     "num_key_value_heads"),
    ({"architectures": ["X"], "hidden_size": -64, "num_attention_heads": 4, "num_hidden_layers": 2},
     "hidden_size"),
    ({"architectures": ["X"], "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 10**12},
     "num_hidden_layers"),
    ({"architectures": ["X"], "num_attention_heads": 4, "num_hidden_layers": 2}, "hidden_size"),
    ({"architectures": ["X"], "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
      "vocab_size": 10, "intermediate_size": 8, "max_position_embeddings": 8,
      "layer_types": ["full_attention", "linear_attention"]}, "layer_types"),
    ({"architectures": ["X"], "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
      "vocab_size": 10, "intermediate_size": 8, "max_position_embeddings": 8,
      "quantization_config": {"quant_method": "mystery"}}, "quantization_config.quant_method"),
])
def test_uninterpretable_config_names_the_field(cfg, field):
    with pytest.raises(InvalidInputError) as e:
        model_from_config(cfg, id="x")
    assert e.value.field == field


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", '{"hidden_size": NaN}', "\x00\xff garbage", "[" * 10_000])
def test_malformed_json_is_an_input_error(text):
    with pytest.raises(InvalidInputError):
        model_from_json_text(text)


def test_json_text_round_trip(tmp_path):
    cfg = json.loads((HF_CONFIGS / "Qwen__Qwen3-8B.json").read_text())
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    assert load_config_file(p).head_dim == 128
    with pytest.raises(InvalidInputError, match="model"):
        load_config_file(tmp_path / "missing.json")
