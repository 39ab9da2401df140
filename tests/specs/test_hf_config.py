"""Every fixture config.json imports, with the fields that matter read correctly."""
from __future__ import annotations

import json

import pytest

from calculators.errors import InvalidInputError
from calculators.memory.weights import weight_bytes_per_stage
from calculators.specs.catalog import load_models
from calculators.specs.hf_config import load_config_file, model_from_config, model_from_json_text
from calculators.units import GiB
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


# --- Gemma 3: fields left to transformers' defaults ------------------------------------------------------

def test_gemma3_27b_it_config_imports_with_transformers_defaults():
    """google/gemma-3-27b-it's real config.json (tests/fixtures/hf_configs/PROVENANCE_ADDED.md) omits vocab_size,
    max_position_embeddings and the layer pattern: Gemma3TextConfig's defaults (transformers v4.50.0) fill them.

    By hand: one token in one layer stores K and V, 16 KV heads × head_dim 128 × 2 bytes (bf16) each:
    2 × 16 × 128 × 2 = 8,192 B. Layer i is global iff (i + 1) % 6 == 0 (sliding_window_pattern 6):
    i = 5, 11, …, 59 → 10 full-attention layers and 62 − 10 = 52 sliding-window layers (window 1024).
    Per token, every layer counted: 62 × 8,192 = 507,904 B; full layers 10 × 8,192 = 81,920 B, windowed
    layers 52 × 8,192 = 425,984 B but only for the last 1,024 tokens of a sequence. A 32,768-token
    sequence: 32,768 × 81,920 + 1,024 × 425,984 = 2,684,354,560 + 436,207,616 = 3,120,562,176 B.
    At TP 2 each rank keeps 8 KV heads: 507,904 / 2 = 253,952 B per token.
    """
    from calculators.memory.kv_cache import kv_bytes_per_sequence, kv_bytes_per_token

    m = hf("google__gemma-3-27b-it")
    assert m.id == "google/gemma-3-27b-it" and m.architecture == "Gemma3ForConditionalGeneration"
    assert (m.num_hidden_layers, m.num_key_value_heads, m.head_dim, m.sliding_window) == (62, 16, 128, 1024)
    assert m.layer_types.count("full_attention") == 10 and m.layer_types.count("sliding_attention") == 52
    assert [i for i, k in enumerate(m.layer_types) if k == "full_attention"] == list(range(5, 62, 6))
    assert int(kv_bytes_per_token(m)) == 62 * 8_192 == 507_904
    assert int(kv_bytes_per_token(m, tensor_parallel_size=2)) == 253_952
    assert int(kv_bytes_per_sequence(m, 32_768)) == 32_768 * 81_920 + 1_024 * 425_984 == 3_120_562_176
    assert (m.vocab_size, m.max_position_embeddings, m.tie_word_embeddings, m.num_rope_caches) == (262_208, 131_072,
                                                                                                    True, 2)
    assert m.defaults_assumed == (
        "vocab_size=262208 (transformers Gemma3TextConfig default)",
        "max_position_embeddings=131072 (transformers Gemma3TextConfig default)",
        "tie_word_embeddings=True (transformers Gemma3TextConfig default)",
        "attention_bias=False (transformers Gemma3TextConfig default)",
        "sliding_window_pattern=6 (transformers Gemma3TextConfig default)",
        "rope_local_base_freq=10000.0 (transformers Gemma3TextConfig default)",
    )


def test_gemma3_config_that_leaves_the_head_counts_to_the_defaults():
    """As google/gemma-3-4b-it's text_config does: 8 heads, 4 KV heads and head_dim 256 are the class defaults.

    By hand: 2 × 4 KV heads × 256 × 2 B = 4,096 B per token per layer; 34 layers → 139,264 B per token;
    global layers i = 5, 11, 17, 23, 29 → 5 full and 29 sliding.
    """
    from calculators.memory.kv_cache import kv_bytes_per_token

    cfg = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "torch_dtype": "bfloat16",
           "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                           "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                           "sliding_window": 1024}}
    m = model_from_config(cfg, id="gemma-3-4b-like")
    assert (m.num_attention_heads, m.num_key_value_heads, m.head_dim) == (8, 4, 256)
    assert int(kv_bytes_per_token(m)) == 34 * 4_096 == 139_264
    assert m.layer_types.count("full_attention") == 5 and m.sliding_window == 1024
    for name in ("num_attention_heads=8", "num_key_value_heads=4", "head_dim=256", "vocab_size=262208"):
        assert f"{name} (transformers Gemma3TextConfig default)" in m.defaults_assumed


def test_newer_gemma3_dumps_with_layer_types_assume_no_pattern():
    cfg = {"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"], "hidden_size": 640,
           "intermediate_size": 2048, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 1,
           "head_dim": 256, "vocab_size": 262144, "max_position_embeddings": 32768, "sliding_window": 512,
           "layer_types": ["sliding_attention", "sliding_attention", "full_attention"], "torch_dtype": "bfloat16",
           "rope_parameters": {"full_attention": {"rope_theta": 1e6}, "sliding_attention": {"rope_theta": 1e4}}}
    m = model_from_config(cfg, id="gemma-3-270m-like")
    assert m.layer_types == ("sliding_attention", "sliding_attention", "full_attention")
    assert not any(a.startswith(("sliding_window_pattern", "rope_local_base_freq")) for a in m.defaults_assumed)


# --- any model_type: what was assumed is named ------------------------------------------------------------

def test_unknown_model_type_imports_and_names_its_assumptions():
    """By hand: no num_key_value_heads → 8 (MHA), no head_dim → 512 / 8 = 64; bf16 assumed:
    2 × 3 layers × 8 KV heads × 64 × 2 B = 6,144 B per token."""
    from calculators.memory.kv_cache import kv_bytes_per_token

    cfg = {"architectures": ["FooForCausalLM"], "model_type": "foo", "hidden_size": 512, "num_attention_heads": 8,
           "num_hidden_layers": 3, "vocab_size": 5000, "intermediate_size": 1024, "max_position_embeddings": 4096}
    m = model_from_config(cfg, id="acme/foo")
    assert int(kv_bytes_per_token(m)) == 6_144
    assert m.defaults_assumed == (
        "num_key_value_heads=8 (= num_attention_heads: multi-head attention)",
        "head_dim=64 (hidden_size / num_attention_heads)",
        "tie_word_embeddings=False (a separate LM head)",
        "torch_dtype=bfloat16 (no torch_dtype or dtype in config.json)",
        "attention_bias=False (no biases)",
    )


def test_a_complete_config_assumes_nothing():
    m = hf("Qwen__Qwen3-8B")
    assert m.defaults_assumed == ()


@pytest.mark.parametrize("extra, kind", [
    ({"layer_types": ["linear_attention", "full_attention"]}, "linear_attention"),  # Qwen3-Next
    ({"layer_types": ["mamba", "attention"]}, "mamba"),  # Granite 4 hybrid
    ({"hybrid_override_pattern": "M*"}, "mamba"),  # Nemotron-H
    ({"layers_block_type": ["mamba", "hybrid"]}, "mamba"),  # Zamba 2
    ({"attn_layer_period": 8, "attn_layer_offset": 4, "model_type": "jamba"}, "mamba"),
    ({"block_types": ["recurrent", "attention"]}, "recurrent"),  # RecurrentGemma
    ({"attn_type_list": [0, 1]}, "linear_attention"),  # MiniMax-01 lightning attention
    ({"linear_attn_config": {"kda_layers": [1]}}, "linear_attention"),  # Kimi-Linear
    ({"model_type": "mamba", "state_size": 16}, "mamba"),
    ({"model_type": "rwkv"}, "rwkv"),
])
def test_stateful_layers_are_refused_by_kind(extra, kind):
    cfg = {"architectures": ["X"], "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
           "vocab_size": 10, "intermediate_size": 8, "max_position_embeddings": 8, **extra}
    with pytest.raises(InvalidInputError) as e:
        model_from_config(cfg, id="x")
    assert e.value.field == "layer_types" and e.value.value == kind and repr(kind) in str(e.value)


def test_pure_mamba_config_names_mamba_not_a_missing_field():
    cfg = {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768, "state_size": 16,
           "num_hidden_layers": 24, "vocab_size": 50280, "conv_kernel": 4, "expand": 2}
    with pytest.raises(InvalidInputError, match="'mamba' layers"):
        model_from_config(cfg, id="state-spaces/mamba-130m-hf")


def test_attention_alias_in_layer_types_is_full_attention():
    cfg = {"architectures": ["X"], "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
           "vocab_size": 10, "intermediate_size": 8, "max_position_embeddings": 8,
           "layer_types": ["attention", "attention"]}
    assert model_from_config(cfg, id="x").layer_types == ("full_attention", "full_attention")


# --- quantisation formats ---------------------------------------------------------------------------

@pytest.mark.parametrize("q, expected", [
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
      "bnb_4bit_use_double_quant": True, "bnb_4bit_compute_dtype": "bfloat16"}, "bitsandbytes"),
    ({"quant_method": "bitsandbytes", "_load_in_4bit": True, "load_in_4bit": True, "bnb_4bit_quant_type": "fp4"},
     "bitsandbytes"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True, "llm_int8_threshold": 6.0}, "bitsandbytes-8bit"),
])
def test_bitsandbytes_quantization_config(q, expected):
    cfg = json.loads((HF_CONFIGS / "meta-llama__Llama-3.1-8B.json").read_text())
    assert model_from_config({**cfg, "quantization_config": q}, id="x").quantization == expected


@pytest.mark.parametrize("q, field", [
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "int4"},
     "quantization_config.bnb_4bit_quant_type"),
    ({"quant_method": "bitsandbytes"}, "quantization_config.load_in_4bit"),
])
def test_bad_bitsandbytes_config_names_the_field(q, field):
    cfg = json.loads((HF_CONFIGS / "meta-llama__Llama-3.1-8B.json").read_text())
    with pytest.raises(InvalidInputError) as e:
        model_from_config({**cfg, "quantization_config": q}, id="x")
    assert e.value.field == field


def test_modelopt_hf_quant_config_beside_a_config_json(tmp_path):
    (tmp_path / "config.json").write_text((HF_CONFIGS / "meta-llama__Llama-3.1-8B.json").read_text())
    assert load_config_file(tmp_path / "config.json").quantization is None
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt", "version": "0.33.0"},
         "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                          "exclude_modules": ["lm_head"]}}))
    assert load_config_file(tmp_path / "config.json").quantization == "nvfp4"


def test_phi_mlp_has_two_matrices_and_its_weights_match_the_log():
    # PhiMLP is fc1 → gelu → fc2. vLLM 0.6.4 loaded microsoft/phi-1_5 in "2.64 GiB" (V0-06 of the start-up
    # corpus): 24 layers × (q, k, v, dense 4 × 2048² + fc1, fc2 2 × 2048 × 8192) = 1,207,959,552 weights,
    # + 2 × 51,200 × 2048 embedding and head = 209,715,200, + 595,968 biases and norms = 1,418,270,720
    # parameters × 2 B = 2.64 GiB in float16.
    m = hf("microsoft__phi-1_5")
    assert not m.gated_mlp
    weights = float(weight_bytes_per_stage(m, tensor_parallel_size=1, pipeline_parallel_size=1,
                                           quantization="none", dtype="float16")[0])
    assert weights / GiB == pytest.approx(2.64, abs=0.01)


def test_gemma3_rope_caches_include_the_linear_scaling_factor():
    """vLLM's linear-scaling rope keeps ``max_position × factor`` rows; Gemma-3's local layers a second, unscaled cache.

    gemma-3-27b-it: rope_scaling linear, factor 8, 131,072 positions, head_dim 128, bf16:
    global 131,072 × 8 = 1,048,576 rows + local 131,072 rows = 1,179,648 rows × 128 × 2 B = 301,989,888 B (288 MiB).
    """
    m = hf("google__gemma-3-27b-it")
    assert (m.rope_cache_positions, m.rotary_dim, m.num_rope_caches) == (1_179_648, 128, 2)
    plain = hf("meta-llama__Llama-3.1-8B")  # llama3 rope type: one cache of max_position_embeddings rows
    assert plain.rope_cache_positions == plain.max_position_embeddings


def test_multimodal_rope_cache_holds_four_times_the_positions():
    """vLLM's ``MRotaryEmbedding`` sizes its cos/sin cache for 4 × ``max_position_embeddings`` (long videos).

    Qwen3-VL-30B-A3B: mrope_section [24, 20, 20], 262,144 positions, head_dim 128: 1,048,576 rows × 128 × 2 B =
    268,435,456 B (256 MiB), where a plain rope of the same settings would hold 64 MiB.
    """
    m = hf("Qwen__Qwen3-VL-30B-A3B-Instruct")
    assert (m.rope_cache_positions, m.rotary_dim, m.num_rope_caches) == (1_048_576, 128, 1)
    cfg = json.loads((HF_CONFIGS / "Qwen__Qwen3-VL-30B-A3B-Instruct.json").read_text())
    cfg["text_config"]["rope_parameters"] = cfg["text_config"].pop("rope_scaling")  # transformers 5's spelling
    assert model_from_config(cfg, id="v5").rope_cache_positions == 1_048_576
    plain = hf("Qwen__Qwen2.5-1.5B-Instruct")  # a text model's plain rope keeps its positions
    assert plain.rope_cache_positions == plain.max_position_embeddings


@pytest.mark.parametrize("q, group", [
    ({"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": True}, 32),
    ({"quant_method": "gptq", "bits": 4, "group_size": -1}, -1),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 64}}}}, 64),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "int", "strategy": "channel", "group_size": None}}}}, -1),
])
def test_awq_gptq_group_size_is_read_and_sizes_the_scales(q, group):
    """Llama-3.1-8B's q_proj (4,096 × 4,096) in 4 bits: 8,388,608 B of packed weights + 2.5 B (fp16 scale and a
    4-bit zero) per group per column: group 32 → 128 × 4,096 × 2.5 = 1,310,720 B; 64 → 655,360 B; one group per
    column (−1) → 4,096 × 2.5 = 10,240 B."""
    from calculators.memory.weights import Linear, linear_bytes

    cfg = json.loads((HF_CONFIGS / "meta-llama__Llama-3.1-8B.json").read_text())
    m = model_from_config({**cfg, "quantization_config": q}, id="x")
    assert m.quantization_group_size == group
    scales = {32: 1_310_720, 64: 655_360, -1: 10_240}[group]
    assert linear_bytes(Linear(4096, 4096, 1, "tp", True), "gptq", 2, group) == 8_388_608 + scales
    if group == -1:
        return
    # The whole model against groups of 128: a layer's 218,103,808 weights (every input width divisible by 128)
    # carry 2.5 B × (1/g − 1/128) more per weight, × 32 layers: 408,944,640 B (g 32), 136,314,880 B (g 64)
    extra = {32: 218_103_808 * 3 // 128 * 5 // 2 * 32, 64: 218_103_808 // 128 * 5 // 2 * 32}[group]
    g128 = m.model_copy(update={"quantization_group_size": 128})
    grouped, base = (weight_bytes_per_stage(x, quantization="gptq").item() for x in (m, g128))
    assert grouped - base == extra


def _qwen3_32b(**extra):
    cfg = json.loads((HF_CONFIGS / "Qwen__Qwen3-32B.json").read_text())
    return model_from_config({**cfg, **extra}, id="Qwen/Qwen3-32B")


@pytest.mark.parametrize("scaling, expected", [
    # Qwen's long-context recipe: YaRN scales the original 32,768 positions by 4 → 131,072
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, 131_072),
    ({"type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32768}, 65_536),
    # linear and dynamic NTK scale the config's own 40,960 positions
    ({"rope_type": "linear", "factor": 2.0}, 81_920),
    ({"type": "dynamic", "factor": 1.5}, 61_440),
    # already-extended kinds and a factorless setting keep the length
    ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}, 40_960),
    ({"rope_type": "longrope", "factor": 4.0}, 40_960),
    ({"rope_type": "default"}, 40_960),
])
def test_max_length_follows_vllms_rope_scaling_rule(scaling, expected):
    """vLLM's ``_get_and_verify_max_len`` (v0.10.0): the context it accepts is max_position_embeddings (40,960 for
    Qwen3-32B) × rope factor, YaRN's from original_max_position_embeddings; su/longrope/llama3 are left as is."""
    m = _qwen3_32b(rope_scaling=scaling)
    assert m.max_position_embeddings == expected
    assert any(a.startswith("max_position_embeddings=") for a in m.defaults_assumed) == (expected != 40_960)


def test_gemma3_linear_factor_does_not_extend_its_context():
    """vLLM skips the factor for Gemma 3, whose 131,072 positions are already the scaled context."""
    assert hf("google__gemma-3-27b-it").max_position_embeddings == 131_072


def test_bad_rope_factor_names_the_field():
    with pytest.raises(InvalidInputError, match="rope_scaling.factor"):
        _qwen3_32b(rope_scaling={"rope_type": "yarn", "factor": "4", "original_max_position_embeddings": 32768})


def test_gemma3n_is_refused_with_the_parts_it_lacks():
    """Gemma 3n's per-layer MLP widths (a list), AltUp and LAuReL are not sized: refused by name, not misread."""
    cfg = {"model_type": "gemma3n", "text_config": {
        "model_type": "gemma3n_text", "hidden_size": 2048, "num_hidden_layers": 5, "num_attention_heads": 8,
        "num_key_value_heads": 2, "head_dim": 256, "intermediate_size": [16384] * 5, "vocab_size": 262400,
        "max_position_embeddings": 32768, "altup_num_inputs": 4, "laurel_rank": 64}}
    with pytest.raises(InvalidInputError, match="model_type.*AltUp"):
        model_from_config(cfg, id="google/gemma-3n-E4B-it")
