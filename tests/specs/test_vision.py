"""The largest dummy image of each vision family, worked out by hand from config.json and the processors'
defaults (the per-family figures vLLM's processing infos give, docs/vllm-memory.md §2.3)."""
from __future__ import annotations

import pytest

from calculators.errors import InvalidInputError
from calculators.specs.hf_config import load_config_file, model_from_config
from calculators.specs.vision import largest_video
from calculators.vllm.versions import parse_vllm_version
from tests.conftest import HF_CONFIGS

TEXT = {"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 32768}


def vision(model_type: str, vision_config: dict, **top) -> object:
    cfg = {"model_type": model_type, "text_config": dict(TEXT), "vision_config": vision_config, **top}
    return model_from_config(cfg, id=model_type).vision_encoder


def test_gemma3_one_896_crop_of_4096_patches_pooled_to_256():
    enc = load_config_file(HF_CONFIGS / "google__gemma-3-27b-it.json").vision_encoder
    # 896 / 14 = 64 patches a side; 256 embeddings between "\n\n<start_of_image>" and "<end_of_image>\n\n"
    assert (enc.patches_per_item, enc.tokens_per_item, enc.separator_tokens) == (4096, 256, 4)
    assert (enc.hidden_size, enc.intermediate_size, enc.output_width) == (1152, 4304, 5376)
    assert enc.pixel_values_per_patch == 3 * 14 * 14


def test_qwen3_vl_largest_image_and_its_deepstack_outputs():
    enc = load_config_file(HF_CONFIGS / "Qwen__Qwen3-VL-30B-A3B-Instruct.json").vision_encoder
    # longest_edge 16,777,216 px = 4096²; 4096 / (16 · 2) = 128 merged cells a side = 256 patches a side
    assert (enc.patches_per_item, enc.tokens_per_item) == (65_536, 16_384)
    # out_hidden_size 2048 for the merger and each of the 3 deepstack levels; 3 channels × 2 frames × 16²
    assert (enc.output_width, enc.pixel_values_per_patch) == (4 * 2048, 1536)
    assert enc.video.rule == "shrinking_frames" and enc.video.frame_side == 4096


def test_qwen2_vl_names_its_width_embed_dim():
    enc = vision("qwen2_vl", {"embed_dim": 1280, "mlp_ratio": 4, "hidden_size": 3584, "patch_size": 14,
                              "spatial_merge_size": 2, "temporal_patch_size": 2, "depth": 32, "num_heads": 16})
    # max_pixels 12,845,056 = 3584²: 3584 / 28 = 128 cells, 256 patches a side
    assert (enc.hidden_size, enc.intermediate_size) == (1280, 5120)
    assert (enc.patches_per_item, enc.tokens_per_item, enc.output_width) == (65_536, 16_384, 4096)


def test_mistral3_row_breaks_and_llama4_tiles():
    m3 = vision("mistral3", {"hidden_size": 1024, "intermediate_size": 4096, "image_size": 1540, "patch_size": 14},
                spatial_merge_size=2)
    # 1540 / 14 = 110 patches a side; merged 55 × 55 = 3,025 embeddings and an [IMG_BREAK]/[IMG_END] per row
    assert (m3.patches_per_item, m3.tokens_per_item, m3.separator_tokens) == (12_100, 3_025, 55)
    l4 = vision("llama4", {"hidden_size": 1408, "intermediate_size": 5632, "image_size": 336, "patch_size": 14,
                           "pixel_shuffle_ratio": 0.5})
    # 16 tiles + 1 global of 24² patches and a class token; 576 · 0.5² = 144 embeddings a tile
    assert (l4.patches_per_item, l4.tokens_per_item, l4.separator_tokens) == (17 * 577, 17 * 144, 19)


def test_llava_one_token_a_patch():
    enc = vision("llava", {"hidden_size": 1024, "intermediate_size": 4096, "image_size": 336, "patch_size": 14})
    assert (enc.patches_per_item, enc.tokens_per_item) == (576, 576)


def test_unknown_family_has_no_rule_and_a_text_model_no_tower():
    assert vision("some_new_vlm", {"hidden_size": 1024, "image_size": 336, "patch_size": 14}) is None
    assert vision("gemma3", {"image_size": 896, "patch_size": 14}) is None  # no width: nothing to size it by
    assert load_config_file(HF_CONFIGS / "Qwen__Qwen3-32B.json").vision_encoder is None


@pytest.mark.parametrize("field, value", [("patch_size", 0), ("image_size", -4), ("patch_size", "14")])
def test_a_bad_vision_value_is_named(field, value):
    with pytest.raises(InvalidInputError, match=f"vision_config.{field}"):
        vision("gemma3", {"hidden_size": 1152, "intermediate_size": 4304, "image_size": 896, "patch_size": 14,
                          field: value})


def test_qwen3_vl_largest_video_matches_the_budget_vllm_prints():
    """vLLM 0.11.0 printed "Encoder cache will be initialized with a budget of 153600 tokens, and profiled with
    1 video items of the maximum feature size" for Qwen3-VL-30B-A3B at max_model_len 65,536. By hand: frames
    grow to the 24,576 cap while their sides shrink to the 32-pixel minimum (24,576 × 32² ≤ 25,165,824 px²);
    grid_t 12,288 × (32 / 16)² = 49,152 patches, / 2² = 12,288 embeddings, × 12.5 = 153,600 tokens."""
    video = load_config_file(HF_CONFIGS / "Qwen__Qwen3-VL-30B-A3B-Instruct.json").vision_encoder.video
    assert largest_video(video, 65_536, parse_vllm_version("0.11.0")) == (24_576, 49_152, 12_288, 153_600)
    # a context too short for a third frame keeps the loop's 2 starting frames: 2 × 3520² px² is the
    # largest within 25,165,824 at a multiple of 32; (3520 / 16)² = 48,400 patches, 12,100 embeddings
    assert largest_video(video, 8_192, parse_vllm_version("0.11.0")) == (2, 48_400, 12_100, 151_250)


@pytest.mark.parametrize("max_model_len, release, frames, patches", [
    # 3584² frames: (3584 / 14)² = 65,536 patches and 16,384 embeddings per pair of frames (grid_t)
    (16_384, "0.11.0", 2, 65_536),  # a third frame pads to grid_t 2 = 32,768 embeddings: too many
    (32_768, "0.11.0", 4, 131_072),
    (131_072, "0.10.2", 16, 524_288),  # capped at 16 frames up to 0.10.x ...
    (131_072, "0.11.0", 14, 458_752),  # ... and 14 from 0.11.0
])
def test_qwen2_vl_video_is_frames_of_the_largest_image(max_model_len, release, frames, patches):
    enc = vision("qwen2_vl", {"embed_dim": 1280, "mlp_ratio": 4, "hidden_size": 3584, "patch_size": 14,
                              "spatial_merge_size": 2, "temporal_patch_size": 2, "depth": 32, "num_heads": 16})
    assert largest_video(enc.video, max_model_len, parse_vllm_version(release)) == (
        frames, patches, patches // 4, patches // 4)
