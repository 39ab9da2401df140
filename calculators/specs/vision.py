"""The largest image vLLM's profile run feeds a vision tower, read from a Hugging Face ``config.json``.

vLLM profiles a multimodal model with dummy images "of the maximum feature size"
(``get_image_size_with_most_features`` in each model's processing info, vllm/model_executor/models/,
v0.10.2). What that image costs the vision tower depends on the family; each rule below reads only
``config.json`` and the processor defaults vLLM and ``transformers`` apply when the checkpoint's
preprocessor sets nothing (docs/vllm-memory.md §2.3). The Qwen-VL families also describe their largest
dummy video (:class:`~calculators.specs.schema.VideoProfileSpec`), which V1 profiles instead of the
image when it has more tokens (:func:`largest_video`).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from calculators.errors import InvalidInputError
from calculators.specs.schema import VideoProfileSpec, VisionEncoderSpec
from calculators.vllm.versions import VllmVersion

#: Qwen2-VL / Qwen2.5-VL processors' ``max_pixels`` (preprocessor_config.json of the Qwen checkpoints)
#: and Qwen3-VL's ``size.longest_edge`` (pixels, not a side): 3584² and 4096² images.
QWEN2_VL_MAX_PIXELS = 12_845_056
QWEN3_VL_MAX_PIXELS = 16_777_216
#: Llama 4's image processor splits an image into at most 16 tiles and adds one global tile.
LLAMA4_MAX_TILES = 16
#: Qwen3-VL's video processor ``size``: ``shortest_edge`` and ``longest_edge`` bound frames × height × width
#: (pixels²) in ``video_smart_resize`` (preprocessor defaults of the Qwen3-VL checkpoints).
QWEN3_VL_VIDEO_MIN_PIXELS = 4_096
QWEN3_VL_VIDEO_MAX_PIXELS = 25_165_824
#: Qwen3-VL budgets each video embedding as 12.5 prompt tokens: its "<t seconds>" timestamp text and markers
#: (``Qwen3VLProcessingInfo.get_max_video_tokens``, vllm/model_executor/models/qwen3_vl.py, v0.11.0).
QWEN3_VL_VIDEO_TOKEN_MULTIPLIER = 12.5
#: Frames of the largest dummy video (``_MAX_FRAMES_PER_VIDEO``): Qwen3-VL 24,576; Qwen2-VL and Qwen2.5-VL 16
#: up to 0.10.x and 14 from 0.11.0 (vllm/model_executor/models/qwen2_vl.py).
QWEN3_VL_MAX_FRAMES = 24_576
QWEN2_VL_MAX_FRAMES = {(0, 11): 14, (0, 0): 16}


def vision_encoder_from_config(cfg: dict[str, Any], text_hidden: int) -> VisionEncoderSpec | None:
    """The vision tower's profile-run shape, or None when the family has no rule (or no vision tower)."""
    enc = cfg.get("vision_config")
    rule = _RULES.get(str(cfg.get("model_type", "")))
    if not isinstance(enc, dict) or rule is None or not (enc.get("embed_dim") or enc.get("hidden_size")):
        return None
    return rule(cfg, enc, text_hidden)


def _pos(c: dict[str, Any], name: str, default: float) -> float:
    """``c[name]`` (or the default) as a positive number; ``vision_config.<name>`` names it otherwise."""
    value = c.get(name)
    value = default if value is None else value
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 10**9:
        raise InvalidInputError(f"vision_config.{name}", value, "a positive number")
    return value


def _width(enc: dict[str, Any]) -> tuple[int, int]:
    """(hidden, MLP width) of the tower; Qwen2-VL names them ``embed_dim`` and ``mlp_ratio``."""
    hidden = int(_pos(enc, "embed_dim" if enc.get("embed_dim") else "hidden_size", 0))
    inter = int(_pos(enc, "intermediate_size", hidden * _pos(enc, "mlp_ratio", 4)))
    return hidden, inter


def _grid(enc: dict[str, Any], image: int, patch: int) -> tuple[int, int]:
    """(patches per side, patch size) of a square ``image_size`` image."""
    p = int(_pos(enc, "patch_size", patch))
    return max(1, int(_pos(enc, "image_size", image)) // p), p


def _spec(family: str, enc: dict[str, Any], patches: int, tokens: int, width: int, values: int,
          separators: int = 0, video: VideoProfileSpec | None = None) -> VisionEncoderSpec:
    hidden, inter = _width(enc)
    return VisionEncoderSpec(family=family, hidden_size=hidden, intermediate_size=inter, patches_per_item=patches,
                             tokens_per_item=tokens, separator_tokens=separators, output_width=width,
                             pixel_values_per_patch=values, deepstack_levels=len(enc.get("deepstack_visual_indexes")
                                                                                 or ()), video=video)


def _gemma3(cfg: dict[str, Any], enc: dict[str, Any], text_hidden: int) -> VisionEncoderSpec:
    """SigLIP over one 896² crop (pan-and-scan is off by default), pooled to ``mm_tokens_per_image``,
    between "\\n\\n<start_of_image>" and "<end_of_image>\\n\\n"."""
    side, patch = _grid(enc, 896, 14)
    return _spec("Gemma 3 (SigLIP, one crop)", enc, side * side, int(_pos(cfg, "mm_tokens_per_image", 256)),
                 text_hidden, 3 * patch * patch, separators=4)


def _llava(cfg: dict[str, Any], enc: dict[str, Any], text_hidden: int) -> VisionEncoderSpec:
    """CLIP/SigLIP over one ``image_size`` image, one token per patch (LLaVA-1.5)."""
    side, patch = _grid(enc, 336, 14)
    return _spec("LLaVA", enc, side * side, side * side, text_hidden, 3 * patch * patch)


def _mistral3(cfg: dict[str, Any], enc: dict[str, Any], text_hidden: int) -> VisionEncoderSpec:
    """Pixtral over one ``image_size`` image; ``spatial_merge_size``² patches a token, plus a break per row."""
    side, patch = _grid(enc, 1540, 14)
    rows = max(1, side // int(_pos(cfg, "spatial_merge_size", 2)))
    return _spec("Mistral 3 (Pixtral)", enc, side * side, rows * rows, text_hidden, 3 * patch * patch,
                 separators=rows)


def _llama4(cfg: dict[str, Any], enc: dict[str, Any], text_hidden: int) -> VisionEncoderSpec:
    """16 tiles and a global one of ``image_size``², each patch grid plus a class token, pixel-shuffled;
    a start and an end token, a separator after each tile and a marker before the global one."""
    side, patch = _grid(enc, 336, 14)
    tiles = LLAMA4_MAX_TILES + 1
    shuffle = min(1.0, _pos(enc, "pixel_shuffle_ratio", 0.5))
    return _spec("Llama 4 (17 tiles)", enc, tiles * (side * side + 1), tiles * max(1, int(side * side * shuffle ** 2)),
                 text_hidden, 3 * patch * patch, separators=tiles + 2)


def _qwen_vl(max_pixels: int, qwen3: bool) -> Callable[[dict[str, Any], dict[str, Any], int], VisionEncoderSpec]:
    def rule(cfg: dict[str, Any], enc: dict[str, Any], text_hidden: int) -> VisionEncoderSpec:
        """The largest square image within ``max_pixels``, sides a multiple of patch × merge; merge² patches
        a token; the projector's output is repeated for each deepstack level (Qwen3-VL); and the largest
        dummy video of the family."""
        patch, merge = int(_pos(enc, "patch_size", 14)), int(_pos(enc, "spatial_merge_size", 2))
        temporal = int(_pos(enc, "temporal_patch_size", 2))
        side = max(1, math.isqrt(max_pixels) // (patch * merge)) * merge
        levels = 1 + len(enc.get("deepstack_visual_indexes") or ())
        out = int(_pos(enc, "out_hidden_size", text_hidden))
        video = VideoProfileSpec(rule="shrinking_frames" if qwen3 else "frames_of_largest_image", patch_size=patch,
                                 merge_size=merge, temporal_patch_size=temporal, frame_side=side * patch,
                                 min_pixels=QWEN3_VL_VIDEO_MIN_PIXELS if qwen3 else 0,
                                 max_pixels=QWEN3_VL_VIDEO_MAX_PIXELS if qwen3 else 0,
                                 token_multiplier=QWEN3_VL_VIDEO_TOKEN_MULTIPLIER if qwen3 else 1.0)
        return _spec("Qwen-VL", enc, side * side, side * side // merge ** 2, out * levels,
                     3 * temporal * patch * patch, video=video)
    return rule


def _video_tokens(video: VideoProfileSpec, frames: int) -> tuple[int, int]:
    """(encoder positions, embeddings) of a dummy video of ``frames`` frames: the frames padded to the temporal
    patch, ``grid_t × grid_h × grid_w`` patches, merge² patches an embedding (``_get_vision_info``)."""
    side = video.frame_side
    f = video.patch_size * video.merge_size
    if video.rule == "shrinking_frames":  # video_smart_resize: frames × h × w within [min_pixels, max_pixels]
        t_bar = round(frames / video.temporal_patch_size) * video.temporal_patch_size
        side = round(side / f) * f
        if t_bar * side * side > video.max_pixels:
            side = max(f, math.floor(side / math.sqrt(frames * side * side / video.max_pixels) / f) * f)
        elif t_bar * side * side < video.min_pixels:
            side = math.ceil(side * math.sqrt(video.min_pixels / (frames * side * side)) / f) * f
    grid_t = max((frames + frames % video.temporal_patch_size) // video.temporal_patch_size, 1)
    patches = grid_t * (side // video.patch_size) ** 2
    return patches, patches // video.merge_size ** 2


@functools.lru_cache(maxsize=256)
def largest_video(video: VideoProfileSpec, max_model_len: int, v: VllmVersion) -> tuple[int, int, int, int]:
    """(frames, encoder positions, embeddings, prompt tokens) of the dummy video vLLM profiles.

    As ``get_num_frames_with_most_features`` (vllm/model_executor/models/qwen2_vl.py and qwen3_vl.py,
    v0.11.0): from 1 frame (Qwen3-VL 2) add frames while the video's embeddings fit ``max_model_len``, then
    cap them (:data:`QWEN2_VL_MAX_FRAMES`, :data:`QWEN3_VL_MAX_FRAMES`); the prompt tokens are the
    embeddings × ``token_multiplier``. Qwen3-VL with a context of about 12,300 tokens or more: 24,576 frames of
    32 × 32 pixels, 49,152 positions, 12,288 embeddings budgeted as 153,600 tokens.
    """
    shrinking = video.rule == "shrinking_frames"
    cap = QWEN3_VL_MAX_FRAMES if shrinking else next(n for (major, minor), n in QWEN2_VL_MAX_FRAMES.items()
                                                      if v.at_least(major, minor))
    frames = 2 if shrinking else 1
    while frames < cap and _video_tokens(video, frames + 1)[1] <= max_model_len:
        frames += 1
    patches, embeddings = _video_tokens(video, frames)
    return frames, patches, embeddings, int(embeddings * video.token_multiplier)


_RULES: dict[str, Callable[[dict[str, Any], dict[str, Any], int], VisionEncoderSpec]] = {
    "gemma3": _gemma3,
    "llava": _llava,
    "mistral3": _mistral3,
    "llama4": _llama4,
    "qwen2_vl": _qwen_vl(QWEN2_VL_MAX_PIXELS, qwen3=False),
    "qwen2_5_vl": _qwen_vl(QWEN2_VL_MAX_PIXELS, qwen3=False),
    "qwen3_vl": _qwen_vl(QWEN3_VL_MAX_PIXELS, qwen3=True),
    "qwen3_vl_moe": _qwen_vl(QWEN3_VL_MAX_PIXELS, qwen3=True),
}
