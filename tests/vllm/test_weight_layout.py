"""How vLLM lays quantised weights out: the MXFP4 MoE kernel's padding of gpt-oss's experts and bitsandbytes'
statistics by release (worked by hand, checked on logs)."""
from __future__ import annotations

import numpy as np
import pytest

from calculators.memory.weights import WeightLayout, weight_bytes_per_stage
from calculators.specs.catalog import get_gpu, get_model
from calculators.units import GiB
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.versions import parse_vllm_version
from calculators.vllm.weight_layout import mxfp4_moe_backend, mxfp4_padding, weight_layout

GPT_OSS = "openai/gpt-oss-120b"


def _v(version: str):
    return parse_vllm_version(version)


def test_backend_by_gpu_and_release():
    assert mxfp4_moe_backend(get_gpu("A100-80GB-SXM"), _v("0.15.1")) == "marlin"
    assert mxfp4_moe_backend(get_gpu("H100-SXM"), _v("0.10.1")) == "marlin"  # triton_kernels not shipped yet
    assert mxfp4_moe_backend(get_gpu("H200-SXM"), _v("0.12.0")) == "triton"  # vendored from 0.12.0
    assert mxfp4_moe_backend(get_gpu("B200"), _v("0.15.1")) == "flashinfer"
    assert mxfp4_moe_backend(get_gpu("RTX-PRO-6000"), _v("0.15.1")) == "marlin"  # compute capability 12.0
    assert mxfp4_moe_backend(get_gpu("MI300X"), _v("0.15.1")) == "rocm"
    assert mxfp4_moe_backend(None, _v("0.15.1")) == "marlin"


def _gib(model, tp: int, padding: tuple[int, int]) -> float:
    w = weight_bytes_per_stage(model, tensor_parallel_size=tp, layout=WeightLayout(mxfp4_padding=padding))
    return float(np.ravel(w[0])[0]) / GiB


def test_triton_pads_each_rank_to_64_not_128_by_hand():
    # gpt-oss-120b: 36 layers × 128 experts × 3 matrices of hidden × expert width, MXFP4 at 17/32 B a weight.
    # At TP 2 a rank holds 1,440 of the 2,880 width: Marlin pads it to 1,536, Triton to 1,472; hidden 3,072 in both.
    # The experts' bf16 biases (2,880 a matrix, 2 B) are padded alike: half of them × (1,536·2/2,944 − 1,472·2/2,880).
    m = get_model(GPT_OSS)
    weights = 36 * 128 * 3 * 3072 * (1536 - 1472) * 17 / 32
    biases = 36 * 128 * 3 * 2880 * 2 / 2 * (1536 * 2 / 2944 - 1472 * 2 / 2880)
    gap = weights + biases
    marlin, triton = _gib(m, 2, (256, 128)), _gib(m, 2, (256, 64))
    assert (marlin - triton) * GiB == pytest.approx(gap)


def test_gpt_oss_on_two_h200s_loads_as_printed():
    # a vLLM 0.15.1 log (Triton MXFP4 MoE backend, two H200s): "Model loading took 32.98 GiB"
    r = vllm_capacity(get_model(GPT_OSS), gpu=get_gpu("H200-SXM"), tensor_parallel_size=2, vllm_version="0.15.1",
                      gpu_memory_utilization=0.85)
    assert r.stages[0].weights_bytes / GiB == pytest.approx(32.98, abs=0.01)
    assert mxfp4_padding(get_gpu("H200-SXM"), _v("0.15.1")) == (256, 64)


def test_gpt_oss_on_one_h100_with_marlin_loads_as_printed():
    # a vLLM 0.10.1 log on one H100 (Marlin): "Model loading took 65.9651 GiB"
    r = vllm_capacity(get_model(GPT_OSS), gpu=get_gpu("H100-SXM"), vllm_version="0.10.1")
    assert r.stages[0].weights_bytes / GiB == pytest.approx(65.97, abs=0.1)


def test_the_result_says_which_padding_it_assumed():
    r = vllm_capacity(get_model(GPT_OSS), gpu=get_gpu("H200-SXM"), tensor_parallel_size=2, vllm_version="0.15.1")
    assert any("Triton kernel" in n and "multiple of 64" in n for n in r.notes)
    dense = vllm_capacity(get_model("meta-llama/Llama-3.1-8B"), gpu=get_gpu("H200-SXM"), vllm_version="0.15.1")
    assert not any("MXFP4" in n for n in dense.notes)


def test_bnb_statistics_nested_before_0_10_by_hand():
    # 4-bit weights with one fp32 absmax per 64 (0.10 on) or one uint8 per 64 and one fp32 per 256 blocks
    # (before): for Llama-3.1-8B's linears (6,979,321,856 weights: 32 layers × (4096 × 6144 + 4096 × 4096 +
    # 3 × 4096 × 14336)) the difference is 3 B per 64 weights less 4 B per 16,384
    assert weight_layout(None, _v("0.7.2")).bnb_nested_statistics
    assert not weight_layout(None, _v("0.10.0")).bnb_nested_statistics
    m = get_model("meta-llama/Llama-3.1-8B")
    gib = {nested: float(np.ravel(weight_bytes_per_stage(m, quantization="bitsandbytes", layout=WeightLayout(
        bnb_nested_statistics=nested))[0])[0]) for nested in (False, True)}
    per_layer = [4096 * 6144, 4096 * 4096] + [4096 * 14336] * 3
    blocks = [-(-n // 64) for n in per_layer]
    fp32 = sum(4 * b for b in blocks) * 32
    nested = sum(b + 4 * -(-b // 256) for b in blocks) * 32
    assert gib[False] - gib[True] == pytest.approx(fp32 - nested)


def test_llama_405b_in_flight_bnb_at_tp8_on_0_7_2_loads_as_printed():
    # a vLLM 0.7.2 log, eight A100-40GB, --quantization bitsandbytes on the bf16 checkpoint:
    # "Loading model weights took 25.1436 GB" (GiB, as V0 printed them)
    r = vllm_capacity(get_model("meta-llama/Llama-3.1-405B"), gpu=get_gpu("A100-40GB-SXM"), tensor_parallel_size=8,
                      quantization="bitsandbytes", vllm_version="0.7.2", max_model_len=30000)
    assert r.stages[0].weights_bytes / GiB == pytest.approx(25.14, abs=0.02)
