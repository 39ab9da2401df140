"""KV-cache bytes against values worked by hand (cited) and invariants."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calculators.errors import InvalidInputError
from calculators.memory.kv_cache import (
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_bytes_per_token_per_layer,
    pp_layer_partition,
    sequences_that_fit,
)
from calculators.specs.catalog import get_model
from calculators.units import GiB, MiB
from tests.conftest import hf


def test_llama_31_70b_golden_per_gpu():
    # docs/vllm-memory.md §3.1: 2·80 layers·8 KV heads·128·2 B = 327,680 B at TP1; per GPU 81,920 at TP4,
    # 40,960 at TP8 and TP16 (8 KV heads: at TP16 each head is replicated on two ranks).
    m = hf("meta-llama__Llama-3.1-70B")
    assert kv_bytes_per_token(m).item() == 327_680
    assert kv_bytes_per_token(m, tensor_parallel_size=[1, 2, 4, 8, 16]).tolist() == [327_680, 163_840, 81_920,
                                                                                      40_960, 40_960]


def test_deepseek_mla_latent_not_divided_by_tp():
    # docs/vllm-memory.md §3.3: 61 layers × (512 + 64) × 2 B = 70,272 B/token; fp8 35,136; V2-Lite 27 × 1,152 = 31,104.
    v3 = hf("deepseek-ai__DeepSeek-V3")
    assert kv_bytes_per_token(v3).item() == 70_272
    assert kv_bytes_per_token(v3, tensor_parallel_size=8).item() == 70_272
    assert kv_bytes_per_token(v3, kv_cache_dtype="fp8").item() == 35_136
    assert kv_bytes_per_token(hf("deepseek-ai__DeepSeek-V2-Lite")).item() == 31_104


def test_newer_moe_checkpoints_by_hand():
    # MiniMax-M2.5: GQA, 2 (K, V) · 8 KV heads · 128 · 2 B · 62 layers = 253,952 B/token, 31,744 at TP 8.
    # Kimi-K2 and GLM-4.7-Flash: MLA latent 512 + rope 64 = 576 elements · 2 B, over 61 and 47 layers.
    m25 = get_model("MiniMaxAI/MiniMax-M2.5")
    assert kv_bytes_per_token(m25, tensor_parallel_size=[1, 8]).tolist() == [253_952, 31_744]
    assert kv_bytes_per_token(get_model("moonshotai/Kimi-K2-Instruct"), tensor_parallel_size=8).item() == 70_272
    assert kv_bytes_per_token(get_model("zai-org/GLM-4.7-Flash")).item() == 54_144


def test_v0_pads_mla_entries_to_256_bytes():
    # docs/vllm-memory.md §2.7: 576 bf16 elements = 1,152 B are padded to 1,280 B (640 elements).
    m = hf("deepseek-ai__DeepSeek-V3")
    assert kv_bytes_per_token_per_layer(m, mla_align_bytes=256).item() == 1_280


def test_kv_heads_replicated_when_tp_exceeds_them():
    # Qwen3-235B has 4 KV heads: TP8 stores 1 head per rank, the same bytes as TP4 (cases C04, C16).
    m = hf("Qwen__Qwen3-235B-A22B")
    tp4, tp8 = kv_bytes_per_token(m, tensor_parallel_size=[4, 8]).tolist()
    assert tp4 == tp8 == 94 * 2 * 1 * 128 * 2


def test_mha_llama2_7b_is_half_a_mebibyte():
    # A textbook figure corrected: 2·32·32·128·2 = 524,288 B (0.5 MiB), not "roughly 1 MB".
    assert kv_bytes_per_token(hf("meta-llama__Llama-2-7b-hf")).item() == 524_288


def test_seed_000_sequences_in_16_gib():
    # A textbook figure corrected: 16 GiB / (0.5 MiB × 1,024 tokens) = 32 sequences exactly.
    m = hf("meta-llama__Llama-2-7b-hf")
    assert sequences_that_fit(m, 16 * GiB, 1024).item() == 32
    assert sequences_that_fit(m, 16e9, 1024).item() == 29
    assert sequences_that_fit(m, [16 * GiB, 8 * GiB], [1024]).tolist() == [32, 16]  # one length, two budgets
    with pytest.raises(InvalidInputError, match="seq_len"):  # two budgets, three lengths: no pairing
        sequences_that_fit(m, [16 * GiB, 8 * GiB], [1024, 2048, 4096])


def test_seed_003_llama3_70b_batch():
    # A textbook figure corrected: 32 sequences × 4,096 tokens × 320 KiB = 40 GiB, not "≈ 270 GB".
    m = hf("meta-llama__Llama-3.1-70B")
    assert kv_bytes_per_sequence(m, 4096).item() * 32 == 40 * GiB


def test_sliding_window_layers_stop_growing():
    # gpt-oss-120b: 18 full + 18 sliding (window 128) layers, 2·8·64·2 = 2,048 B per layer per token.
    m = hf("openai__gpt-oss-120b")
    assert kv_bytes_per_sequence(m, 100).item() == 36 * 100 * 2048
    assert kv_bytes_per_sequence(m, 10_000).item() == (18 * 10_000 + 18 * 128) * 2048
    # Block rounding: 10,000 → 625 blocks of 16; 128 → 8 blocks.
    assert kv_bytes_per_sequence(m, 10_000, block_size=16).item() == (18 * 10_000 + 18 * 128) * 2048
    assert kv_bytes_per_sequence(m, 10_001, block_size=16).item() == (18 * 10_016 + 18 * 128) * 2048


def test_pipeline_partition_matches_vllm():
    # vllm get_pp_indices: remainder to the stages before the last (docs/vllm-memory.md §4;
    # the DeepSeek-V2-Lite log of https://github.com/vllm-project/vllm/pull/20665).
    assert pp_layer_partition(27, 2) == [14, 13]
    assert pp_layer_partition(81, 4) == [20, 20, 21, 20]
    assert pp_layer_partition(80, 4) == [20] * 4
    m = hf("deepseek-ai__DeepSeek-V2-Lite")
    assert kv_bytes_per_token(m, pipeline_parallel_size=2).item() == 14 * 1152


def test_fp8_kv_halves_bytes_whatever_the_weights():
    m = get_model("Qwen/Qwen2.5-7B-Instruct-AWQ")
    assert kv_bytes_per_token(m, kv_cache_dtype="fp8").item() * 2 == kv_bytes_per_token(m).item() == 57_344


@pytest.mark.parametrize("kwargs, field", [
    ({"tensor_parallel_size": 3}, "tensor_parallel_size"),
    ({"tensor_parallel_size": 0}, "tensor_parallel_size"),
    ({"kv_cache_dtype": "int3"}, "kv_cache_dtype"),
    ({"pipeline_parallel_size": 200}, "pipeline_parallel_size"),
])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(InvalidInputError) as e:
        kv_bytes_per_token(hf("meta-llama__Llama-3.1-70B"), **kwargs)
    assert e.value.field == field


@pytest.mark.parametrize("n", [0, -5, float("nan"), 1.5])
def test_bad_lengths(n):
    with pytest.raises(InvalidInputError, match="seq_len"):
        kv_bytes_per_sequence(hf("meta-llama__Llama-3.1-8B"), n)


@given(avail=st.floats(0, 1e12), extra=st.floats(0, 1e11), n=st.integers(1, 200_000))
def test_more_memory_never_fewer_sequences(avail, extra, n):
    m = get_model("openai/gpt-oss-20b")
    assert sequences_that_fit(m, avail + extra, n, block_size=16) >= sequences_that_fit(m, avail, n, block_size=16)
    assert sequences_that_fit(m, avail, n) >= 0


@given(heads=st.sampled_from([8, 16, 32, 64]), group=st.sampled_from([1, 2, 4, 8]), layers=st.integers(1, 100))
def test_gqa_divides_kv_by_group_size(heads, group, layers):
    base = get_model("meta-llama/Llama-3.1-8B")
    mha = base.model_copy(update={"num_attention_heads": heads, "num_key_value_heads": heads,
                                  "num_hidden_layers": layers, "layer_types": ("full_attention",) * layers})
    gqa = mha.model_copy(update={"num_key_value_heads": heads // group})
    assert kv_bytes_per_token(mha).item() == group * kv_bytes_per_token(gqa).item()


def test_vectorised_equals_scalar_loop():
    m = get_model("google/gemma-2-27b")
    lens = np.array([1, 100, 4095, 4096, 4097, 8192])
    vec = kv_bytes_per_sequence(m, lens, tensor_parallel_size=2, block_size=16)
    assert vec.tolist() == [kv_bytes_per_sequence(m, int(n), tensor_parallel_size=2, block_size=16).item()
                            for n in lens]
    assert vec[-1] == 23 * (8192 + 4096) * 2 * 8 * 128 * 2  # 16 KV heads / TP2, 23 global + 23 local layers


def test_units_are_binary():
    assert MiB * 1024 == GiB
