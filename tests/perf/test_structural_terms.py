"""The step-time terms that engines show beyond the roofline, and the fitted coefficients file (by hand)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from calculators.errors import InvalidInputError
from calculators.perf.coefficients import Profile, engine_generation, fitted_on, gpu_family, parse_fit_file, resolved
from calculators.perf.roofline import Efficiencies, Roofline
from calculators.specs.catalog import get_gpu, get_model
from tests.perf.datasheet import IDEAL

W_8B = 8_030_261_248 * 2 - 128_256 * 4096 * 2  # Llama-3.1-8B weights less the token embedding [bytes]
KV_8B = 131_072                                 # KV bytes per token, 32 layers × 2 × 8 heads × 128 × 2 B
ATTN_8B = 4 * 32 * 128 * 32                     # attention FLOP per token per context token: QKᵀ and AV
BW_H100 = 3.35e12


def _l8(e: Efficiencies) -> Roofline:
    return Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100"), efficiencies=e)


def test_software_costs_per_step_per_layer_per_sequence():
    # B = 4 at 1 token: memory-bound, (W + 4·KV)/bw, plus 1 ms + 32 layers × 10 µs + 4 sequences × 5 µs = 1.34 ms.
    e = replace(IDEAL, step_overhead_s=1e-3, layer_overhead_s=10e-6, sequence_overhead_s=5e-6)
    assert _l8(e).decode_step_time_s(4, 1) == pytest.approx((W_8B + 4 * KV_8B) / BW_H100 + 1.34e-3, rel=1e-9)


def test_attention_bandwidth_halves_at_the_halving_context():
    # One sequence at 8,192 tokens with the halving context at 8,192: its KV read takes twice as long.
    e = replace(IDEAL, attention_halving_context_tokens=8192.0)
    assert _l8(e).decode_step_time_s(1, 8192) == pytest.approx((W_8B + 2 * 8192 * KV_8B) / BW_H100, rel=1e-9)


def test_expert_reads_slow_down_at_few_tokens_per_expert():
    # Mixtral (8 experts, top-2), B = 1: 2 of 8 experts read, 0.25 tokens per expert → × (1 + 0.5/1.25) = 1.4,
    # at half the dense bandwidth → × 2.8 in all (1.8 more); 32 MoE layers × 20 µs = 0.64 ms on top.
    r0 = Roofline(get_model("mistralai/Mixtral-8x7B-v0.1"), get_gpu("H100"), efficiencies=IDEAL)
    c = r0.coefficients
    e = replace(IDEAL, moe_small_batch_penalty=0.5, moe_layer_overhead_s=20e-6, moe_expert_efficiency=0.5)
    r = Roofline(get_model("mistralai/Mixtral-8x7B-v0.1"), get_gpu("H100"), efficiencies=e)
    extra = float(c.expert_weight_bytes) * 2 / 8 * 1.8 / BW_H100 + 32 * 20e-6
    assert r.decode_step_time_s(1, 1) - r0.decode_step_time_s(1, 1) == pytest.approx(extra, rel=1e-9)


def test_steps_with_prompt_tokens_pay_the_eager_launches():
    # Mixtral: 32 layers, all MoE. A step that carries prompt tokens runs outside the captured graphs:
    # 32 × 30 µs + 32 × 50 µs = 2.56 ms more; a decode step (no prompt tokens) pays nothing; a prefill of
    # 10,000 tokens in chunks of 8,192 pays it twice.
    model, gpu = get_model("mistralai/Mixtral-8x7B-v0.1"), get_gpu("H100")
    r0 = Roofline(model, gpu, efficiencies=IDEAL)
    r = Roofline(model, gpu, efficiencies=replace(IDEAL, prefill_layer_overhead_s=30e-6,
                                                  prefill_moe_layer_overhead_s=50e-6))
    assert r.mixed_step_time_s(8, 1000, 512, 512) - r0.mixed_step_time_s(8, 1000, 512, 512) == pytest.approx(2.56e-3)
    assert r.mixed_step_time_s(8, 1000, 0, 512) == r0.mixed_step_time_s(8, 1000, 0, 512)
    assert r.decode_step_time_s(8, 1000) == r0.decode_step_time_s(8, 1000)
    assert r.prefill_time_s(10_000) - r0.prefill_time_s(10_000) == pytest.approx(2 * 2.56e-3)
    dense = Roofline(get_model("meta-llama/Llama-3.1-8B"), gpu, efficiencies=replace(
        IDEAL, prefill_layer_overhead_s=30e-6, prefill_moe_layer_overhead_s=50e-6))
    assert dense.prefill_time_s(1000) - _l8(IDEAL).prefill_time_s(1000) == pytest.approx(32 * 30e-6)   # no MoE


def test_moe_costs_count_only_the_layers_that_have_experts():
    # DeepSeek-R1: 61 layers, the first 3 dense (first_k_dense_replace = 3), so 58 MoE layers × 50 µs = 2.9 ms;
    # Llama-4-Maverick: MoE on every other of its 48 layers, 24 × 50 µs = 1.2 ms.
    gpu = get_gpu("H200")
    for model, moe_layers in (("deepseek-ai/DeepSeek-R1", 58), ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", 24)):
        base = Roofline(get_model(model), gpu, tensor_parallel_size=8, efficiencies=IDEAL)
        more = Roofline(get_model(model), gpu, tensor_parallel_size=8,
                        efficiencies=replace(IDEAL, moe_layer_overhead_s=50e-6))
        assert more.decode_step_time_s(16, 1024) - base.decode_step_time_s(16, 1024) == pytest.approx(
            moe_layers * 50e-6, rel=1e-9)


def test_expert_matmuls_take_their_share_of_the_compute_efficiency():
    # Mixtral-8x7B: 2 of 8 experts of 3 × 4096 × 14336 parameters in each of 32 layers run per token, 2 FLOP per
    # parameter: 22,548,578,304 FLOP. At half the share they take twice as long; 4,096 prompt tokens on an H200
    # (989.4 TFLOP/s bf16) are compute-bound, so the prefill grows by the experts' time at the full share.
    model, gpu = get_model("mistralai/Mixtral-8x7B-Instruct-v0.1"), get_gpu("H200")
    full = Roofline(model, gpu, efficiencies=IDEAL)
    half = Roofline(model, gpu, efficiencies=replace(IDEAL, moe_compute_share=0.5))
    experts_s = 4096 * 2 * 2 * 32 * 3 * 4096 * 14336 / 989.4e12
    assert half.prefill_time_s(4096) - full.prefill_time_s(4096) == pytest.approx(experts_s, rel=1e-9)
    dense = Roofline(get_model("meta-llama/Llama-3.1-8B"), gpu, efficiencies=replace(IDEAL, moe_compute_share=0.5))
    assert dense.prefill_time_s(4096) == Roofline(get_model("meta-llama/Llama-3.1-8B"), gpu,
                                                  efficiencies=IDEAL).prefill_time_s(4096)   # no experts


def test_mla_kernel_efficiency_scales_the_latent_reads():
    # DeepSeek-V3-style MLA: at half efficiency the latent KV read takes twice as long, the rest is unchanged.
    model, gpu = get_model("deepseek-ai/DeepSeek-R1"), get_gpu("H200")
    base = Roofline(model, gpu, tensor_parallel_size=8, efficiencies=IDEAL)
    half = Roofline(model, gpu, tensor_parallel_size=8, efficiencies=replace(IDEAL, mla_attention=0.5))
    kv = 16 * 4096 * float(base.coefficients.kv_full_bytes_per_token)
    assert half.decode_step_time_s(16, 4096) - base.decode_step_time_s(16, 4096) == pytest.approx(
        kv / 4.8e12, rel=1e-9)


PROFILE = Profile.model_validate({
    "reference": {"compute": 0.6, "memory": 0.7, "step_overhead_s": 1e-3, "layer_overhead_s": 1e-5,
                  "sequence_overhead_s": 2e-5, "allreduce_latency_s": 1e-5, "attention_halving_context_tokens": 1e5,
                  "pcie_allreduce_latency_s": 1e-4, "pcie_link_efficiency": 0.5,
                  "moe_small_batch_penalty": 0.1, "moe_layer_overhead_s": 1e-5, "moe_expert_efficiency": 0.8,
                  "mla_attention": 0.9, "request_overhead_s": 0.05, "prefill_layer_overhead_s": 0.0,
                  "prefill_moe_layer_overhead_s": 0.0, "fp8_compute_share": 0.8,
                  "fp4_compute_share": 0.5},
    "family": {"AMD CDNA3": {"compute": 0.5, "memory": 0.4}, "AMD CDNA4": {"compute": 0.5, "memory": 0.6,
                                                                       "overhead_factor": 0.25}},
    "engine": {"sglang": {"overhead_factor": 0.5}}})


def test_family_and_engine_entries_resolve_by_hand():
    mi300 = resolved(PROFILE, "AMD", "CDNA 3", "sglang")
    assert (mi300["compute"], mi300["memory"]) == (0.5, 0.4)
    assert mi300["step_overhead_s"] == pytest.approx(1e-3 * 0.5)                # SGLang's factor
    assert mi300["allreduce_latency_s"] == 1e-5                                 # not a software-step cost
    assert mi300["request_overhead_s"] == 0.05                                  # the serving path's, unfactored
    mi355 = resolved(PROFILE, "AMD", "CDNA 4", "sglang")
    assert mi355["layer_overhead_s"] == pytest.approx(1e-5 * 0.5 * 0.25)        # SGLang × CDNA4
    assert mi355["moe_layer_overhead_s"] == pytest.approx(1e-5 * 0.5 * 0.25)    # SGLang × CDNA4
    assert mi355["step_overhead_s"] == pytest.approx(1e-3 * 0.5)                # the host's: no family factor
    h100 = resolved(PROFILE, "NVIDIA", "Hopper", "vllm-v1")                      # no entries: the reference
    assert (h100["memory"], h100["sequence_overhead_s"]) == (0.7, 2e-5)
    assert fitted_on(PROFILE, "AMD", "CDNA 3") == "AMD CDNA3"
    assert fitted_on(PROFILE, "NVIDIA", "Hopper") is None
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("MI300X"), engine="sglang", profile=PROFILE)
    assert r.efficiencies.memory == 0.4
    given = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("MI300X"), efficiencies=IDEAL, profile=PROFILE)
    assert given.efficiencies == IDEAL                                          # a caller's set is used as given


def test_narrow_matmuls_take_their_share_of_the_compute_efficiency():
    """8-bit matmuls reach 0.8 × and 4-bit ones 0.5 × the family's 16-bit share of their own (higher) peaks; the
    family's compute efficiency itself stays the 16-bit one, which attention's matmuls use."""
    for args, share in ((("AMD", "CDNA 3", "sglang", "fp8"), 0.8), (("AMD", "CDNA 3", "sglang", "int8"), 0.8),
                        (("NVIDIA", "Blackwell", "vllm-v1", "fp4"), 0.5),
                        (("NVIDIA", "Hopper", "vllm-v1", "fp16"), 1.0)):
        assert resolved(PROFILE, *args)["compute_dtype_share"] == pytest.approx(share)
    assert resolved(PROFILE, "AMD", "CDNA 3", "sglang", "fp8")["compute"] == 0.5
    assert "fp8_compute_share" not in resolved(PROFILE, "NVIDIA", "Hopper", "vllm-v1")   # not a roofline field
    fp8 = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"), quantization="fp8", profile=PROFILE)
    bf16 = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"), profile=PROFILE)
    assert (fp8.dtype_used, fp8.efficiencies.compute, fp8.efficiencies.compute_dtype_share) == ("fp8", 0.6, 0.8)
    assert (bf16.efficiencies.compute, bf16.efficiencies.compute_dtype_share) == (0.6, 1.0)


def test_fp8_linear_layers_take_the_share_and_attention_its_own():
    # Llama-3.1-8B in FP8 on an H100, a compute-bound decode step of 512 sequences at 640 tokens, efficiencies by
    # hand (compute 0.6, FP8 share 0.8, attention share 0.5, no overheads): linear 512 × F ÷ (1,978.9 TFLOP/s × 0.6
    # × 0.8) and attention 512 × 640 × a ÷ (989.4 TFLOP/s × 0.6 × 0.5): its queries, keys and values stay 16-bit,
    # so the FP8 share does not apply to it, and the fused kernel takes its own share.
    eff = replace(IDEAL, compute=0.6, compute_dtype_share=0.8, attention_compute_share=0.5)
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"), quantization="fp8", efficiencies=eff)
    t = r.decode_breakdown(512, 640)
    linear_flop = float(t["flop"]) - 512 * 640 * ATTN_8B
    assert float(t["linear_s"]) == pytest.approx(linear_flop / (1978.9e12 * 0.6 * 0.8), rel=1e-9)
    assert float(t["attention_s"]) == pytest.approx(512 * 640 * ATTN_8B / (989.4e12 * 0.6 * 0.5), rel=1e-9)


def test_engine_generations_and_families():
    assert engine_generation("vllm", "vLLM 0.6.3.post2") == "vllm-v0"
    assert engine_generation("vllm", "0.11.0") == engine_generation("vllm", None) == "vllm-v1"
    assert engine_generation("vllm", "v0.14.1") == engine_generation("vllm", "0.18.0") == "vllm-v1"
    assert engine_generation("vllm", "0.8.3, run on the V0 engine (pipeline parallelism fell back)") == "vllm-v0"
    # V1 before 0.11 captured the pieces between the attention kernels, not whole decode steps
    assert engine_generation("vllm", "0.8.3 (V1 engine)") == engine_generation("vllm", "0.10.2") == "vllm-v1-piecewise"
    # the engine's own release, not the ROCm version before it
    assert engine_generation("vllm", "rocm/vllm:rocm6.4.1_vllm_0.9.1_20250702 (vLLM 0.9.1)") == "vllm-v1-piecewise"
    assert engine_generation("sglang", "lmsysorg/sglang:v0.5.9-rocm700-mi30x") == "sglang"
    assert engine_generation("sglang", "0.4.3.post2") == "sglang-old"
    assert engine_generation("sglang", "lmsysorg/sglang:v0.5.12-cu130") == "sglang"
    assert engine_generation("TensorRT-LLM", "v0.5.0") == "trtllm-old"
    assert gpu_family("AMD", "CDNA 3") == "AMD CDNA3" and gpu_family("NVIDIA", "Blackwell Ultra") == "NVIDIA Blackwell"


FIT = """fitted = 2026-12-01
corpus = "test"
method = "test"
script = "benchmarks/fit_performance.py"
[shipped.reference]
compute = 0.6
memory = {memory}
step_overhead_s = {step}
layer_overhead_s = 0.0
sequence_overhead_s = 0.0
allreduce_latency_s = 1e-5
pcie_allreduce_latency_s = 1e-4
pcie_link_efficiency = 0.5
attention_halving_context_tokens = 1e5
moe_small_batch_penalty = 0.0
moe_layer_overhead_s = 0.0
moe_expert_efficiency = 1.0
mla_attention = 1.0
request_overhead_s = 0.0
prefill_layer_overhead_s = 0.0
prefill_moe_layer_overhead_s = 0.0
fp8_compute_share = 1.0
fp4_compute_share = 1.0
"""


def test_a_fit_above_the_datasheet_or_with_negative_costs_is_refused_with_the_reason():
    assert parse_fit_file(FIT.format(memory=0.8, step=1e-3)).shipped.reference.memory == 0.8
    with pytest.raises(InvalidInputError, match="shipped.reference.memory.*faster than the datasheet"):
        parse_fit_file(FIT.format(memory=1.2, step=1e-3))
    with pytest.raises(InvalidInputError, match="step_overhead_s.*negative"):
        parse_fit_file(FIT.format(memory=0.8, step=-1e-3))
    with pytest.raises(InvalidInputError, match="non-negative"):
        Efficiencies(layer_overhead_s=-1e-6)
    family = '[shipped.family."AMD CDNA3"]\ncompute = 0.5\nmemory = 0.5\noverhead_factor = {factor}\n'
    with pytest.raises(InvalidInputError, match='family.AMD CDNA3.overhead_factor.*not positive'):
        parse_fit_file(FIT.format(memory=0.8, step=1e-3) + family.format(factor=0.0))


def test_a_family_refit_that_saw_its_family_is_refused():
    # the profile fitted without AMD CDNA3 cannot carry an AMD CDNA3 entry: it would not price CDNA3 as unseen
    shipped = FIT.format(memory=0.8, step=1e-3)
    refit = "\n".join(line.replace("[shipped.", "[held_out_family.profile.") for line in shipped.splitlines()
                      if line.startswith(("[shipped.", "compute", "memory", "step_", "layer_", "sequence_",
                                          "allreduce", "pcie_", "attention_", "moe_", "mla_", "request_", "prefill_",
                                          "fp")))
    block = '\n[[held_out_family]]\nfamily = "AMD CDNA3"\n' + refit + "\n"
    assert parse_fit_file(shipped + block).without_family("AMD CDNA3") is not None
    seen = '[held_out_family.profile.family."AMD CDNA3"]\ncompute = 0.5\nmemory = 0.5\n'
    with pytest.raises(InvalidInputError, match="held_out_family.0.*has an entry for AMD CDNA3"):
        parse_fit_file(shipped + block + seen)
