"""The engine a corpus row ran: TensorRT-LLM's and vLLM's KV pools, what a running sequence is charged, the
batch of a throughput ceiling and each release's scheduler limits, worked by hand."""
from __future__ import annotations

import numpy as np
import pytest

from calculators.perf import corpus_engine
from calculators.perf.coefficients import engine_generation
from calculators.perf.roofline import Roofline
from calculators.specs.catalog import get_gpu, get_model
from calculators.vllm.capacity import vllm_capacity


def test_a_tensorrt_llm_pool_is_its_share_of_the_memory_left_after_the_weights():
    # TensorRT-LLM keeps kv_cache_free_gpu_mem_fraction (0.9) of the memory its weights, activations and runtime
    # leave; vLLM keeps gpu_memory_utilization (0.9) of the whole memory less them. Llama-3.3-70B with a 16-bit
    # cache keeps 2 · 80 layers · 8 heads · 128 · 2 B = 327,680 B a token, 16-token blocks of 5,242,880 B, and a
    # sequence of 128 + 2,048 tokens takes 136 of them.
    model, gpu = get_model("meta-llama/Llama-3.3-70B-Instruct"), get_gpu("H200-SXM")
    stage = vllm_capacity(model, gpu=gpu, quantization="fp8", max_model_len=2_176).binding
    assert stage.kv_bytes_per_token == 327_680
    free = gpu.memory_bytes - stage.weights_bytes - stage.activation.value - stage.non_torch.value
    blocks = int(0.9 * free) // (16 * 327_680)
    trt = corpus_engine.kv_limit(model.id, gpu.id, 1, 1, "fp8", "auto", 2_176, trtllm_pool=True)
    assert trt == blocks // 136
    assert trt > corpus_engine.kv_limit(model.id, gpu.id, 1, 1, "fp8", "auto", 2_176)


def test_offline_ceiling_batch_is_the_fewest_of_kv_engine_and_prompts(monkeypatch):
    monkeypatch.setattr(corpus_engine, "kv_limit", lambda *config: 300)              # the pool holds 300 sequences
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"))
    i, o = np.array([1000.0, 1000.0, 1000.0]), np.array([200.0, 200.0, 200.0])
    prompts = np.array([1000.0, 100.0, np.nan])
    assert corpus_engine.ceiling_batch(r, "vllm-v0", i, o, prompts, 256).tolist() == [256, 100, 256]
    assert corpus_engine.ceiling_batch(r, "trtllm", i, o, prompts, 2048).tolist() == [300, 100, 300]
    assert corpus_engine.ceiling_batch(r, "sglang", i, o, np.array([5000.0, 0.5, np.nan])).tolist() == [300, 1, 300]


def test_vllm_holds_sequences_at_their_mean_length_and_tensorrt_llm_at_their_full_length(monkeypatch):
    """vLLM admits on the blocks a prompt needs now and preempts when a running sequence finds none, so a full
    pool of 64,000 tokens holds 64,000 // (1,000 + 200/2) = 58 sequences of 1,000 + 200 tokens in flight;
    TensorRT-LLM reserves 1,000 + 200 on admission: 64,000 // 1,200 = 53, and so many fit vLLM in lockstep."""
    assert corpus_engine.footprint_tokens("vllm-v1", np.array([1000.0, 512.0]), np.array([200.0, 255.0])).tolist() == [
        1100.0, 640.0]                                                                # 512 + 127.5, rounded up
    assert corpus_engine.footprint_tokens("trtllm", np.array([1000.0]), np.array([200.0])).tolist() == [1200.0]
    monkeypatch.setattr(corpus_engine, "kv_limit", lambda *config: 64_000 // config[6])
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"))
    i, o, prompts = np.array([1000.0]), np.array([200.0]), np.array([np.inf])
    assert corpus_engine.ceiling_batch(r, "vllm-v1", i, o, prompts, 1024).tolist() == [58]
    assert corpus_engine.ceiling_batch(r, "vllm-v0", i, o, prompts, 256).tolist() == [58]
    assert corpus_engine.ceiling_batch(r, "trtllm", i, o, prompts, 2048).tolist() == [53]
    # in lockstep (equal lengths, started together) vLLM's sequences all reach 1,200 tokens at once
    assert corpus_engine.ceiling_batch(r, "vllm-v1", i, o, prompts, 1024, np.array([True])).tolist() == [53]


@pytest.mark.parametrize(("engine", "version", "gpu", "stated", "limits"), [
    ("vllm", "0.18.0", "H100-SXM", None, (8192, 1024)),    # V1 on >= 70 GiB (arg_utils.py get_batch_defaults)
    ("vllm", "0.14.1", "GB300", None, (8192, 1024)),       # the >= 160 GiB tier came in 0.28
    ("vllm", "0.10.2", "L40S", None, (2048, 256)),         # the small tier
    ("vllm", "0.10.2", "L40S", 4096, (4096, 256)),         # a stated budget stands
    ("vllm", "0.8.3", "A100-40GB-SXM", None, (2048, 1024)),  # 0.7-0.8.3: every GPU 1024 sequences
    ("vllm", "0.6.3 (the V0 engine)", "H100-SXM", None, (8192, 256)),  # V0: the fixed defaults
    ("trtllm", "1.0.0", "H100-SXM", None, (8192, 2048)),
    ("sglang", "0.5.6", "B200", 16384, (16384, np.inf)),
])
def test_each_row_runs_its_engines_scheduler_limits(engine, version, gpu, stated, limits):
    """A vLLM V1 row runs with the token budget and the largest batch ``vllm serve`` of its release picks on its
    GPU; other engines with the budget they state (else 8,192 tokens) and their default largest batch."""
    generation = engine_generation(engine, version)
    got = corpus_engine.scheduler_limits(engine, version, generation, "meta-llama/Llama-3.1-8B", gpu, stated)
    assert got == limits
