"""Gemma 4: per-kind attention geometry, KV sharing, uneven pages and per-layer inputs, worked out by hand.

Rules from vLLM's ``vllm/model_executor/models/gemma4.py`` and ``vllm/v1/core/kv_cache_utils.py`` and
transformers' ``Gemma4TextConfig`` (docs/vllm-memory.md §3.4). Shapes (text_config): E2B 35 layers of 1,536,
(4 sliding, 1 full) × 7, 1 KV head, the last 20 layers KV-shared; 26B-A4B 30 layers of 2,816, (5, 1) × 5,
8 KV heads on sliding layers and 2 on full ones (``attention_k_eq_v``); 31B 60 layers of 5,376, (5, 1) × 10,
16 and 4 KV heads. Sliding layers have head_dim 256, full ones 512.
"""
from __future__ import annotations

import json

import pytest

from calculators.memory.kv_cache import kv_bytes_per_sequence, kv_bytes_per_token
from calculators.memory.weights import parameter_counts, weight_bytes_per_stage
from calculators.specs.catalog import get_gpu
from calculators.specs.hf_config import load_config_file, model_from_config
from calculators.units import GiB
from calculators.vllm.advice import vllm_serve_command
from calculators.vllm.capacity import vllm_capacity
from tests.conftest import HF_CONFIGS


def gemma4(size: str):
    return load_config_file(HF_CONFIGS / f"google__gemma-4-{size}-it.json")


def test_the_config_fields_vllm_reads():
    e2b, moe, big = gemma4("E2B"), gemma4("26B-A4B"), gemma4("31B")
    # full layers: global_head_dim; their KV heads are num_global_key_value_heads only with attention_k_eq_v
    assert e2b.attention_dims("full_attention") == (1, 512) and e2b.attention_dims("sliding_attention") == (1, 256)
    assert moe.attention_dims("full_attention") == (2, 512) and moe.attention_dims("sliding_attention") == (8, 256)
    assert big.attention_dims("full_attention") == (4, 512)
    assert (e2b.kv_cache_layers, e2b.hidden_size_per_layer_input, e2b.use_double_wide_mlp) == (15, 256, True)
    # the MoE block: 128 experts of 704, top 8, beside the dense 2,112-wide MLP (a shared expert), every layer
    assert (moe.num_experts, moe.num_experts_per_tok, moe.moe_intermediate_size) == (128, 8, 704)
    assert (moe.shared_expert_intermediate_size, len(moe.moe_layers), moe.intermediate_size) == (2112, 30, 0)
    # a step must hold the 32-frame dummy video: 32 × 78 = 2,496 prompt tokens
    assert e2b.max_tokens_per_mm_item == big.max_tokens_per_mm_item == 2496


def test_transformers_defaults_give_per_layer_inputs_and_the_pattern():
    """Gemma4TextConfig defaults hidden_size_per_layer_input to 256 (not 0) and, without layer_types, makes
    every sixth layer and the last one full attention."""
    cfg = json.loads((HF_CONFIGS / "google__gemma-4-31B-it.json").read_text())
    text = {k: v for k, v in cfg["text_config"].items()
            if k not in ("hidden_size_per_layer_input", "layer_types", "num_hidden_layers")}
    m = model_from_config({**cfg, "text_config": {**text, "num_hidden_layers": 8}}, id="g4")
    assert m.hidden_size_per_layer_input == 256
    assert any(a.startswith("hidden_size_per_layer_input=256") for a in m.defaults_assumed)
    assert m.layer_types == ("sliding_attention",) * 5 + ("full_attention", "sliding_attention", "full_attention")


@pytest.mark.parametrize("size, tp, per_token", [
    # E2B: 15 layers keep KV, 12 sliding (2·1·256·2 = 1,024 B) + 3 full (2·1·512·2 = 2,048 B)
    ("E2B", 1, 12 * 1024 + 3 * 2048),  # 18,432
    ("E2B", 4, 18_432),  # one KV head: replicated, not split
    # E4B: 24 of 42 layers keep KV, 20 sliding (2 heads: 2,048 B) + 4 full (4,096 B)
    ("E4B", 1, 20 * 2048 + 4 * 4096),  # 57,344
    # 26B-A4B: 25 sliding of 8 heads (8,192 B) + 5 full of 2 heads (4,096 B)
    ("26B-A4B", 1, 25 * 8192 + 5 * 4096),  # 225,280
    ("26B-A4B", 4, 25 * 2048 + 5 * 2048),  # 61,440: 2 sliding heads a rank, the 2 full ones split
    # 31B: 50 sliding of 16 heads (16,384 B) + 10 full of 4 (8,192 B)
    ("31B", 1, 50 * 16_384 + 10 * 8192),  # 901,120
    ("31B", 8, 50 * 2048 + 10 * 2048),  # 122,880: 4 full heads replicated to one a rank
])
def test_kv_bytes_per_token_by_hand(size, tp, per_token):
    assert int(kv_bytes_per_token(gemma4(size), tensor_parallel_size=tp)) == per_token


def test_sliding_layers_stop_at_their_window():
    # 31B at 10,000 tokens: 50 sliding layers keep 1,024 tokens, 10 full ones all 10,000
    got = float(kv_bytes_per_sequence(gemma4("31B"), 10_000))
    assert got == 50 * 16_384 * 1024 + 10 * 8192 * 10_000


@pytest.mark.parametrize("size, published", [("E2B", 5.1e9), ("E4B", 8.0e9), ("26B-A4B", 25.2e9 + 0.57e9),
                                              ("31B", 30.7e9 + 0.58e9)])
def test_parameters_match_the_published_sizes(size, published):
    """Google's model cards: E2B 5.1 B with embeddings and its towers, E4B about 8 B, 26B-A4B 25.2 B and 31B
    30.7 B in the language model (plus their 0.57 B vision tower here). vLLM also allocates a V projection for
    k == v layers and K/V for the KV-shared ones: 110 M parameters more for the 31B, 19 M for the E2B."""
    m = gemma4(size)
    total = parameter_counts(m)["total"] + m.encoder_params
    assert total == pytest.approx(published, rel=0.02)


def test_31b_weights_by_hand():
    """A published dump of the google/gemma-4-31B-it checkpoint counts 31,273,088,876 parameters (text and vision,
    1,188 tensors). vLLM also allocates a V projection for each of the 10 k == v full-attention layers
    (4 KV heads × 512 × 5,376 = 11,010,048 each): 31,383,189,356 parameters, × 2 B in bf16 = 62,766,378,712 B,
    plus the rope table (262,144 positions × 256 × 2 B = 134,217,728 B) = 62,900,596,440 B at TP 1. The vision
    tower alone: 569,550,384 + the 1,152 × 5,376 projector."""
    m = gemma4("31B")
    assert parameter_counts(m)["total"] + m.encoder_params == pytest.approx(31_273_088_876 + 10 * 11_010_048, rel=1e-4)
    assert m.encoder_params == pytest.approx(569_550_384 + 1152 * 5376, rel=1e-3)
    assert float(weight_bytes_per_stage(m)[0]) == pytest.approx(62_900_596_440, rel=1e-4)


def test_e2b_per_layer_embedding_is_counted_and_split_by_tp():
    """262,144 × 35 × 256 = 2,348,810,240 per-layer embedding rows × 2 B, split by TP like the vocabulary."""
    m = gemma4("E2B")
    no_ple = m.model_copy(update={"hidden_size_per_layer_input": 0})
    w = {tp: float(weight_bytes_per_stage(m, tensor_parallel_size=tp)[0]) for tp in (1, 2)}
    gap = w[1] - float(weight_bytes_per_stage(no_ple)[0])
    table, projection, per_layer = 262_144 * 35 * 256 * 2, 1536 * 35 * 256 * 2, 35 * 2 * 1536 * 256 * 2
    assert gap == pytest.approx(table + projection + per_layer, rel=1e-6)
    assert w[1] - w[2] > table / 2 * 0.999


def test_uneven_pages_get_bigger_blocks_and_reproduce_a_printed_log():
    """Gemma-4-E2B on an L4, vLLM 0.21.0, --language-model-only --max-model-len 8192 --enforce-eager printed
    9.92 GiB and "Maximum concurrency for 8,192 tokens per request: 129.66x". By hand: sliding pages are 1,024 B a
    token against 2,048 for full ones, so sliding blocks hold 32 tokens and every block 32 KiB; 15 layers in groups
    of 3 (4 sliding, 1 full): 98,304 B a block, 10,651,483,750 B / 98,304 = 108,352 blocks. A request of 8,192
    tokens holds 8,192 / 16 = 512 full blocks and, per sliding group, ⌈min(511 + 2,048, 8,192) / 32⌉ + 1 = 81:
    836 blocks, 108,352 / 836 = 129.61x (129.66 within the rounding of 9.92)."""
    r = vllm_capacity(gemma4("E2B"), gpu=get_gpu("L4"), vllm_version="0.21.0", max_model_len=8192,
                      enforce_eager=True, language_model_only=True, kv_cache_memory_bytes=int(9.92 * GiB))
    st = r.binding
    assert [(g.layer_type, g.num_layers, g.block_size) for g in st.groups] == \
        [("sliding_attention", 3, 32)] * 4 + [("full_attention", 3, 16)]
    assert (st.bytes_per_block, st.num_blocks, r.blocks_per_request) == (98_304, 108_352, 836)
    assert r.max_concurrency == pytest.approx(129.66, abs=0.06)


def test_a_step_must_hold_the_dummy_video_unless_the_towers_are_off():
    """vLLM will not split Gemma 4's 2,496-token video across steps: the 2,048 default becomes 2,496 (a 0.25.1
    log prints "max_num_batched_tokens=2496"); --language-model-only drops the towers, their weights and the floor."""
    m, l40s = gemma4("26B-A4B"), get_gpu("L40S")
    full = vllm_capacity(m, gpu=l40s, vllm_version="0.25.1", max_model_len=32768, quantization="fp8")
    text = vllm_capacity(m, gpu=l40s, vllm_version="0.25.1", max_model_len=32768, quantization="fp8",
                         language_model_only=True)
    assert (full.settings.max_num_batched_tokens, text.settings.max_num_batched_tokens) == (2496, 2048)
    tower = m.encoder_params * 2  # bf16, one GPU
    assert full.binding.weights_bytes - text.binding.weights_bytes == pytest.approx(tower, rel=1e-9)
    assert "--language-model-only" in vllm_serve_command(m.id, text)
    assert "--language-model-only" not in vllm_serve_command(m.id, full)
