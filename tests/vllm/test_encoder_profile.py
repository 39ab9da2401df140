"""The vision encoder's share of vLLM's profile run, by release, worked out by hand (docs/vllm-memory.md §2.3)."""
from __future__ import annotations

import pytest

from calculators.specs.catalog import get_gpu
from calculators.specs.hf_config import load_config_file
from calculators.units import GiB
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.encoder_profile import deepstack_buffer_bytes, dummy_images, encoder_pass
from calculators.vllm.overheads import COEFFICIENTS, activation_peak
from calculators.vllm.versions import parse_vllm_version
from tests.conftest import HF_CONFIGS

GEMMA3 = load_config_file(HF_CONFIGS / "google__gemma-3-27b-it.json")


@pytest.mark.parametrize("release, engine, tokens, images, requests", [
    # V0: one image a request, 4096 // 256 = 16 requests instead of max_num_seqs 256
    ("0.8.3", "V0", 256, 16, 16),
    # V1 up to 0.10.1: ⌈8192 / 256⌉ = 32 images; the text pass keeps max_num_seqs
    ("0.9.2", "V1", 256, 32, 256),
    # from 0.10.2 the budget counts the image's separators too: ⌊8192 / 260⌋ = 31
    ("0.10.2", "V1", 260, 31, 256),
    # an image longer than the batch: the budget grows to one image
    ("0.12.0", "V1", 16_384, 1, 256),
])
def test_dummy_images_by_release(release, engine, tokens, images, requests):
    v = parse_vllm_version(release, engine)
    max_num_batched_tokens = 4096 if engine == "V0" else 8192
    got = dummy_images(tokens, v, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=256,
                       max_model_len=32_768)
    assert got == (images, requests)


def test_gemma3_v0_pass_by_hand():
    # 16 images × 4096 patches = 65,536 positions × (3 · 1152 + 3 · 4304) · 2 B = 2,145,386,496 B of activations;
    # float32 pixels 65,536 × 588 × 4 = 154,140,672 B; outputs 16 × 256 × 5376 × 2 = 44,040,192 B
    e = encoder_pass(GEMMA3, parse_vllm_version("0.8.3", "V0"), max_num_batched_tokens=4096, max_num_seqs=256,
                     max_model_len=4096, tensor_parallel_size=1, act_bytes=2)
    assert (e.items, e.requests) == (16, 16)
    assert e.pass_bytes == 2_145_386_496 + 154_140_672
    assert e.kept_bytes == 44_040_192 + 154_140_672


def test_0_11_0_pads_every_output_to_the_budget():
    # 31 images; 0.11.0 keeps 31 × 8192 rows × 5376 × 2 B = 2,730,491,904 B; 0.12.0 keeps 31 × 256 rows
    kw = dict(max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=32_768, tensor_parallel_size=1,
              act_bytes=2)
    pixels = 31 * 4096 * 588 * 4
    assert encoder_pass(GEMMA3, parse_vllm_version("0.11.0"), **kw).kept_bytes == 2_730_491_904 + pixels
    assert encoder_pass(GEMMA3, parse_vllm_version("0.12.0"), **kw).kept_bytes == 31 * 256 * 5376 * 2 + pixels


def test_the_peak_is_the_encoder_or_the_text_pass_beside_the_kept_outputs():
    v = parse_vllm_version("0.8.3", "V0")
    e = encoder_pass(GEMMA3, v, max_num_batched_tokens=4096, max_num_seqs=256, max_model_len=4096,
                     tensor_parallel_size=1, act_bytes=2)
    kw = dict(max_num_batched_tokens=4096, max_num_seqs=256, tensor_parallel_size=1, act_bytes=2, sampler="v0_sort")
    with_encoder, text_only = activation_peak(GEMMA3, encoder=e, **kw), activation_peak(GEMMA3, **kw)
    base = COEFFICIENTS.activation_base_bytes.value
    assert with_encoder.value == pytest.approx(base + e.pass_bytes)  # 2.1 GiB of SigLIP beats 0.62 GiB of text
    # without the tower the sampler over 256 requests would bind: 256 × 262,208 entries × the sort's bytes (2.5 GiB)
    assert text_only.value == pytest.approx(256 * 262_208 * COEFFICIENTS.sampler_bytes["v0_sort"].value)
    assert "vision encoder first" in with_encoder.basis


def test_capacity_counts_the_tower_and_names_an_unmodelled_one():
    r = vllm_capacity(GEMMA3, gpu=get_gpu("A10"), vllm_version="0.8.3", engine="V0", max_model_len=4096)
    assert "vision encoder first" in r.binding.activation.basis
    assert r.binding.activation.value / GiB == pytest.approx(COEFFICIENTS.activation_base_bytes.value / GiB + 2.14,
                                                             abs=0.01)
    assert any("4,096 patches" in n for n in r.notes)
    # a tower whose family has no rule: counted in the weights, named as not profiled
    blind = GEMMA3.model_copy(update={"vision_encoder": None})
    notes = vllm_capacity(blind, gpu=get_gpu("A10"), vllm_version="0.8.3", engine="V0", max_model_len=4096).notes
    assert any("not modelled for this model family" in n for n in notes)


def test_qwen3_vl_profiles_its_largest_video_and_0_11_0_pads_it_to_the_budget():
    """Qwen3-VL-30B-A3B, 2,048 batched tokens, max_model_len 65,536, TP 4: the video (153,600 budgeted tokens)
    beats the 4096² image (16,384), so the budget is max(2,048, 153,600) and holds 1 video. By hand:
    pass 49,152 patches × (3 · 1152 + 3 · 4304 / 4) · 2 B = 657,063,936 B; float32 pixels 49,152 × 1536 × 4 =
    301,989,888 B; 0.11.0 keeps 153,600 rows × 8192 × 2 B = 2,516,582,400 B, 0.12.0 the 12,288 embeddings."""
    model = load_config_file(HF_CONFIGS / "Qwen__Qwen3-VL-30B-A3B-Instruct.json")
    kw = dict(max_num_batched_tokens=2048, max_num_seqs=256, max_model_len=65_536, tensor_parallel_size=4,
              act_bytes=2)
    pixels = 301_989_888
    old = encoder_pass(model, parse_vllm_version("0.11.0"), **kw)
    assert (old.items, old.pass_bytes, old.kept_bytes) == (1, 657_063_936 + pixels, 2_516_582_400 + pixels)
    assert "video (24,576 frames)" in old.basis
    assert encoder_pass(model, parse_vllm_version("0.12.0"), **kw).kept_bytes == 12_288 * 8192 * 2 + pixels
    # V0 has no video profile: the image stays
    assert "image" in encoder_pass(model, parse_vllm_version("0.8.3", "V0"), **kw).basis


def test_qwen3_vl_deepstack_buffers_count_as_weights():
    """Qwen3-VL keeps one (max_num_batched_tokens × text hidden) buffer per deepstack level from model
    construction: 3 × 8,192 × 2,048 × 2 B = 100,663,296 B. Both Qwen3-VL-30B-A3B logs print their weights
    ("Model loading took"): 29.31 GiB at TP 2 with 8,192 tokens on 0.12.0, 14.7708 GiB at TP 4 with 2,048 on
    0.11.0; the tower split by TP, the 256 MiB multimodal rope cache and these buffers reproduce both."""
    model = load_config_file(HF_CONFIGS / "Qwen__Qwen3-VL-30B-A3B-Instruct.json")
    assert deepstack_buffer_bytes(model, max_num_batched_tokens=8192, act_bytes=2) == 100_663_296
    assert deepstack_buffer_bytes(GEMMA3, max_num_batched_tokens=8192, act_bytes=2) == 0.0  # no deepstack
    weights = {}
    for tp, tokens, release, printed_gib in ((2, 8192, "0.12.0", 29.31), (4, 2048, "0.11.0", 14.7708)):
        r = vllm_capacity(model, gpu=get_gpu("H100-SXM"), vllm_version=release, tensor_parallel_size=tp,
                          max_num_batched_tokens=tokens, max_model_len=65_536)
        weights[tp] = r.binding.weights_bytes
        assert weights[tp] / GiB == pytest.approx(printed_gib, rel=0.002)
    text_only = vllm_capacity(model, gpu=get_gpu("H100-SXM"), vllm_version="0.12.0", tensor_parallel_size=2,
                              max_num_batched_tokens=8192, max_model_len=65_536, language_model_only=True)
    assert text_only.binding.weights_bytes < weights[2] - 0.5 * GiB  # neither the tower nor its buffers
