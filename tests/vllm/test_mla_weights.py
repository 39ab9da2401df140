"""MLA tensors vLLM derives at load, by release, worked out by hand and against a printed start-up log."""
from __future__ import annotations

import pytest

from calculators.specs.catalog import get_gpu, get_model
from calculators.units import GiB
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.mla_weights import mla_load_bytes_per_layer
from calculators.vllm.versions import parse_vllm_version

#: DeepSeek-R1 at TP 8, one layer, one GPU: N = 128 / 8 = 16 heads, kv_lora_rank 512, q_lora_rank 1536,
#: hidden 7168, nope 128, rope 64, v 128.
#: W_Q_UK fp8 (16·512 × 1536) = 12,582,912 B + fp32 scales 64 × 12 × 4 = 3,072 B;
#: W_UV_O fp8 (7168 × 16·512) = 58,720,256 B + scales 56 × 64 × 4 = 14,336 B;
#: W_QR bf16 1536 × 16·64 × 2 = 3,145,728 B; kv_b_proj dequantised 512 × 16·256 × 2 (bf16) = 4,194,304 B.
KV_B_BF16 = 4_194_304
ABSORBED_0_7_3 = 12_582_912 + 3_072 + 58_720_256 + 14_336 + 3_145_728 + KV_B_BF16  # 78,660,608 B


@pytest.mark.parametrize("release, quantization, expected", [
    ("0.6.6", "fp8", 0),  # no MLA backend before 0.7.1: DeepSeek ran as multi-head attention
    ("0.7.3", "fp8", ABSORBED_0_7_3),
    ("0.7.2", "fp8", ABSORBED_0_7_3 + KV_B_BF16),  # the dequantised kv_b_proj kept in fp32 (twice the bytes)
    ("0.8.0", "fp8", KV_B_BF16),  # absorption removed: only W_UK_T / W_UV, a bf16 copy of kv_b_proj
    ("0.10.2", "none", 0),  # an unquantised kv_b_proj is viewed, not copied
])
def test_deepseek_r1_tp8_per_layer_by_hand(release, quantization, expected):
    v = parse_vllm_version(release)
    assert mla_load_bytes_per_layer(get_model("deepseek-ai/DeepSeek-R1"), v, quantization, 8, 2) == expected


def test_bf16_checkpoint_absorbs_in_bf16():
    """0.7.3, unquantised: W_Q_UK and W_UV_O in bf16 (2 B per element), W_QR bf16, no kv_b copy.
    (8,192 × 1,536 + 7,168 × 8,192) × 2 + 3,145,728 = 25,165,824 + 117,440,512 + 3,145,728 = 145,752,064 B."""
    v = parse_vllm_version("0.7.3")
    assert mla_load_bytes_per_layer(get_model("deepseek-ai/DeepSeek-R1"), v, "none", 8, 2) == 145_752_064


def test_dense_models_have_none():
    v = parse_vllm_version("0.7.3")
    assert mla_load_bytes_per_layer(get_model("meta-llama/Llama-3.1-8B-Instruct"), v, "fp8", 1, 2) == 0


def test_r1_on_0_7_3_weights_match_the_printed_line():
    """vLLM 0.7.3 (V0), DeepSeek-R1, TP 8 on H200 printed "model weights take 83.88GiB" (an 8×H200 install
    log of 2025-03-15, tests/fixtures/vllm_logs/startup_corpus.json case V0-08); 61 layers × 78,660,608 B =
    4.469 GiB of it are the absorbed matrices. Within vLLM's 2-decimal rounding plus 0.5 %."""
    r = vllm_capacity(get_model("deepseek-ai/DeepSeek-R1"), gpu=get_gpu("H200-SXM"), tensor_parallel_size=8,
                      quantization="fp8", vllm_version="0.7.3", max_model_len=128000, gpu_memory_utilization=0.85)
    assert r.binding.weights_bytes / GiB == pytest.approx(83.88, rel=0.005)
    assert any("MLA attention derives" in n and "4.47 GiB" in n for n in r.notes)
