"""The MXFP4 MoE kernel vLLM picks, and its padding of gpt-oss's experts (worked by hand, checked on logs)."""
from __future__ import annotations

import numpy as np
import pytest

from calculators.memory.weights import weight_bytes_per_stage
from calculators.specs.catalog import get_gpu, get_model
from calculators.units import GiB
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.versions import parse_vllm_version
from calculators.vllm.weight_layout import mxfp4_moe_backend, mxfp4_padding

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
    return float(np.ravel(weight_bytes_per_stage(model, tensor_parallel_size=tp, mxfp4_padding=padding)[0])[0]) / GiB


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
