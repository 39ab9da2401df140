"""The vision encoder's share of vLLM's profile run: how many dummy images, and the memory they hold.

vLLM sizes the KV cache after a profile run whose peak includes a pass of the vision tower over dummy
images of the maximum feature size (docs/vllm-memory.md §2.3):

- V0 (``ModelRunner.profile_run``, vllm/worker/model_runner.py, v0.8.5): every dummy request carries
  one image, and there are only ``max_num_batched_tokens // tokens_per_image`` requests (at least 1);
  the tower runs inside the model's forward.
- V1 (``GPUModelRunner.profile_run``, vllm/v1/worker/gpu_model_runner.py): one batch of images fills
  the encoder budget ``max(max_num_batched_tokens, tokens_per_image)``: ``⌈budget / tokens⌉`` images
  up to 0.10.1 and ``⌊budget / tokens⌋`` (at least 1, at most ``max_num_seqs`` × the images a
  ``max_model_len`` prompt holds) from 0.10.2 (``MultiModalBudget``, vllm/v1/worker/utils.py). Their
  outputs stay in the encoder cache through the text forward and the sampler pass; 0.11.0 pads each
  to the whole budget (``new_zeros((encoder_budget, hidden))``), 0.12.0 no longer does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from calculators.specs.schema import ModelSpec, VisionEncoderSpec
from calculators.specs.vision import largest_video
from calculators.vllm.overheads import ACTIVATION_FFN_COPIES, ACTIVATION_HIDDEN_COPIES
from calculators.vllm.versions import VllmVersion

#: Dummy pixel values are float32 on the GPU (the processors' output) for the whole profile run.
PIXEL_VALUE_BYTES = 4
#: V1's default limit of images per prompt (``limit_mm_per_prompt``).
V1_DEFAULT_ITEMS_PER_PROMPT = 999


@dataclass(frozen=True)
class EncoderPass:
    """The dummy images of one profile run and the bytes they cost on one GPU.

    ``pass_bytes``: the tower's peak over all ``items`` at once (its activations and the pixel values);
    ``kept_bytes``: what stays allocated while the text forward and the sampler run (the encoder
    outputs and the pixel values); ``requests``: dummy requests of the text forward and sampler.
    """

    items: int
    pass_bytes: float
    kept_bytes: float
    requests: int
    basis: str


def tokens_per_image(enc: VisionEncoderSpec, v: VllmVersion) -> int:
    """Prompt positions an image counts for in the budget: its embeddings, and from V1 0.10.2 the
    separators around them too (``get_mm_max_contiguous_tokens``, vllm/multimodal/profiling.py)."""
    return enc.tokens_per_item + (enc.separator_tokens if v.engine == "V1" and v.at_least(0, 10, 2) else 0)


def dummy_images(tokens: int, v: VllmVersion, *, max_num_batched_tokens: int, max_num_seqs: int,
                 max_model_len: int) -> tuple[int, int]:
    """(images in the encoder batch, dummy requests of the text pass) of a release's profile run
    for images of ``tokens`` prompt positions."""
    if v.engine == "V0":
        requests = max(1, min(max_num_seqs, max_num_batched_tokens // tokens))
        return requests, requests
    budget = max(max_num_batched_tokens, tokens)
    if not v.at_least(0, 10, 2):
        return min(math.ceil(budget / tokens), max_num_seqs * V1_DEFAULT_ITEMS_PER_PROMPT), max_num_seqs
    per_prompt = max(1, min(V1_DEFAULT_ITEMS_PER_PROMPT, max_model_len // tokens))
    return max(1, min(budget // tokens, max_num_seqs * per_prompt)), max_num_seqs


def output_rows(embeddings: int, tokens: int, v: VllmVersion, max_num_batched_tokens: int) -> int:
    """Rows each dummy output holds in the encoder cache: its ``embeddings``; 0.11.0 pads them to the
    encoder budget ``max(max_num_batched_tokens, tokens)``."""
    if v.engine == "V1" and v.at_least(0, 11) and not v.at_least(0, 11, 1):
        return max(max_num_batched_tokens, tokens)
    return embeddings


@dataclass(frozen=True)
class DummyItem:
    """The multimodal item a profile run repeats: ``patches`` encoder positions, ``embeddings`` outputs and the
    ``tokens`` it counts for in the encoder budget."""

    modality: str
    patches: int
    embeddings: int
    tokens: int


def profiled_item(enc: VisionEncoderSpec, v: VllmVersion, max_model_len: int) -> DummyItem:
    """The item of the modality with the most tokens: the largest image, or from V1 the family's largest
    video when it has more (``get_modality_with_max_tokens``; the image wins a tie)."""
    image = DummyItem("image", enc.patches_per_item, enc.tokens_per_item, tokens_per_image(enc, v))
    if enc.video is None or v.engine != "V1":
        return image
    frames, patches, embeddings, tokens = largest_video(enc.video, max_model_len, v)
    video = DummyItem(f"video ({frames:,} frames)", patches, embeddings, tokens)
    return video if video.tokens > image.tokens else image


def encoder_pass(model: ModelSpec, v: VllmVersion, *, max_num_batched_tokens: int, max_num_seqs: int,
                 max_model_len: int, tensor_parallel_size: int, act_bytes: int) -> EncoderPass | None:
    """The vision tower's part of the profile run [bytes], or None for a model without a modelled tower."""
    enc = model.vision_encoder
    if enc is None:
        return None
    item = profiled_item(enc, v, max_model_len)
    items, requests = dummy_images(item.tokens, v, max_num_batched_tokens=max_num_batched_tokens,
                                   max_num_seqs=max_num_seqs, max_model_len=max_model_len)
    patches = items * item.patches
    # the text forward's live tensors per position, over the tower's width and MLP width [B] (a vision MLP is not
    # gated: one MLP width fewer than the text rule counts; the rule is kept, within the estimate's range)
    per_patch = (ACTIVATION_HIDDEN_COPIES * enc.hidden_size
                 + ACTIVATION_FFN_COPIES * enc.intermediate_size / tensor_parallel_size) * act_bytes
    pixels = patches * enc.pixel_values_per_patch * PIXEL_VALUE_BYTES
    rows = output_rows(item.embeddings, item.tokens, v, max_num_batched_tokens)
    outputs = items * rows * enc.output_width * act_bytes
    basis = (f"{items} dummy {enc.family} {item.modality} item(s) × {item.patches:,} patches × {per_patch:,.0f} B; "
             f"kept: {items} × {rows:,} output rows × {enc.output_width:,} wide and the pixels")
    return EncoderPass(items, patches * per_patch + pixels, outputs + pixels, requests, basis)


def deepstack_buffer_bytes(model: ModelSpec, *, max_num_batched_tokens: int, act_bytes: int) -> float:
    """Qwen3-VL's deepstack buffers on one GPU [bytes], allocated with the model and so counted as weights.

    ``deepstack_levels × max_num_batched_tokens × text hidden × act_bytes``: the model's ``__init__`` keeps one
    zeroed ``(max_num_batched_tokens, hidden)`` tensor per deepstack level for the vision features it adds to
    the first text layers (``Qwen3VLForConditionalGeneration`` and ``Qwen3VLMoeForConditionalGeneration`` in
    vllm/model_executor/models/qwen3_vl.py and qwen3_vl_moe.py, v0.11.0 and v0.26.0); none without a vision
    tower or deepstack levels.
    """
    enc = model.vision_encoder
    if enc is None or not enc.deepstack_levels:
        return 0.0
    return float(enc.deepstack_levels * max_num_batched_tokens * model.hidden_size * act_bytes)
