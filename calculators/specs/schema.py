"""Frozen, validated specifications of accelerators and models, in SI units.

Data files use datasheet units in their key names (``memory_bandwidth_gb_per_s``); these classes
hold SI values (bytes, bytes/s, FLOP/s) and are built once on load by :mod:`calculators.specs.catalog`.
"""
from __future__ import annotations

import math
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from calculators.errors import InvalidInputError
from calculators.units import GB, TFLOP, GiB

LayerType = Literal["full_attention", "sliding_attention", "chunked_attention"]
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Price(_Frozen):
    """An indicative on-demand price for one GPU-hour."""

    provider: str
    usd_per_gpu_hour: float = Field(gt=0)
    as_of: str
    source: str
    note: str = ""


class GPUSpec(_Frozen):
    """One accelerator. Compute is the **dense** peak; the link bandwidth is per direction."""

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    vendor: str
    architecture: str
    compute_capability: str | None = Field(
        default=None, pattern=r"^\d+\.\d+$",
        description="CUDA compute capability (NVIDIA's CUDA GPUs list, https://developer.nvidia.com/cuda-gpus); "
                    "what kernels a framework picks for the GPU")
    memory_gb_marketed: float = Field(gt=0)
    memory_bytes: float = Field(gt=0, description="total memory as the framework reports it")
    memory_note: str
    memory_bandwidth_bytes_per_s: float = Field(gt=0)
    peak_flop_per_s: dict[str, float]
    scale_up_link: str
    scale_up_bytes_per_s_per_direction: float = Field(ge=0)
    gpus_per_node: int = Field(ge=1)
    scale_up_domain_gpus: int | None = Field(
        default=None, ge=1, description="GPUs one scale-up (NVLink) domain joins where it spans several hosts "
                                        "(GB200/GB300 NVL72: 72); else the node's")
    tdp_w: float | None = Field(default=None, gt=0)
    prices: tuple[Price, ...] = ()
    source: str
    as_of: str
    unverified: tuple[str, ...] = ()

    @field_validator("peak_flop_per_s")
    @classmethod
    def _known_dtypes(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [k for k in v if k not in DTYPES]
        if bad:
            raise ValueError(f"unknown dtype(s) {bad}; allowed {DTYPES}")
        if any(not (x > 0 and math.isfinite(x)) for x in v.values()):
            raise ValueError("peak FLOP/s must be positive and finite")
        return v

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GiB

    @property
    def scale_up_over_pcie(self) -> bool:
        """True where the GPUs of a node exchange tensor-parallel traffic over PCIe: no NVLink, xGMI or ICI between
        them, or a bridge that joins pairs only (the catalog then stores the PCIe rate). vLLM's custom all-reduce
        needs NVLink beyond two GPUs (``CustomAllreduce``: "not supported on more than two PCIe-only GPUs"), so such
        a node all-reduces with NCCL (docs/performance-model.md §3.4)."""
        return self.scale_up_link.lstrip().lower().startswith(("none: pcie", "pcie"))

    @property
    def scale_up_domain(self) -> int:
        """GPUs that tensor parallelism can span over the scale-up link: the NVLink domain, else the node."""
        return self.scale_up_domain_gpus or self.gpus_per_node

    @classmethod
    def from_datasheet(cls, row: dict) -> GPUSpec:
        """Build from a data-file row that uses datasheet units in its key names."""
        row = dict(row)
        row["memory_bytes"] = row.pop("memory_gib_reported") * GiB
        row["memory_bandwidth_bytes_per_s"] = row.pop("memory_bandwidth_gb_per_s") * GB
        row["peak_flop_per_s"] = {k: v * TFLOP for k, v in row.pop("dense_tflop_per_s").items()}
        row["scale_up_bytes_per_s_per_direction"] = row.pop("scale_up_gb_per_s_per_direction") * GB
        row["prices"] = tuple(Price(**p) for p in row.pop("price", ()))
        return cls(**row)


class MLADims(NamedTuple):
    """The dimensions of multi-head latent attention (DeepSeek), all present on an MLA model."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


class VideoProfileSpec(_Frozen):
    """How a Qwen-VL processor builds the dummy video "with the most features" (docs/vllm-memory.md §2.3).

    ``frames_of_largest_image`` (Qwen2-VL, Qwen2.5-VL): frames of the largest image, as many as fit
    ``max_model_len`` up to a per-release cap. ``shrinking_frames`` (Qwen3-VL): up to 24,576 frames whose
    sides shrink so that frames × height × width stays within ``max_pixels``, each embedding budgeted as
    ``token_multiplier`` prompt tokens (its timestamp text). Sides in pixels, areas in pixels².
    """

    rule: Literal["frames_of_largest_image", "shrinking_frames"]
    patch_size: int = Field(gt=0)
    merge_size: int = Field(gt=0)
    temporal_patch_size: int = Field(gt=0)
    frame_side: int = Field(gt=0, description="side of the largest image, the frames' starting size")
    min_pixels: int = Field(default=0, ge=0)
    max_pixels: int = Field(default=0, ge=0)
    token_multiplier: float = Field(default=1.0, ge=1.0)


class VisionEncoderSpec(_Frozen):
    """The vision tower as vLLM's profile run exercises it: its width and the largest dummy image.

    ``patches_per_item`` are the encoder's sequence positions for the image with the most features
    (every tile or chunk counted), ``tokens_per_item`` the embeddings it becomes, ``separator_tokens``
    the prompt tokens around and between them (start, end, row breaks), and ``output_width`` the
    width of each embedding (the text hidden size, times the deepstack levels where the projector
    emits several). ``video`` is how the family builds its largest dummy video, where it has one.
    The rule per family is in docs/vllm-memory.md §2.3.
    """

    family: str
    hidden_size: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    patches_per_item: int = Field(gt=0)
    tokens_per_item: int = Field(gt=0)
    separator_tokens: int = Field(default=0, ge=0)
    output_width: int = Field(gt=0)
    pixel_values_per_patch: int = Field(gt=0, description="channels × patch² × temporal patch")
    deepstack_levels: int = Field(default=0, ge=0, description="vision features added to early text layers "
                                  "(Qwen3-VL's deepstack), each with a buffer of the text hidden size per token")
    video: VideoProfileSpec | None = None
    note: str = ""


class ModelSpec(_Frozen):
    """The architecture numbers that decide memory and FLOP, named as in Hugging Face configs."""

    id: str
    aliases: tuple[str, ...] = ()
    architecture: str
    hidden_size: int = Field(gt=0)
    num_hidden_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_key_value_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    intermediate_size: int = Field(ge=0, description="dense FFN width (0 if every layer is MoE)")
    vocab_size: int = Field(gt=0)
    max_position_embeddings: int = Field(gt=0)
    tie_word_embeddings: bool = False
    torch_dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    gated_mlp: bool = True
    attention_bias: bool = False
    norm_bias: bool = False
    qk_norm_over_heads: bool = Field(
        default=False, description="q and k RMS-normalised over all their heads at once (MiniMax-M2's qk_norm_type "
                                   "'per_layer'), so under tensor parallelism each layer all-reduces the ranks' sums "
                                   "of squares")
    rotary_dim: int = Field(default=0, ge=0, description="0 for models without rotary embeddings")
    rope_cache_positions: int = Field(default=0, ge=0, description="rows of vLLM's cos/sin caches, summed over them")
    num_rope_caches: int = Field(default=1, ge=0)
    layer_types: tuple[LayerType, ...]
    sliding_window: int | None = Field(default=None, gt=0)
    attention_chunk_size: int | None = Field(default=None, gt=0)
    global_head_dim: int | None = Field(
        default=None, gt=0, description="head_dim of the full-attention layers where it differs (Gemma 4)")
    num_global_key_value_heads: int | None = Field(
        default=None, gt=0, description="KV heads of the full-attention layers where they differ (Gemma 4)")
    num_kv_shared_layers: int = Field(
        default=0, ge=0, description="last layers that read an earlier layer's KV cache and keep none (Gemma 3n/4)")
    hidden_size_per_layer_input: int = Field(default=0, ge=0,
                                             description="per-layer input embedding width (Gemma 3n/4)")
    vocab_size_per_layer_input: int = Field(default=0, ge=0)
    use_double_wide_mlp: bool = Field(default=False, description="KV-shared layers' MLP twice as wide (Gemma 4)")
    max_tokens_per_mm_item: int = Field(
        default=0, ge=0, description="prompt tokens of the largest multimodal item where vLLM will not split one "
                                     "across steps, so a step must hold it (Gemma 4: 2,496)")
    kv_lora_rank: int | None = Field(default=None, gt=0)
    q_lora_rank: int | None = Field(default=None, gt=0)
    qk_rope_head_dim: int | None = Field(default=None, gt=0)
    qk_nope_head_dim: int | None = Field(default=None, gt=0)
    v_head_dim: int | None = Field(default=None, gt=0)
    num_experts: int = Field(default=0, ge=0)
    num_experts_per_tok: int = Field(default=0, ge=0)
    moe_intermediate_size: int = Field(default=0, ge=0)
    num_shared_experts: int = Field(default=0, ge=0)
    shared_expert_intermediate_size: int = Field(default=0, ge=0)
    moe_layers: tuple[int, ...] = ()
    encoder_params: float = Field(default=0.0, ge=0, description="vision/audio encoder and projector parameters")
    vision_encoder: VisionEncoderSpec | None = None
    quantization: str | None = None
    quantization_group_size: int | None = None
    params_total_card: float | None = None
    params_active_card: float | None = None
    params_source: str = ""
    defaults_assumed: tuple[str, ...] = Field(
        default=(), description="values the config.json did not give, each as 'field=value (rule)'")
    source: str = ""
    as_of: str = ""
    notes: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        if len(self.layer_types) != self.num_hidden_layers:
            raise ValueError("layer_types must have one entry per hidden layer")
        if "sliding_attention" in self.layer_types and self.sliding_window is None:
            raise ValueError("sliding_attention layers need sliding_window")
        if "chunked_attention" in self.layer_types and self.attention_chunk_size is None:
            raise ValueError("chunked_attention layers need attention_chunk_size")
        if any(not 0 <= i < self.num_hidden_layers for i in self.moe_layers):
            raise ValueError("moe_layers must index hidden layers")
        if self.moe_layers and not (0 < self.num_experts_per_tok <= self.num_experts):
            raise ValueError("MoE layers need 0 < num_experts_per_tok <= num_experts")
        if self.num_kv_shared_layers >= self.num_hidden_layers:
            raise ValueError("num_kv_shared_layers must leave at least one layer that keeps a KV cache")
        return self

    def attention_dims(self, layer_type: str) -> tuple[int, int]:
        """(KV heads, head_dim) of a layer of this kind: full-attention layers take the ``global_`` values
        where the config gives them (Gemma 4's ``Gemma4DecoderLayer``), every other kind the model's."""
        if layer_type == "full_attention":
            return (self.num_global_key_value_heads or self.num_key_value_heads,
                    self.global_head_dim or self.head_dim)
        return self.num_key_value_heads, self.head_dim

    @property
    def kv_cache_layers(self) -> int:
        """Layers that keep a KV cache: all but the trailing ``num_kv_shared_layers`` (vLLM allocates none for a
        layer with a ``kv_sharing_target_layer_name``)."""
        return self.num_hidden_layers - self.num_kv_shared_layers

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def mla_dims(self) -> MLADims:
        """The MLA dimensions; InvalidInputError unless ``kv_lora_rank`` and the head dims are all set."""
        k, r, n, v = self.kv_lora_rank, self.qk_rope_head_dim, self.qk_nope_head_dim, self.v_head_dim
        if k is None or r is None or n is None or v is None:
            raise InvalidInputError("kv_lora_rank", k,
                                    f"an MLA model with qk_rope_head_dim, qk_nope_head_dim and v_head_dim ({self.id})")
        return MLADims(k, r, n, v)

    @property
    def is_moe(self) -> bool:
        return bool(self.moe_layers)

    @property
    def attention_type(self) -> str:
        """MLA, MHA, MQA or GQA, by the KV heads the cache stores."""
        if self.is_mla:
            return "MLA"
        if self.num_key_value_heads == self.num_attention_heads:
            return "MHA"
        return "MQA" if self.num_key_value_heads == 1 else "GQA"
