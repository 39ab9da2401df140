"""The start-up estimates against terms real vLLM logs printed (corpus case ids in comments)."""
from __future__ import annotations

import pytest

from calculators.specs.catalog import get_gpu, get_model
from calculators.specs.hf_config import load_config_file
from calculators.units import GiB
from calculators.vllm.overheads import (
    COEFFICIENTS,
    NON_TORCH_CLASS_WORDS,
    activation_peak,
    cudagraph,
    non_torch,
    non_torch_class,
    pinned_segments,
    sampler_profile,
)
from calculators.vllm.versions import DEFAULT_VLLM_VERSION, parse_vllm_version
from tests.conftest import HF_CONFIGS

NOW = parse_vllm_version(DEFAULT_VLLM_VERSION)  # the current release

QWEN3_MOE = "Qwen__Qwen3-Coder-30B-A3B-Instruct.json"


def _profile(version: str, quantized: bool = False, engine: str = "auto", flashinfer: str = "auto") -> str:
    return sampler_profile(parse_vllm_version(version, engine), get_model("Qwen/Qwen2.5-7B-Instruct-AWQ"), quantized,
                           flashinfer)


def test_sampler_profile_by_release():
    assert _profile("0.6.6") == "v0_sort"
    assert _profile("0.7.3", engine="V1") == "logits"  # V1 before the sampler joined the profile run
    # 0.8.0-0.11.0 take FlashInfer's kernel when flashinfer is installed (vLLM pull requests 14815, 15777)
    assert _profile("0.8.0") == _profile("0.10.2") == _profile("0.11.0") == "v1_flashinfer_if_installed"
    assert _profile("0.11.1") == "v1_sort" and _profile("0.16.0") == "v1_sort"  # opt-in from 0.11.1 (PR 26859)
    assert _profile("0.17.1") == _profile("0.21.0") == "v1_in_place"  # the V1 runner's top-k/top-p in place
    assert _profile("0.26.0", quantized=True) == "logits"  # V2 model runner


def test_sampler_line_of_the_log_overrides_the_default():
    assert _profile("0.10.1", flashinfer="on") == "flashinfer"  # "Using FlashInfer for top-p & top-k sampling."
    assert _profile("0.10.2", flashinfer="off") == "v1_sort"  # "FlashInfer is not available. Falling back …"
    assert _profile("0.14.0", flashinfer="on") == "flashinfer"  # VLLM_USE_FLASHINFER_SAMPLER=1
    assert _profile("0.17.1", flashinfer="off") == _profile("0.21.0", flashinfer="on") == "v1_in_place"  # no sort



def test_non_torch_class_by_interconnect():
    assert non_torch_class(1, get_gpu("H100-SXM"), NOW) == "one_gpu"
    assert non_torch_class(2, get_gpu("H100-SXM"), NOW) == "nvswitch"
    assert non_torch_class(2, get_gpu("RTX-PRO-6000"), NOW) == "multi_gpu"  # "no NVLink" in its link text
    assert non_torch_class(8, get_gpu("L40S"), NOW) == "multi_gpu"
    assert non_torch_class(4, None, NOW) == "multi_gpu"
    assert non_torch_class(1, get_gpu("MI300X"), NOW) == non_torch_class(8, get_gpu("MI355X"), NOW) == "rocm"
    e = non_torch(8, get_gpu("L40S"), NOW)
    assert e.low <= 0.21 * GiB <= e.high  # V1-07 printed 0.21 GiB at TP 8 on L40S (0.10.2)
    assert "several GPUs" in e.basis and "_" not in e.basis
    assert set(NON_TORCH_CLASS_WORDS) == set(COEFFICIENTS.non_torch_bytes)  # every class explained, none left over


def test_nvlink_before_0_9_connects_nccl_eagerly():
    # torch ≤ 2.6 ships NCCL ≤ 2.21, whose communicators connect their NVLink-wide ring and tree buffers when created
    a100, v071, v0101 = get_gpu("A100-40GB-SXM"), parse_vllm_version("0.7.1"), parse_vllm_version("0.10.1")
    assert non_torch_class(8, a100, v071) == "nvlink_before_0_9"
    assert non_torch_class(2, a100, v0101) == "multi_gpu"  # NCCL 2.26 connects at the first collective
    assert non_torch_class(8, get_gpu("A100-40GB-PCIe"), v071) == "multi_gpu"  # PCIe: few channels
    e = non_torch(8, a100, v071)
    assert e.low <= 2.10 * GiB <= e.high  # DeepSeek-Coder-V2-Lite at TP 8 on A100-40GB SXM, 0.7.1, printed 2.10 GiB


def test_nvswitch_before_0_9_connects_nvlink_sharp_eagerly():
    # The same eager connection on Hopper NVLink-switch boards also sets up NVLink-SHARP buffers per communicator
    h200, v073, v0100 = get_gpu("H200-SXM"), parse_vllm_version("0.7.3"), parse_vllm_version("0.10.0")
    assert non_torch_class(8, h200, v073) == "nvswitch_before_0_9"
    assert non_torch_class(8, h200, v0100) == "nvswitch"
    early, late = non_torch(8, h200, v073), non_torch(8, h200, v0100)
    assert early.low <= 7.16 * GiB <= early.high  # DeepSeek-R1 at TP 8 on H200s, 0.7.3, printed 7.16 GiB
    assert late.value < early.value and late.high < 7.16 * GiB


@pytest.mark.parametrize(("model", "tokens", "seqs", "tp", "version", "flashinfer", "printed_gib"), [
    # V1-14: Qwen3-30B-A3B bf16, H100, 0.10.2 ("FlashInfer is not available") printed "5.58 GiB for peak activation"
    (QWEN3_MOE, 8192, 1024, 1, "0.10.2", "off", 5.58),
    # V1-07: Qwen3-235B-A22B FP8 TP 8 on L40S, 0.10.2 (no FlashInfer) printed 1.40 GiB
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", 2048, 256, 8, "0.10.2", "off", 1.40),
    # V0-09: Phi-4-mini on 0.7.3 V0 printed 1.83 GiB (sampler over 256 × 200,064 vocabulary entries)
    ("microsoft__Phi-4-mini-instruct.json", 2048, 256, 1, "0.7.3", "auto", 1.83),
    # V0-03: Qwen2.5-1.5B on 0.7.2 V0, 32,768 profiled tokens, printed 2.02 GiB
    ("Qwen__Qwen2.5-1.5B-Instruct.json", 32768, 256, 1, "0.7.2", "auto", 2.02),
])
def test_activation_peak_near_printed(model, tokens, seqs, tp, version, flashinfer, printed_gib):
    m = load_config_file(HF_CONFIGS / model) if model.endswith(".json") else get_model(model)
    e = activation_peak(m, max_num_batched_tokens=tokens, max_num_seqs=seqs, tensor_parallel_size=tp, act_bytes=2,
                        sampler=sampler_profile(parse_vllm_version(version), m, False, flashinfer))
    assert e.low <= printed_gib * GiB <= e.high
    assert e.value / GiB == pytest.approx(printed_gib, rel=0.25)


def test_sampler_pass_by_hand():
    # 1024 requests × 151,936 vocabulary entries × the sort's bytes per entry (38 B: 5.9 GB); the sort runs after
    # the forward's buffers are freed, so the forward's base is not under it
    m = load_config_file(HF_CONFIGS / QWEN3_MOE)
    e = activation_peak(m, max_num_batched_tokens=8192, max_num_seqs=1024, tensor_parallel_size=1, act_bytes=2,
                        sampler="v1_sort")
    assert e.value == pytest.approx(1024 * 151_936 * COEFFICIENTS.sampler_bytes["v1_sort"].value)


def test_in_place_sampler_pass_by_hand():
    # vLLM 0.21.0's V1 runner samples 256 dummy rows of Gemma 4's 262,144-entry vocabulary: bf16 logits (2 B),
    # their fp32 copy (4 B), fp32 probabilities (4 B) and fp32 exponential draws (4 B) live together:
    # 256 × 262,144 × 14 B = 0.875 GiB, above the forward pass of 2,048 tokens
    m = load_config_file(HF_CONFIGS / "google__gemma-4-E2B-it.json")
    e = activation_peak(m, max_num_batched_tokens=2048, max_num_seqs=256, tensor_parallel_size=1, act_bytes=2,
                        sampler=sampler_profile(parse_vllm_version("0.21.0"), m, False))
    assert e.value == 256 * 262_144 * 14 == 0.875 * GiB


def test_pinned_segments_only_in_0_27_to_0_30_by_hand():
    # Qwen3-32B at 8,192 profiled tokens on one GPU: per token 3 × 5,120 (residual, normalised input, MLP output)
    # + 3 × 25,600 (gate/up and activation outputs) values of 2 B = 184,320 B, so 1,509,949,440 B of forward
    # tensors, pinned once
    m = get_model("Qwen/Qwen3-32B")
    kw = {"max_num_batched_tokens": 8192, "tensor_parallel_size": 1, "act_bytes": 2}
    e = pinned_segments(m, parse_vllm_version("0.27.1"), **kw)
    assert e is not None and (e.low, e.value, e.high) == (0, 1_509_949_440, 2 * 1_509_949_440)
    assert pinned_segments(m, parse_vllm_version("0.30.0"), **kw) is not None
    # bitsandbytes: one more hidden copy (4 × 5,120 + 3 × 25,600 values of 2 B = 194,560 B per token) and the
    # dequantised bf16 down projection (25,600 × 5,120 × 2 B), as in the activation peak
    bnb = pinned_segments(m, parse_vllm_version("0.27.1"), quantization="bitsandbytes", **kw)
    assert bnb is not None and bnb.value == 8192 * 194_560 + 25_600 * 5_120 * 2
    # 0.26 measured torch's allocated peak (pinned blocks are reserved, not allocated); 0.31 profiles with a
    # 20 MiB split limit, so freed blocks stay releasable
    assert pinned_segments(m, parse_vllm_version("0.26.1"), **kw) is None
    assert pinned_segments(m, parse_vllm_version("0.31.0"), **kw) is None


def test_cudagraph_scales_with_capture_sizes():
    m = get_model("Qwen/Qwen2.5-7B-Instruct-AWQ")
    full = cudagraph(m, 28, False, 256).value
    assert cudagraph(m, 28, False, 64).value == pytest.approx(full / 4)  # captures up to 2 × 64 = 128 of 512
    assert cudagraph(m, 28, True, 256).value == 0


def test_one_gpu_non_torch_before_0_7_is_its_own_class():
    """Single-GPU V0 logs of 0.6.4–0.6.5 print 0.26–0.47 GiB of non-torch memory, 0.7.2–0.8.2 print 0.01–0.09 GiB:
    the estimate's range for releases before 0.7 holds the former and not the latter."""
    old, new = parse_vllm_version("0.6.4"), parse_vllm_version("0.7.3")
    assert non_torch_class(1, get_gpu("A100-80GB-SXM"), old) == "one_gpu_before_0_7"
    a100 = get_gpu("A100-80GB-SXM")
    assert non_torch_class(1, a100, new) == non_torch_class(1, a100, NOW) == "one_gpu"
    assert non_torch_class(2, get_gpu("L40S"), old) == "multi_gpu"  # the release only splits the one-GPU class
    early = non_torch(1, get_gpu("A100-80GB-SXM"), old)
    assert early.low <= 0.26 * GiB and early.high >= 0.47 * GiB and early.low > 0.09 * GiB


def test_moe_forward_counts_the_fused_moe_buffers():
    """DeepSeek-R1 at TP 8, no sampler pass (a middle pipeline stage), 32,000 profiled tokens, bf16.

    Per token: residual, normalised input and the MoE block's output 3 × 7,168 = 21,504; the shared expert's
    output, computed first and held while the routed experts run, 7,168; the fused-MoE kernel's gate/up and
    activation buffers for 8 routed experts of 2,048 and the shared one, split by TP:
    3 × (8 × 2,048 + 2,048) / 8 = 6,912; its routed outputs at full hidden width, 8 × 7,168 = 57,344.
    (21,504 + 7,168 + 6,912 + 57,344) × 2 B = 185,856 B; × 32,000 tokens = 5,947,392,000 B, + the base.
    """
    e = activation_peak(get_model("deepseek-ai/DeepSeek-R1"), max_num_batched_tokens=32_000, max_num_seqs=1024,
                        tensor_parallel_size=8, act_bytes=2, sampler=None)
    assert e.value == COEFFICIENTS.activation_base_bytes.value + 5_947_392_000
    no_shared = activation_peak(get_model("Qwen/Qwen3-30B-A3B"), max_num_batched_tokens=1000, max_num_seqs=256,
                                tensor_parallel_size=1, act_bytes=2, sampler=None)
    # Qwen3-30B-A3B has no shared expert: 3 × 2,048 + 3 × 8 × 768 + 8 × 2,048 = 40,960 values per token
    assert no_shared.value == COEFFICIENTS.activation_base_bytes.value + 1000 * 40_960 * 2
    dense = activation_peak(get_model("meta-llama/Llama-3.1-8B-Instruct"), max_num_batched_tokens=1000,
                            max_num_seqs=256, tensor_parallel_size=1, act_bytes=2, sampler=None)
    assert dense.value == COEFFICIENTS.activation_base_bytes.value + 1000 * (3 * 4096 + 3 * 14336) * 2  # no MoE term


def test_bitsandbytes_forward_by_hand():
    # Llama-3.1-405B in bitsandbytes 4-bit at TP 8, 30,000 profiled tokens (a V0 0.7.2 log printed a 5.16 GiB
    # activation peak). Per token: residual, normalised input and down-projection output (3 × 16,384), the
    # bitsandbytes matmul's own copy of that output (16,384) and the gate/up and activation outputs
    # (3 × 53,248 / 8), 2 B each; plus the down projection's dequantised bf16 shard, 6,656 × 16,384 × 2 B
    m = get_model("meta-llama/Llama-3.1-405B")
    e = activation_peak(m, max_num_batched_tokens=30_000, max_num_seqs=256, tensor_parallel_size=8, act_bytes=2,
                        sampler=None, quantization="bitsandbytes")
    forward = 30_000 * (4 * 16_384 + 3 * 53_248 // 8) * 2 + 6_656 * 16_384 * 2
    assert e.value == pytest.approx(COEFFICIENTS.activation_base_bytes.value + forward)
    assert e.value / GiB == pytest.approx(5.16, rel=0.05)
    plain = activation_peak(m, max_num_batched_tokens=30_000, max_num_seqs=256, tensor_parallel_size=8, act_bytes=2,
                            sampler=None)
    assert e.value - plain.value == pytest.approx(30_000 * 16_384 * 2 + 6_656 * 16_384 * 2)
