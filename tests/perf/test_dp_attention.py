"""Data-parallel attention (``enable_dp_attention``), each term worked by hand from DeepSeek-V3's config.json
(hidden 7,168, 128 heads, q_lora_rank 1,536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128, 61 layers,
58 of them MoE with 256 experts, 8 routed) and the H200's datasheet (NVLink 450 GB/s a direction)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from calculators.errors import InvalidInputError
from calculators.memory.weights import weight_bytes_per_gpu
from calculators.perf.roofline import Efficiencies, Roofline, decode_terms
from calculators.report.perf import kv_batch_limit
from calculators.specs.catalog import get_gpu, get_model
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.concurrency import attention_ranks, batch_limit

V3 = get_model("deepseek-ai/DeepSeek-V3")
H200 = get_gpu("H200-SXM")
#: Attention's TP-split projections per layer: q_b 1,536 × 128·192, kv_b 512 × 128·256, o 128·128 × 7,168.
ATTN_SPLIT_PARAMS = 1_536 * 128 * 192 + 512 * 128 * 256 + 128 * 128 * 7_168


def _roofline(dp: bool, **kw) -> Roofline:
    return Roofline(V3, H200, tensor_parallel_size=8, quantization="none", enable_dp_attention=dp, **kw)


def test_attention_weights_are_whole_on_every_gpu():
    """At TP 8 a GPU holds 1/8 of q_b, kv_b and o; with DP attention all of them: 7/8 × 171,966,464 parameters
    × 61 layers × 2 bytes (bf16) = 18,357,420,032 bytes more per GPU. The MLA down-projections are replicated
    either way and the experts keep their split."""
    extra = (weight_bytes_per_gpu(V3, tensor_parallel_size=8, quantization="none", dp_attention=True)
             - weight_bytes_per_gpu(V3, tensor_parallel_size=8, quantization="none"))
    assert ATTN_SPLIT_PARAMS == 171_966_464
    assert float(extra) == pytest.approx(ATTN_SPLIT_PARAMS * 7 / 8 * 61 * 2, rel=1e-12)
    assert float(extra) == pytest.approx(18_357_420_032, rel=1e-12)


def test_each_gpu_keeps_its_own_sequences_latent_cache():
    """MLA's cache is one 512 + 64 latent a token a layer (1,152 bytes in bf16), replicated on every GPU under
    TP: 1,152 × 61 = 70,272 bytes a GPU reads per token of the replica. With DP attention a GPU holds 1/8 of
    the sequences: 8,784 bytes per replica token."""
    assert float(_roofline(False).coefficients.kv_full_bytes_per_token) == pytest.approx(70_272)
    assert float(_roofline(True).coefficients.kv_full_bytes_per_token) == pytest.approx(8_784)


def test_the_collectives_move_half_the_bytes_at_the_same_latency():
    """A decode step of 64 tokens: under TP two all-reduces a layer, each ``2·7/8 · 64 · 7,168 · 2 B / 450 GB/s
    + 10 µs`` = 1,605,632 B / 450 GB/s + 10 µs = 3.5681 µs + 10 µs; with DP attention an all-gather and a
    reduce-scatter, each half those bytes: 1.7840 µs + 10 µs. Over 61 layers: 2 · 61 · 13.5681 µs = 1.65531 ms
    and 2 · 61 · 11.7840 µs = 1.43765 ms."""
    e = Efficiencies(allreduce_latency_s=10e-6)
    one = 2 * 7 / 8 * 64 * 7_168 * 2 / 450e9
    assert one == pytest.approx(3.5681e-6, rel=1e-4)
    for dp, total_s in ((False, 1.65531e-3), (True, 1.43765e-3)):
        t = decode_terms(_roofline(dp, efficiencies=e).coefficients, e, 64.0, 1_000.0, 1)
        assert float(t["allreduce_s"]) == pytest.approx(total_s, rel=1e-5)


def test_the_step_waits_for_the_busiest_attention_rank():
    """One sequence's attention runs on one GPU with all 128 heads: 8 times its time under TP, where 8 GPUs
    share its heads. With 8 or more sequences every rank has its share and the two layouts do the same work."""
    e = Efficiencies()
    tp, dp = _roofline(False).coefficients, _roofline(True).coefficients
    one_tp, one_dp = (decode_terms(c, e, 1.0, 4_000.0, 1) for c in (tp, dp))
    assert float(one_dp["attention_s"]) == pytest.approx(8 * float(one_tp["attention_s"]), rel=1e-12)
    eight_tp, eight_dp = (decode_terms(c, e, 8.0, 4_000.0, 1) for c in (tp, dp))
    assert float(eight_dp["attention_s"]) == pytest.approx(float(eight_tp["attention_s"]), rel=1e-12)
    # the latent cache is read once per sequence instead of once per GPU: 1/8 of the bytes at 8 sequences
    assert float(eight_dp["kv_s"]) == pytest.approx(float(eight_tp["kv_s"]) / 8, rel=1e-12)


def test_the_replica_holds_one_pool_per_gpu():
    """vLLM's ``--data-parallel-size 8 --enable-expert-parallel`` starts 8 engines of TP 1, each with attention
    whole and 32 of the 256 experts, each with its own pool: the replica holds 8 times one rank's sequences."""
    assert attention_ranks(8, True) == (8, 1, 8)   # pools, TP of a pool, EP of a pool
    assert attention_ranks(8, False) == (1, 8, None)
    rank = vllm_capacity(V3, gpu=H200, tensor_parallel_size=1, expert_parallel_size=8, max_model_len=8_192)
    r = Roofline(V3, H200, tensor_parallel_size=8, enable_dp_attention=True)
    assert kv_batch_limit(r, 2_000, max_model_len=8_192) == 8 * batch_limit(V3, rank, 2_000)
    assert kv_batch_limit(r, 2_000, max_model_len=8_192) > kv_batch_limit(
        Roofline(V3, H200, tensor_parallel_size=8), 2_000, max_model_len=8_192)


def test_a_dense_model_is_refused_with_the_reason():
    with pytest.raises(InvalidInputError, match="enable_dp_attention.*mixture-of-experts"):
        Roofline(get_model("meta-llama/Llama-3.1-70B"), H200, tensor_parallel_size=8, enable_dp_attention=True)


def test_llmcap_perf_takes_the_flag():
    """``--enable-dp-attention`` reaches the model: the JSON says so and the KV cache holds more sequences."""
    def run(*extra: str) -> dict:
        out = subprocess.run([sys.executable, "-m", "calculators.cli", "perf", "--model", V3.id, "--gpu", H200.id,
                              "-tp", "8", "--input-len", "1000", "--output-len", "1000", "--concurrency", "64",
                              "--json", *extra], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    plain, dp = run(), run("--enable-dp-attention")
    assert (plain["enable_dp_attention"], dp["enable_dp_attention"]) == (False, True)
    assert dp["kv_batch_limit"] > plain["kv_batch_limit"]
    assert np.isfinite(dp["tpot_s"]) and dp["tpot_s"] > 0
