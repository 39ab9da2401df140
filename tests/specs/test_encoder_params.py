"""Vision-tower parameters from a config.json's vision_config, against counts worked out by hand."""
from __future__ import annotations

import pytest

from calculators.memory.weights import weight_bytes_per_stage
from calculators.specs.hf_config import load_config_file, model_from_config
from calculators.units import GiB
from tests.conftest import HF_CONFIGS


def test_gemma3_siglip_by_hand():
    # 27 layers × (4 · 1152² + 2 · 1152 · 4304) = 411,070,464; patch embedding 3 · 14² · 1152 = 677,376;
    # positions (896 / 14)² · 1152 = 4,718,592; projector 1152 · 5376 = 6,193,152
    m = load_config_file(HF_CONFIGS / "google__gemma-3-27b-it.json")
    assert m.encoder_params == 411_070_464 + 677_376 + 4_718_592 + 6_193_152


def test_qwen3_vl_weights_near_printed():
    # Corpus case V1-21: Qwen3-VL-30B-A3B at TP 2 printed "Model loading took 29.3115 GiB".
    m = load_config_file(HF_CONFIGS / "Qwen__Qwen3-VL-30B-A3B-Instruct.json")
    assert m.encoder_params == pytest.approx(538_177_536)
    per_gpu = float(weight_bytes_per_stage(m, tensor_parallel_size=2)[0])
    assert per_gpu / GiB == pytest.approx(29.3115, rel=0.015)


def test_text_only_config_has_no_encoder():
    assert load_config_file(HF_CONFIGS / "Qwen__Qwen3-32B.json").encoder_params == 0


def test_qwen2_vl_tower_is_as_wide_as_its_embed_dim():
    # Qwen2-VL names the tower's width embed_dim (1280) and its merger's output hidden_size (3584):
    # 32 × (4 · 1280² + 2 · 1280 · 5120) = 629,145,600; patch embedding 3 · 14² · 2 · 1280 = 1,505,280;
    # merger (1280 · 4)² + 1280 · 4 · 3584 = 44,564,480: about the 675M of Qwen2-VL's published ViT
    text = {"hidden_size": 3584, "num_hidden_layers": 2, "num_attention_heads": 28, "num_key_value_heads": 4,
            "intermediate_size": 18944, "vocab_size": 152064, "max_position_embeddings": 32768}
    vision = {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "mlp_ratio": 4, "num_heads": 16, "in_chans": 3,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "hidden_act": "quick_gelu"}
    m = model_from_config({"model_type": "qwen2_vl", **text, "vision_config": vision}, id="qwen2-vl")
    assert m.encoder_params == 629_145_600 + 1_505_280 + 44_564_480
