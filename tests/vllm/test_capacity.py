"""vLLM start-up accounting against real start-up logs (tests/fixtures/vllm_logs/cases.json)."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InvalidInputError
from calculators.specs.catalog import get_gpu, get_model
from calculators.units import GiB
from calculators.vllm.advice import lognormal_lengths, max_num_seqs_advice, vllm_serve_command
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.overheads import COEFFICIENTS, activation_peak, sampler_profile
from calculators.vllm.versions import parse_vllm_version, subtracts_cudagraphs

ROUND_GIB = 0.005  # vLLM prints the KV memory with 2 decimals


def from_printed(model_id: str, printed_gib: float, **flags):
    """Results at the printed KV memory and at the edges of its rounding interval."""
    return [vllm_capacity(get_model(model_id), gpu_memory_bytes=80 * GiB,
                          kv_cache_memory_bytes=int((printed_gib + d) * GiB), **flags)
            for d in (-ROUND_GIB, 0.0, ROUND_GIB)]


def assert_within_rounding(results, tokens=None, concurrency=None, blocks=None):
    lo, mid, hi = results
    if tokens is not None:
        assert lo.kv_cache_tokens <= tokens <= hi.kv_cache_tokens
    if blocks is not None:
        assert lo.binding.num_blocks <= blocks <= hi.binding.num_blocks
    if concurrency is not None:
        assert math.floor(lo.max_concurrency * 100) / 100 - 0.01 <= concurrency <= hi.max_concurrency + 0.005
    assert mid.fits


def test_v0_blocks_from_a_real_log():
    # Llama-3.2-1B fp16 on a GTX 1080, vLLM 0.6.4.post1 (github.com/xlisp/jimw-vllm README): kv_cache_size=3.60GiB
    # → "# GPU blocks: 7366", "1.12x" for 105,088 tokens. 16 layers × 8 KV heads × 64 × 2 × 2 B = 32,768 B/token,
    # 512 KiB per block: 3.60 GiB / 512 KiB = 7,372.8 → 7,372 blocks; the printed 7,366 lies in the ±0.005 GiB
    # rounding (7,362–7,383).
    res = from_printed("meta-llama/Llama-3.2-1B-Instruct", 3.60, max_model_len=105_088, dtype="float16",
                       vllm_version="0.6.4")
    assert_within_rounding(res, blocks=7366, concurrency=1.12)
    assert res[1].vllm_lines[-2].startswith("# GPU blocks: 7372, # CPU blocks: 8192")


def test_v1_tokens_from_a_real_log():
    # Llama-3.1-8B-Instruct on an A100 80GB, vLLM 0.17.1 (github.com/LzyFischer/MemSuit @ 9fea2d5, vllm_server.log):
    # 55.79 GiB / 131,072 B per token = 457,031.7 tokens → 28,564 blocks of 16 = 457,024; 457,024 / 32,768 = 13.95x.
    res = from_printed("meta-llama/Llama-3.1-8B-Instruct", 55.79, max_model_len=32_768, vllm_version="0.17.1")
    assert_within_rounding(res, tokens=457_024, concurrency=13.95)
    assert res[1].kv_cache_tokens == 457_024


@pytest.mark.parametrize("case, model_id, version", [
    ("C03", "Qwen/Qwen3-14B", "0.10.2"),
    ("C17", "Qwen/Qwen2.5-7B-Instruct-AWQ", "0.26.0"),
    ("C20", "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ", "0.11.0"),
])
def test_v1_tokens_and_concurrency_from_printed_memory(vllm_cases, case, model_id, version):
    c = vllm_cases[case]
    rep = c["reported"]
    gib = rep.get("kv_cache_memory_gib") or float(rep["kv_cache_memory_per_gpu"].split()[0])
    mml = int(str(c["max_model_len"]).split()[0])
    conc = float(rep["max_concurrency"].split("x")[0])
    res = from_printed(model_id, gib, max_model_len=mml, vllm_version=version)
    assert_within_rounding(res, tokens=rep["gpu_kv_cache_size_tokens"], concurrency=conc)


def test_c20_blocks_exact(vllm_cases):
    r = from_printed("TheBloke/Mistral-7B-Instruct-v0.2-GPTQ", 102.56, max_model_len=32768, vllm_version="0.11.0")[1]
    assert r.binding.num_blocks == 52_510 and r.kv_cache_tokens == 840_160  # log: 52,510 blocks, 840,160 tokens
    assert "GPU KV cache size: 840,160 tokens" in r.vllm_lines
    assert "Maximum concurrency for 32,768 tokens per request: 25.64x" in r.vllm_lines


def test_c16_every_worker(vllm_cases):
    rep = vllm_cases["C16"]["reported"]  # TP8 + EP on 8×L40S; each worker prints its own numbers
    pairs = {10.68: 238_256, 10.64: 237_344, 10.65: 237_520}
    for gib, tokens in pairs.items():
        assert tokens in rep["gpu_kv_cache_size_tokens_per_worker"]
        res = from_printed("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", gib, tensor_parallel_size=8,
                           expert_parallel_size=8, max_model_len=32768, vllm_version="0.10.2")
        assert_within_rounding(res, tokens=tokens)


def test_c09_mla_pipeline_binding_stage(vllm_cases):
    # DeepSeek-V2-Lite, TP2 × PP2 on L4, 0.9.2: stage 0 has 14 layers and 12.13 GiB, stage 1 13 layers and
    # 11.33 GiB; stage 0 binds: floor(12.13 GiB / (16 × 14 × 1,152 B)) × 16 ≈ 807,792 tokens, 788.86x at 1,024.
    m = get_model("deepseek-ai/DeepSeek-V2-Lite")
    results = []
    for d in (-ROUND_GIB, ROUND_GIB):
        r = vllm_capacity(m, gpu=get_gpu("L4"), tensor_parallel_size=2, pipeline_parallel_size=2,
                          max_model_len=1024, vllm_version="0.9.2", kv_cache_memory_bytes=int((12.13 + d) * GiB))
        results.append(r)
        assert r.settings.block_size == 16  # Triton MLA on Ada keeps 16
        assert [s.num_layers for s in r.stages] == [14, 13] and r.binding_stage == 0
    assert results[0].kv_cache_tokens <= 807_792 <= results[1].kv_cache_tokens
    assert results[0].max_concurrency <= 788.86 <= results[1].max_concurrency + 0.005


def test_c13_llama_70b_tp4_and_error_path():
    # VLLM_MEMORY.md §7, C13: Llama-3.1-70B TP4 on H100, 32.06 GiB → 420,208 tokens (81,920 B/token per GPU).
    m = get_model("meta-llama/Llama-3.1-70B-Instruct")
    r = vllm_capacity(m, gpu_memory_bytes=80 * GiB, tensor_parallel_size=4, max_model_len=131072,
                      kv_cache_memory_bytes=int(32.06 * GiB), vllm_version="0.10.2")
    assert r.kv_cache_tokens == 420_208 and f"{r.max_concurrency:.2f}" == "3.21"
    # 2 GiB: one 131,072-token request needs 8,192 blocks × 1.25 MiB = 10 GiB; 1,638 blocks hold 26,208 tokens.
    r = vllm_capacity(m, gpu_memory_bytes=80 * GiB, tensor_parallel_size=4, max_model_len=131072,
                      kv_cache_memory_bytes=2 * GiB, vllm_version="0.10.2")
    assert not r.fits and r.estimated_max_model_len == 26_208
    assert "(10.00 GiB KV cache is needed" in r.vllm_lines[-1] and "is 26208." in r.vllm_lines[-1]


def test_c32_gpt_oss_120b_on_one_h100_may_not_start(vllm_cases):
    # Logged: weights 65.9651 GiB, available −2.14 GiB (0.10.1). Our range must include ≤ 0.
    r = vllm_capacity(get_model("openai/gpt-oss-120b"), gpu=get_gpu("H100"), vllm_version="0.10.1")
    assert r.binding.available.low <= -2.14 * GiB <= r.binding.available.high
    assert r.binding.weights_bytes / GiB == pytest.approx(65.9651, rel=0.005)


def test_activation_ranges_cover_observations():
    # Observed peaks (docs/vllm-memory.md §2.3; cases C16, C17, C32 and a Llama-3.2-1B log) lie inside the range
    # of the sampler pass each release and install profiles (C16's log: "FlashInfer is not available").
    for model_id, tokens, seqs, tp, version, sampler, observed_gib in [
        ("meta-llama/Llama-3.2-1B-Instruct", 512, 256, 1, "0.6.4", "auto", 3.49 - 2.3185),  # xlisp/jimw-vllm
        ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", 2048, 256, 8, "0.10.2", "off", 1.40),
        ("Qwen/Qwen2.5-7B-Instruct-AWQ", 2048, 256, 1, "0.26.0", "auto", 1.04),
        ("openai/gpt-oss-120b", 8192, 1024, 1, "0.10.1", "auto", 71.28 - 65.97 + 2.14 - 0.1),
    ]:
        m = get_model(model_id)
        profile = sampler_profile(parse_vllm_version(version), m, m.quantization is not None, sampler)
        e = activation_peak(m, max_num_batched_tokens=tokens, max_num_seqs=seqs, tensor_parallel_size=tp,
                            act_bytes=2, sampler=profile)
        assert e.low <= observed_gib * GiB <= e.high, model_id


def test_cudagraph_rules_by_version():
    qwen2 = get_model("Qwen/Qwen2.5-7B-Instruct-AWQ")
    moe = get_model("Qwen/Qwen3-30B-A3B")
    sub = lambda v, m, q=False: subtracts_cudagraphs(parse_vllm_version(v), m, q, False)  # noqa: E731
    assert not sub("0.10.2", moe)  # C16: 39.98 − 27.72 − 1.40 − 0.21 = 10.65, graphs not deducted
    assert not sub("0.26.0", qwen2, True)  # C17: V2 runner, 14.39 − 5.29 − 1.04 − 0.06 = 8.00
    assert sub("0.26.0", moe)  # MoE stays on the V1 runner, which deducts from 0.20
    assert sub("0.29.0", qwen2, True) and sub("0.21.0", qwen2, True)
    assert not subtracts_cudagraphs(parse_vllm_version("0.33.0"), moe, False, True)  # enforce_eager


def test_available_equation_c16():
    # C16 breakdown: requested 39.98 GiB (0.9 × 44.42) − weights − 1.40 − 0.21 = 10.65 GiB; here with our
    # weight estimate the same equation must give within 0.1 GiB plus the activation estimate's error.
    r = vllm_capacity(get_model("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8"), gpu=get_gpu("L40S"),
                      tensor_parallel_size=8, expert_parallel_size=8, max_model_len=32768, vllm_version="0.10.2")
    st_ = r.binding
    assert r.budget_bytes / GiB == pytest.approx(39.98, abs=0.01)
    assert not st_.cudagraph_subtracted
    assert st_.available.low <= 10.65 * GiB <= st_.available.high


def test_hybrid_gpt_oss_groups_and_printed_tokens():
    # gpt-oss-120b: 18 sliding + 18 full layers → 2 groups of 18; page = 16 × 2,048 B; block = 589,824 B.
    # One 131,072-token request: 8,192 full blocks + ceil((128 − 1 + 8,192) / 16) + 1 = 521 sliding blocks.
    m = get_model("openai/gpt-oss-120b")
    kv = 10 * GiB
    blocks = kv // 589_824
    for version, tokens in (("0.11.0", (blocks // 2) * 16), ("0.21.0", int(blocks / 8713 * 131072))):
        r = vllm_capacity(m, gpu_memory_bytes=140 * GiB, kv_cache_memory_bytes=kv, max_model_len=131072,
                          max_num_batched_tokens=8192, vllm_version=version)
        assert [g.num_layers for g in r.binding.groups] == [18, 18]
        assert r.binding.bytes_per_block == 589_824 and r.blocks_per_request == 8713
        assert r.kv_cache_tokens == tokens
        assert r.max_concurrency == pytest.approx(blocks / 8713)
    # Before 0.9.1 sliding layers were sized as full attention: one group of 36.
    r = vllm_capacity(m, gpu_memory_bytes=140 * GiB, kv_cache_memory_bytes=kv, max_model_len=131072,
                      vllm_version="0.8.5")
    assert [g.num_layers for g in r.binding.groups] == [36]


def test_printed_line_formats():
    m = get_model("Qwen/Qwen3-8B")
    lines = {v: vllm_capacity(m, gpu=get_gpu("H100"), vllm_version=v).vllm_lines
             for v in ("0.6.4", "0.6.6", "0.8.5", "0.10.2", "0.28.0")}
    assert lines["0.6.4"][1].startswith("Memory profiling results: total_gpu_memory=79.19GiB")
    assert lines["0.6.6"][1].startswith("the current vLLM instance can use total_gpu_memory (79.19GiB)")
    assert not any("Available KV" in x for x in lines["0.8.5"])
    assert lines["0.10.2"][1].startswith("Available KV cache memory:") and len(lines["0.10.2"]) == 4
    assert ", Maximum concurrency for 40,960 tokens per request:" in lines["0.28.0"][-1]


def test_weights_beyond_budget_is_a_result_not_an_error():
    r = vllm_capacity(get_model("meta-llama/Llama-3.1-405B"), gpu=get_gpu("H100"), tensor_parallel_size=4)
    assert not r.fits and r.message.startswith("does not fit: weights need")
    assert r.kv_cache_tokens == 0 and r.max_concurrency == 0
    assert "No available memory for the cache blocks" in r.vllm_lines[-1]


@pytest.mark.parametrize("flags, field", [
    ({"gpu_memory_utilization": 0}, "gpu_memory_utilization"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ({"max_model_len": -1}, "max_model_len"),
    ({"max_model_len": 10**7}, "max_model_len"),
    ({"tensor_parallel_size": 5}, "tensor_parallel_size"),
    ({"vllm_version": "banana"}, "vllm_version"),
    ({"block_size": 0}, "block_size"),
    ({"kv_cache_memory_bytes": [1]}, "kv_cache_memory"),  # found by tests/test_fuzz.py
    ({"gpu_memory_utilization": [0.9]}, "gpu_memory_utilization"),
    ({"max_model_len": [1024, 2048]}, "max_model_len"),
])
def test_bad_flags_name_the_field(flags, field):
    with pytest.raises(InvalidInputError) as e:
        vllm_capacity(get_model("meta-llama/Llama-3.1-70B"), gpu=get_gpu("H100"), **flags)
    assert e.value.field == field


@settings(max_examples=40, deadline=None)
@given(u1=st.floats(0.3, 0.95), du=st.floats(0, 0.05), tp=st.sampled_from([1, 2, 4, 8]))
def test_more_memory_never_fewer_blocks(u1, du, tp):
    m, g = get_model("meta-llama/Llama-3.1-70B"), get_gpu("H200")
    a = vllm_capacity(m, gpu=g, tensor_parallel_size=tp, gpu_memory_utilization=u1)
    b = vllm_capacity(m, gpu=g, tensor_parallel_size=tp, gpu_memory_utilization=u1 + du)
    assert b.binding.num_blocks >= a.binding.num_blocks >= 0
    assert a.kv_cache_tokens_low <= a.kv_cache_tokens <= a.kv_cache_tokens_high


def test_max_num_seqs_advice():
    m = get_model("meta-llama/Llama-3.1-70B-Instruct")
    r = vllm_capacity(m, gpu_memory_bytes=80 * GiB, tensor_parallel_size=4, max_model_len=131072,
                      kv_cache_memory_bytes=int(32.06 * GiB), vllm_version="0.10.2")
    a = max_num_seqs_advice(m, r, mean_len=2048)  # 26,263 blocks / 128 blocks per 2,048-token sequence
    assert a["concurrency_at_mean"] == 26_263 // 128 == 205 and a["recommended_max_num_seqs"] == 200
    b = max_num_seqs_advice(m, r, mean_len=2048, p95_len=6000)
    assert b["concurrency_at_p95"] < b["concurrency_at_mean"]
    line = vllm_serve_command("meta-llama/Llama-3.1-70B-Instruct", r, a["recommended_max_num_seqs"])
    assert "--tensor-parallel-size 4" in line and "--max-num-seqs 200" in line


def test_lognormal_matches_mean_and_p95():
    x = lognormal_lengths(1000, 3000)
    assert x.mean() == pytest.approx(1000, rel=0.01)
    assert sorted(x)[949] == pytest.approx(3000, rel=0.02)
    with pytest.raises(InvalidInputError, match="p95_len"):
        lognormal_lengths(1000, 500)
    with pytest.raises(InvalidInputError, match="at most 3868"):  # a log-normal's p95/mean ≤ exp(1.645²/2)
        lognormal_lengths(1000, 4000)


def test_deepseek_before_mla_caches_every_head_padded_to_256():
    # vLLM 0.6.6 ran DeepSeek-V3 without MLA: K and V of 128 / TP 8 = 16 heads, padded to 256 values, bf16,
    # 31 layers on the first of 2 pipeline stages: 2 × 16 × 256 × 2 B × 31 = 507,904 B per token per GPU.
    # The public 0.6.6 log agrees: 4 GiB of swap / 528 CPU blocks = 8,134,407 B ≈ 16 tokens × 507,904 B.
    from calculators.report.capacity import capacity_document
    m = get_model("deepseek-ai/DeepSeek-V3")
    kw = dict(gpu=get_gpu("H100"), tensor_parallel_size=8, pipeline_parallel_size=2, max_model_len=8192,
              quantization="fp8", gpu_memory_utilization=0.95)
    old = vllm_capacity(m, vllm_version="0.6.6", **kw)
    assert old.stages[0].kv_bytes_per_token == 2 * 16 * 256 * 2 * 31 == 507_904
    assert capacity_document(m, old)["kv_cache_bytes_per_token"] == 507_904
    assert abs(4 * 2**30 / 528 - 16 * 507_904) / (16 * 507_904) < 0.001
    # 0.7.1 on: one latent of 512 + 64 values per token and layer, not split by TP; 0.7.3 is a V0 engine,
    # which pads each entry to a multiple of 256 B: 576 × 2 = 1,152 → 1,280 B, × 31 layers
    assert vllm_capacity(m, vllm_version="0.7.3", **kw).stages[0].kv_bytes_per_token == 1280 * 31


def test_only_the_last_pipeline_stage_profiles_the_sampler():
    # vLLM runs the dummy sampler pass on the last pipeline rank only (V1 profile_run; V0 execute_model returns
    # intermediate tensors on the other ranks). Qwen2.5-7B at PP 2, 0.10.2 without FlashInfer: 2,048 profiled
    # tokens × (3 × 3,584 + 3 × 18,944) × 2 B = 276,824,064 B of forward pass (plus the forward's base) on both
    # stages; only stage 1 sorts 256 × 152,064 vocabulary entries (× the sort's bytes per entry, about 1.4 GB),
    # a pass that runs after the forward's buffers are freed and exceeds it.
    r = vllm_capacity(get_model("Qwen/Qwen2.5-7B-Instruct"), gpu=get_gpu("L40S"), pipeline_parallel_size=2,
                      vllm_version="0.10.2", flashinfer_sampler="off", max_model_len=4096)
    first, last = (st.activation for st in r.stages)
    c = COEFFICIENTS
    assert "no sampler pass" in first.basis
    assert first.value == pytest.approx(c.activation_base_bytes.value + c.forward_factor.value * 276_824_064)
    assert last.value == pytest.approx(256 * 152_064 * c.sampler_bytes["v1_sort"].value)


@pytest.mark.parametrize(("version", "sampler", "noted"), [
    ("0.10.2", "auto", True), ("0.10.2", "off", False), ("0.10.2", "on", False), ("0.12.0", "auto", False)])
def test_an_unknown_install_is_named_where_the_release_depends_on_it(version, sampler, noted):
    r = vllm_capacity(get_model("Qwen/Qwen2.5-7B-Instruct"), gpu=get_gpu("L40S"), vllm_version=version,
                      flashinfer_sampler=sampler, max_model_len=4096)
    assert any("--flashinfer-sampler on" in n for n in r.notes) == noted
