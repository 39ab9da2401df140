"""Roofline step times, crossover, knee, SLO batch, latency budget and sweep, against hand arithmetic."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from calculators.errors import InvalidInputError
from calculators.perf.curves import knee_batch, slo_batch
from calculators.perf.latency_budget import latency_budget
from calculators.perf.model import PerformanceModel
from calculators.perf.roofline import Efficiencies, Roofline, crossover_batch_size, prefill_terms, ridge_point
from calculators.perf.serving import serving_metrics
from calculators.perf.sweep import decode_sweep
from calculators.report.perf import perf_document
from calculators.specs.catalog import get_gpu, get_model
from calculators.vllm.concurrency import pool_blocks, replica_capacity
from tests.perf.datasheet import IDEAL

# Llama-3.1-8B by hand: a step reads the weights, 8,030,261,248 × 2 B, less the token embedding's
# 128,256 × 4,096 × 2 B (it looks up the rows of its tokens; the LM head is a matrix of its own);
# linear FLOP/token 2 × (32 × 218,103,808 linear weights + 525,336,576 LM head) = 15,009,316,864.
W_8B = 8_030_261_248 * 2 - 128_256 * 4096 * 2
F_8B = 2 * (32 * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336) + 128_256 * 4096)
H_8B = 2 * 4096 * 128_256  # the LM head's FLOP per token it runs on
KV_8B = 131_072
ATTN_8B = 4 * 32 * 128 * 32  # QKᵀ and AV, 2 FLOP per multiply-add, 32 heads × 128 × 32 layers


def test_ridge_points_match_datasheets():
    assert ridge_point(get_gpu("A100-80GB")) == pytest.approx(312e12 / 2.039e12)  # ≈ 153 FLOP/byte
    assert ridge_point(get_gpu("H100")) == pytest.approx(295.3, abs=0.1)


def test_single_sequence_decode_reads_the_weights():
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100"), efficiencies=IDEAL)
    t = r.decode_breakdown(1, 1)
    assert t["bytes"] == pytest.approx(W_8B + KV_8B, rel=1e-9)
    assert t["flop"] == pytest.approx(F_8B + ATTN_8B, rel=1e-9)
    assert r.decode_step_time_s(1, 1) == pytest.approx((W_8B + KV_8B) / 3.35e12, rel=1e-9)  # 4.80 ms
    assert isinstance(r, PerformanceModel)


def test_crossover_batch_by_hand():
    # B · (F + a·C) / peak = (W + B · kv · C) / bw  ⇒  B* = R·W / (F + a·C − R·kv·C), R = 989.4e12 / 3.35e12.
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100"), efficiencies=IDEAL)
    ridge = 989.4e12 / 3.35e12
    for ctx in (1, 64):
        expected = ridge * W_8B / (F_8B + ATTN_8B * ctx - ridge * KV_8B * ctx)
        assert crossover_batch_size(r, ctx) == pytest.approx(expected, rel=1e-6)
    # At 512 tokens the denominator is negative (15.0 GFLOP + 0.27 GFLOP < 295 × 67.1 MB): never compute-bound.
    assert F_8B + ATTN_8B * 512 < ridge * KV_8B * 512
    assert math.isinf(crossover_batch_size(r, 512))


def test_long_context_keeps_decode_memory_bound():
    # Llama-3.1-70B TP4, 2,048 tokens: per sequence 81,920 B × 2,048 = 168 MB read against ≈ 36.6 GFLOP:
    # 218 FLOP/byte, under the effective ridge 295 × 0.7 / 0.8 = 258 → memory-bound at every batch size.
    r = Roofline(get_model("meta-llama/Llama-3.1-70B"), get_gpu("H100"), tensor_parallel_size=4,
                 efficiencies=replace(IDEAL, compute=0.7, memory=0.8))
    short, long_ = crossover_batch_size(r, [128, 2048])
    assert math.isfinite(short) and math.isinf(long_)


def test_moe_reads_expected_distinct_experts():
    # Mixtral: 8 experts, top-2. E·(1 − (1 − k/E)^B) experts per layer: B=1 → 2, B=2 → 3.5, B=64 → ≈ 8.
    m = get_model("mistralai/Mixtral-8x7B-v0.1")
    r = Roofline(m, get_gpu("H100"), efficiencies=IDEAL)
    c = r.coefficients
    b1, b2, b64 = (r.decode_breakdown(b, 1)["bytes"] - b * c.kv_full_bytes_per_token for b in (1, 2, 64))
    assert b1 == pytest.approx(c.dense_weight_bytes + c.expert_weight_bytes * 2 / 8)
    assert b2 == pytest.approx(c.dense_weight_bytes + c.expert_weight_bytes * 3.5 / 8)
    assert b64 == pytest.approx(c.dense_weight_bytes + c.expert_weight_bytes, rel=1e-6)


def test_tensor_parallel_all_reduce():
    # Two ring all-reduces per layer: 2 × 32 × (2·(2−1)/2 × 64 tokens × 4,096 × 2 B / 450 GB/s + 10 µs) = 0.7146 ms.
    e = replace(IDEAL, allreduce_latency_s=10e-6)
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100"), tensor_parallel_size=2, efficiencies=e)
    assert r.decode_breakdown(64, 100)["allreduce_s"] == pytest.approx(64 * (64 * 4096 * 2 / 450e9 + 10e-6))



def test_an_attention_normalising_q_and_k_over_all_heads_all_reduces_once_more():
    """MiniMax-M2.5 RMS-normalises q and k over all 48 and 8 heads, so under TP 8 every layer also all-reduces each
    token's two fp32 sums of squares. On B200s (NVLink 900 GB/s a direction) a decode step of 16 tokens:
    62 × [2 × (2·7/8 · 16 · 3,072 · 2 B / 900 GB/s + 10 µs) + (2·7/8 · 16 · 8 B / 900 GB/s + 10 µs)]
    = 62 × [2 × 10.191147 µs + 10.000249 µs] = 1.8837 ms; with the norm per head instead, 1.2637 ms. Attention
    data-parallel (one rank's heads whole) needs no such sum."""
    e = replace(IDEAL, allreduce_latency_s=10e-6)
    m = get_model("MiniMaxAI/MiniMax-M2.5")
    assert m.qk_norm_over_heads and not get_model("Qwen/Qwen3-8B").qk_norm_over_heads
    hidden = 1.75 * 16 * 3072 * 2 / 900e9 + 10e-6
    sums = 1.75 * 16 * 8 / 900e9 + 10e-6
    r = Roofline(m, get_gpu("B200"), tensor_parallel_size=8, efficiencies=e)
    assert float(r.decode_breakdown(16, 100)["allreduce_s"]) == pytest.approx(62 * (2 * hidden + sums), rel=1e-9)
    per_head = Roofline(m.model_copy(update={"qk_norm_over_heads": False}), get_gpu("B200"), tensor_parallel_size=8,
                        efficiencies=e)
    assert float(per_head.decode_breakdown(16, 100)["allreduce_s"]) == pytest.approx(62 * 2 * hidden, rel=1e-9)
    dp = Roofline(m, get_gpu("B200"), tensor_parallel_size=8, efficiencies=e, enable_dp_attention=True)
    assert not dp.coefficients.qk_norm_allreduce
    one = Roofline(m, get_gpu("B200"), tensor_parallel_size=1, efficiencies=e)
    assert float(one.decode_breakdown(16, 100)["allreduce_s"]) == 0.0


def test_tensor_parallel_over_pcie_all_reduces_with_nccl():
    """L40S cards are joined by PCIe only, so vLLM beyond two of them all-reduces with NCCL (its custom all-reduce
    needs NVLink). At TP 4 a Llama-3.1-70B decode step of 16 tokens does 2 × 80 all-reduces, each
    2·3/4 · 16 · 8,192 · 2 B over half of 32 GB/s plus 100 µs: 160 × (24.576 µs + 100 µs) = 19.932 ms. On H100s
    (NVLink) the same step pays the NVLink latency instead: 160 × (393,216 B / 450 GB/s + 10 µs) = 1.7398 ms."""
    e = replace(IDEAL, allreduce_latency_s=10e-6, pcie_allreduce_latency_s=100e-6, pcie_link_efficiency=0.5)
    m = get_model("meta-llama/Llama-3.1-70B")
    assert get_gpu("L40S").scale_up_over_pcie and not get_gpu("H100").scale_up_over_pcie
    pcie = Roofline(m, get_gpu("L40S"), tensor_parallel_size=4, efficiencies=e)
    assert float(pcie.decode_breakdown(16, 100)["allreduce_s"]) == pytest.approx(160 * (24.576e-6 + 100e-6))
    nvlink = Roofline(m, get_gpu("H100"), tensor_parallel_size=4, efficiencies=e)
    assert float(nvlink.decode_breakdown(16, 100)["allreduce_s"]) == pytest.approx(160 * (393_216 / 450e9 + 10e-6))


@pytest.mark.parametrize("gpu, pcie", [("L40S", True), ("RTX 4090", True), ("H100-NVL", True), ("H100-PCIe", True),
                                       ("H100", False), ("MI250X", False), ("MI300X", False), ("TPU v6e", False),
                                       ("Gaudi 3", False)])
def test_which_gpus_all_reduce_over_pcie(gpu, pcie):
    # PCIe only, or a bridge that joins pairs (priced at the PCIe rate); Infinity Fabric, ICI and RoCE are not PCIe
    assert get_gpu(gpu).scale_up_over_pcie is pcie

def test_pipeline_bubble():
    r = Roofline(get_model("meta-llama/Llama-3.1-70B"), get_gpu("H100"), tensor_parallel_size=4,
                 pipeline_parallel_size=2)
    assert r.decode_breakdown(8, 100)["bubble_fraction"] == pytest.approx(1 / 3)  # (pp−1)/(pp−1+m), m = pp = 2


def test_compute_bound_linear_layers_do_not_hide_memory_bound_attention():
    # Llama-3.1-8B on an H100 at ideal efficiency, 512 sequences at 640 tokens: the linear layers' matmuls,
    # 512·F / 989.4 TFLOP/s = 7.77 ms, outlast their weight reads (W / 3.35 TB/s = 4.48 ms); attention reads
    # 512 × 640 × 131,072 B of KV (12.82 ms) for 512·640·a FLOP (0.17 ms). The kernels run one after the other,
    # so the step is 7.77 + 12.82 = 20.59 ms, where one max over the step's totals would give 17.30 ms.
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100"), efficiencies=IDEAL)
    b, ctx = 512, 640
    linear, weights = b * F_8B / 989.4e12, W_8B / 3.35e12
    attention, kv = b * ctx * ATTN_8B / 989.4e12, b * ctx * KV_8B / 3.35e12
    assert linear > weights and kv > attention
    assert r.decode_step_time_s(b, ctx) == pytest.approx(linear + kv, rel=1e-9)
    assert r.decode_step_time_s(b, ctx) == pytest.approx(0.02059, abs=1e-5)
    t = r.decode_breakdown(b, ctx)
    assert t["compute_s"] == pytest.approx(linear + attention, rel=1e-9)  # the totals it reports
    assert t["memory_s"] == pytest.approx(weights + kv, rel=1e-9)


def test_prefill_quadratic_attention_and_one_lm_head_row_per_prompt():
    # At ideal efficiency a compute-bound prefill of P tokens costs (P·F − (P − 1)·H + a·P(P+1)/2) / peak: the
    # LM head (H = 2 × 4,096 × 128,256 = 1,050,673,152 FLOP) runs on the prompt's last token only.
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100"), efficiencies=IDEAL,
                 max_num_batched_tokens=100_000)
    p = 8192
    expected = (p * F_8B - (p - 1) * H_8B + ATTN_8B * p * (p + 1) / 2) / 989.4e12  # 133.358 ms
    assert r.prefill_time_s(p) == pytest.approx(expected, rel=1e-6)
    assert r.prefill_time_s(p) == pytest.approx(0.133358, abs=1e-6)
    # In chunks of 2,048 tokens each chunk takes the logits of the prompt it carries: 4 rows, not 1.
    t = prefill_terms(r.coefficients, r.efficiencies, np.float64(p), np.float64(1), 2048)
    assert t["flop"] == pytest.approx(p * F_8B - (p - 4) * H_8B + ATTN_8B * p * (p + 1) / 2, rel=1e-12)
    # 16 prompts of 512 tokens in one pass: 16 rows.
    t = prefill_terms(r.coefficients, r.efficiencies, np.float64(512), np.float64(16), 100_000)
    assert t["flop"] == pytest.approx(16 * (512 * F_8B - 511 * H_8B + ATTN_8B * 512 * 513 / 2), rel=1e-12)


def test_a_mixed_step_runs_the_lm_head_on_its_decodes_and_one_row_per_prompt():
    # 8 decodes at 1,000 tokens fused with 1,024 prompt tokens of 512-token prompts (2 prompts): linear FLOP
    # 8·F + 1,024·F − (1,024 − 2)·H (14.56 ms at the bf16 peak: compute-bound); attention 8·a·1,000 + 1,024·a·256
    # FLOP (0.14 ms) against its KV traffic, 8 × 1,000 tokens read and 1,024 written at 131,072 B (0.35 ms at
    # 3.35 TB/s): the attention kernels are memory-bound and run after the linear layers, so the two add.
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100"), efficiencies=IDEAL)
    step = r.mixed_step_time_s(8, 1000, 1024, 512)
    linear = ((8 + 1024) * F_8B - 1022 * H_8B) / 989.4e12
    attention = ATTN_8B * (8 * 1000 + 1024 * 256) / 989.4e12
    kv = (8 * 1000 + 1024) * KV_8B / 3.35e12
    assert attention < kv
    assert float(step) == pytest.approx(linear + kv, rel=1e-9)  # no overheads at ideal efficiency
    assert float(step) == pytest.approx(0.014923, abs=1e-6)


def test_mla_prefill_attends_as_mha_at_the_16_bit_peak():
    # DeepSeek-R1 (FP8 weights) on H200 at TP 8, 16 heads per GPU, 61 layers. Decode attends in the latent space:
    # 2 · 16 · (2 · 512 + 64) = 34,816 FLOP per token of context per layer; prefill decompresses K and V and
    # attends as MHA: 2 · 16 · (128 + 64 + 128) = 10,240. Linear layers at the FP8 peak (1,978.9 TFLOP/s),
    # attention at bf16's (989.4 TFLOP/s).
    r = Roofline(get_model("deepseek-ai/DeepSeek-R1"), get_gpu("H200"), tensor_parallel_size=8,
                 efficiencies=IDEAL, max_num_batched_tokens=100_000)
    c = r.coefficients
    assert c.attn_full_flop_per_token_ctx == pytest.approx(61 * 34_816)
    assert c.attn_prefill_full_flop_per_token_ctx == pytest.approx(61 * 10_240)
    p = 8192  # compute-bound: the matmuls' time, before the all-reduces; the LM head (2 · 7,168 · 129,280 / 8
    # FLOP a token) on the last prompt token only
    assert c.lm_head_flop_per_token == pytest.approx(2 * 7168 * 129_280 / 8)
    linear_s = (p * float(c.linear_flop_per_token) - (p - 1) * 231_669_760) / 1978.9e12
    t = prefill_terms(c, r.efficiencies, np.float64(p), np.float64(1), r.max_num_batched_tokens)
    assert t["compute_s"] == pytest.approx(linear_s + 61 * 10_240 * p * (p + 1) / 2 / 989.4e12, rel=1e-9)
    # A decode step of 4,096 sequences at 1,000 tokens is compute-bound: linear FLOP at FP8, latent attention at bf16.
    t = r.decode_breakdown(4096, 1000)
    assert t["compute_s"] == pytest.approx(4096 * (float(c.linear_flop_per_token) / 1978.9e12
                                                   + 61 * 34_816 * 1000 / 989.4e12), rel=1e-9)


def test_serving_metrics_relations():
    r = Roofline(get_model("Qwen/Qwen3-8B"), get_gpu("H100"))
    m = serving_metrics(r, 16, 1000, 200)
    assert m["e2e_latency_s"] == pytest.approx(m["ttft_s"] + 199 * m["tpot_s"])
    assert m["output_tokens_per_s"] < 16 / m["tpot_s"]  # prefill takes its share
    assert m["output_tokens_per_s_per_gpu"] == m["output_tokens_per_s"]


def test_knee_and_slo_batch():
    b = [1, 2, 4, 8, 16]
    assert knee_batch(b, [10, 19, 30, 33, 34]) == 4  # 4 → 8 gains 10 % < 15 %
    assert knee_batch(b, [10, 19, 30, 33, 34], threshold=0.05) == 8
    assert knee_batch(b, [1, 2, 4, 8, 16]) == 16  # every doubling still pays
    assert slo_batch(b, [0.1] * 5, [0.01, 0.02, 0.03, 0.05, 0.09], tpot_target_s=0.05) == 8
    assert slo_batch(b, [0.1] * 5, [0.06] * 5, tpot_target_s=0.05) is None


def test_latency_budget_seed_001():
    # Seed 001: p95 budget 300 ms, single-stream service 200 ms → max_wait ≤ 100 ms.
    lb = latency_budget(target_s=0.3, prefill_s=0.02, tpot_s=0.01, output_len=19)
    assert lb["total_s"] == pytest.approx(0.2) and lb["max_wait_s"] == pytest.approx(0.1)
    short = latency_budget(target_s=0.1, prefill_s=0.02, tpot_s=0.01, output_len=19, network_s=0.01)
    assert short["margin_s"] == pytest.approx(-0.11) and not short["meets_target"] and short["max_wait_s"] == 0


def test_sweep_equals_scalar_models():
    models = [get_model("meta-llama/Llama-3.1-8B"), get_model("Qwen/Qwen3-30B-A3B")]
    gpus = [get_gpu("H100"), get_gpu("A100-80GB")]
    df = decode_sweep(models, gpus, [1, 2, 4], np.array([1, 16, 256]), np.array([128, 8192]))
    assert len(df) == 2 * 2 * 3 * 3 * 2
    for row in df.sample(10, random_state=0).itertuples():
        r = Roofline(next(m for m in models if m.id == row.model), get_gpu(row.gpu),
                     tensor_parallel_size=row.tensor_parallel_size)
        assert row.decode_step_s == pytest.approx(r.decode_step_time_s(row.batch_size, row.context_tokens).item())


def test_a_sweep_prices_the_third_all_reduce_only_where_the_model_has_it():
    # MiniMax-M2.5 (q and k normalised over all heads) beside Qwen3-30B-A3B (per head) in one vectorised sweep: each
    # row is the scalar model's step (16-bit weights, the sweep's "none"), so the extra all-reduce lands on MiniMax's
    # rows at TP > 1 only
    models = [get_model("MiniMaxAI/MiniMax-M2.5"), get_model("Qwen/Qwen3-30B-A3B")]
    df = decode_sweep(models, [get_gpu("B200")], [1, 4, 8], np.array([1, 64]), np.array([1024]))
    for row in df.itertuples():
        r = Roofline(next(m for m in models if m.id == row.model), get_gpu("B200"),
                     tensor_parallel_size=row.tensor_parallel_size, quantization="none")
        assert row.decode_step_s == pytest.approx(r.decode_step_time_s(row.batch_size, row.context_tokens).item())


def test_bad_inputs():
    with pytest.raises(InvalidInputError, match="compute_efficiency"):
        Efficiencies(compute=1.5)
    with pytest.raises(InvalidInputError, match="moe_compute_share"):
        Efficiencies(moe_compute_share=0.0)
    # a share of 1e-308 (found by the long fuzz run) overflowed the step times to infinity: below 0.1 % is refused
    for field, kw in (("compute_efficiency", {"compute": 1e-308}), ("memory_efficiency", {"memory": 5e-4})):
        with pytest.raises(InvalidInputError, match=f"{field}.*from 0.001 to 1"):
            Efficiencies(**kw)
    assert Efficiencies(compute=1e-3, memory=1e-3).compute == 1e-3
    # a fixed cost beyond a minute (1e297 s once printed a 300-digit TTFT) or a negative one is refused likewise
    for kw in ({"step_overhead_s": 1e297}, {"request_overhead_s": 61.0}, {"layer_overhead_s": -1e-6}):
        with pytest.raises(InvalidInputError, match=f"{next(iter(kw))}.*seconds up to 60"):
            Efficiencies(**kw)
    assert Efficiencies(step_overhead_s=60.0).step_overhead_s == 60.0
    r = Roofline(get_model("Qwen/Qwen3-8B"), get_gpu("H100"))
    with pytest.raises(InvalidInputError, match="batch_size"):
        r.decode_step_time_s(0, 100)
    with pytest.raises(InvalidInputError, match="context_tokens"):
        r.decode_step_time_s(1, -1)
    with pytest.raises(InvalidInputError, match="scheduler_recv_interval"):
        Roofline(get_model("Qwen/Qwen3-8B"), get_gpu("H100"), scheduler_recv_interval=0)
    with pytest.raises(InvalidInputError, match="max_num_batched_tokens"):
        Roofline(get_model("Qwen/Qwen3-8B"), get_gpu("H100"), max_num_batched_tokens=-8)


def test_tensor_parallelism_stays_within_a_node():
    """The all-reduce term prices the scale-up link; TP 16 on 8-GPU H200 nodes would cross the network between
    them, so it is refused with the limit named (an NVL72 rack of GB200s is one scale-up domain of 72)."""
    dsv3 = get_model("deepseek-ai/DeepSeek-V3")
    with pytest.raises(InvalidInputError, match=r"tensor_parallel_size.*at most 8, the GPUs of one H200-SXM scale-up"):
        Roofline(dsv3, get_gpu("H200-SXM"), tensor_parallel_size=16).decode_step_time_s(1, 1000)
    Roofline(get_model("Qwen/Qwen3-8B"), get_gpu("GB200"), tensor_parallel_size=16).decode_step_time_s(1, 1000)


def _llmcap(*args):
    root = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", "calculators.cli", *args], capture_output=True, text=True,
                          cwd=root, timeout=60)


def test_cli_perf_and_knee():
    doc = json.loads(_llmcap("perf", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "-tp", "4",
                             "--batch-size", "32", "--input-len", "2048", "--output-len", "256", "--json").stdout)
    assert doc["bound"] == "memory" and doc["kv_batch_limit"] > 32
    # A 2,176-token GQA sequence does about 200 FLOP per byte it reads, near H100's effective ridge (295 FLOP/byte
    # × compute / memory efficiency): compute-bound only beyond what the KV cache holds, or never (None).
    assert doc["crossover_batch_size"] is None or doc["crossover_batch_size"] > doc["kv_batch_limit"]
    assert doc["e2e_latency_s"] == pytest.approx(doc["ttft_s"] + 255 * doc["tpot_s"])
    knee = json.loads(_llmcap("knee", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "L40S", "-tp", "4",
                              "--input-len", "512", "--output-len", "256", "--tpot-ms", "10", "--json").stdout)
    assert knee["slo_batch_size"] is None and "TPOT ≥" in knee["message"]
    p = _llmcap("perf", "--model", "Qwen/Qwen3-8B", "--gpu", "H100", "--batch-size", "4", "--input-len", "60000",
                "--output-len", "10")
    assert p.returncode == 2 and "max_position_embeddings" in p.stderr
    p = _llmcap("perf", "--model", "Qwen/Qwen3-8B", "--gpu", "H100", "--batch-size", "0", "--input-len", "6",
                "--output-len", "10")
    assert p.returncode == 2 and "batch_size" in p.stderr


def test_cli_perf_takes_sglangs_scheduler_recv_interval():
    """With SGLang polling for new requests every 30 steps, an arrival at 16 in flight waits 15 steps on average
    instead of half a step: TTFT grows by 14.5 TPOT, TPOT itself does not change."""
    args = ("perf", "--model", "Qwen/Qwen3-8B", "--gpu", "H100", "--concurrency", "16", "--input-len", "1000",
            "--output-len", "200", "--json")
    every, thirty = (json.loads(_llmcap(*args, *extra).stdout) for extra in ((), ("--scheduler-recv-interval", "30")))
    assert thirty["tpot_s"] == pytest.approx(every["tpot_s"])
    assert thirty["ttft_s"] - every["ttft_s"] == pytest.approx(14.5 * every["tpot_s"])
    p = _llmcap(*args, "--scheduler-recv-interval", "0")
    assert p.returncode == 2 and "scheduler_recv_interval" in p.stderr


def test_perf_concurrency_beyond_the_kv_cache_waits_for_a_slot():
    r = Roofline(get_model("meta-llama/Llama-3.1-8B-Instruct"), get_gpu("L4"))
    doc = perf_document(r, input_len=2000, output_len=500, concurrency=200)
    # vLLM runs sequences spread over their decode at their mean length, 2,000 + 500/2 = 2,250 tokens: 141 blocks
    # of 16 each, where a whole 2,500-token sequence takes 157
    blocks = pool_blocks(replica_capacity(r.model, r.gpu, 1)[1])
    assert doc["kv_batch_limit"] == blocks // 157 and doc["kv_running_limit"] == blocks // 141
    m = doc["kv_running_limit"]
    assert 1 < m < 200 and doc["batch_size"] == m and m > doc["kv_batch_limit"]
    # the M that fit cycle in R = TTFT₀ + 499 · TPOT, of which R − r holds a slot (r: the request overhead), so
    # the replica serves M/(R − r) requests/s and each of the 200 waits W = 200 (R − r)/M − R (Little's law)
    r_cycle, over = doc["e2e_latency_s"] - doc["queue_wait_s"], doc["request_overhead_s"]
    assert doc["queue_wait_s"] == pytest.approx(200 * (r_cycle - over) / m - r_cycle)
    assert doc["requests_per_s"] == pytest.approx(m / (r_cycle - over))
    assert "wait" in doc["warning"] and f"holds {m} sequences at their mean length of 2,250 tokens" in doc["warning"]
    assert perf_document(r, input_len=2000, output_len=500, concurrency=4)["queue_wait_s"] == 0.0
    fits = perf_document(r, input_len=2000, output_len=500, concurrency=m)
    assert fits["queue_wait_s"] == 0.0 and "vLLM runs them all" in fits["warning"]   # but not whole: it may preempt
    # a static batch's sequences grow together: waves of the sequences of 2,500 tokens the cache holds
    batch = perf_document(r, input_len=2000, output_len=500, batch_size=m)
    assert batch["queue_wait_s"] > 0 and f"at most {doc['kv_batch_limit']} run at once" in batch["warning"]
