"""KV-cache bytes per token, per sequence and per batch, as the serving engine stores them.

Engine-faithful rules (vLLM ``KVCacheSpec.page_size_bytes``; see docs/vllm-memory.md §3):

* full / sliding / chunked attention layers store ``2 · max(1, H_kv // tp) · head_dim · s`` bytes
  per token (K and V; KV heads are *replicated* when ``tp > H_kv``);
* MLA layers (DeepSeek) store one latent of ``kv_lora_rank + qk_rope_head_dim`` values per token,
  not divided by TP — except in vLLM before 0.7.1, which ran them as plain multi-head attention with
  every head's K and V padded to :data:`PRE_MLA_HEAD_DIM` values (docs/vllm-memory.md §3);
* sliding-window and chunked-local layers stop growing at their window;
* each pipeline stage holds only its own layers (vLLM ``get_pp_indices``).

All functions broadcast over NumPy arrays of the numeric arguments.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.specs.schema import ModelSpec
from calculators.validation import finite, positive_int

KV_CACHE_DTYPES = {"auto": None, "bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "fp8_e4m3": 1,
                   "fp8_e5m2": 1, "fp8_inc": 1}
_MODEL_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
V0_MLA_ALIGN_BYTES = 256  # VLLM_CUDA_MEM_ALIGN_KV_CACHE pads each MLA entry (vllm/worker/cache_engine.py)
PRE_MLA_HEAD_DIM = 256
"""Head size of DeepSeek-V2/V3's K and V in vLLM before MLA (≤ 0.7.0): q/k (192) and v (128) padded to 256
for the attention kernel (``DeepseekV2Attention`` in vllm/model_executor/models/deepseek_v2.py, v0.6.6).
A public 0.6.6 start-up log agrees: 4 GiB of swap / 528 CPU blocks = 16 tokens × 31 layers × 2 × 16 heads
× 256 × 2 B."""


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of an activation dtype (``bfloat16``, ``float16``, ``float32``)."""
    if dtype not in _MODEL_DTYPE_BYTES:
        raise InvalidInputError("dtype", dtype, f"one of auto, {', '.join(_MODEL_DTYPE_BYTES)}")
    return _MODEL_DTYPE_BYTES[dtype]


def kv_element_bytes(model: ModelSpec, kv_cache_dtype: str = "auto", dtype: str = "auto") -> int:
    """Bytes per stored KV element: ``auto`` follows the activation dtype; fp8 is 1 byte.

    Weight quantisation never changes it (vLLM ``STR_DTYPE_TO_TORCH_DTYPE``).
    """
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise InvalidInputError("kv_cache_dtype", kv_cache_dtype, f"one of {', '.join(KV_CACHE_DTYPES)}")
    fixed = KV_CACHE_DTYPES[kv_cache_dtype]
    return fixed if fixed is not None else dtype_bytes(model.torch_dtype if dtype == "auto" else dtype)


def kv_heads_per_rank(num_key_value_heads: ArrayLike, tensor_parallel_size: ArrayLike) -> np.ndarray:
    """KV heads one TP rank stores: ``max(1, H_kv // tp)`` (vLLM ``ModelConfig.get_num_kv_heads``)."""
    return np.maximum(1, np.asarray(num_key_value_heads) // np.asarray(tensor_parallel_size))


def check_tensor_parallel(model: ModelSpec, tensor_parallel_size: ArrayLike) -> np.ndarray:
    """Validate ``tensor_parallel_size`` against the heads as vLLM does, and return it as an array."""
    tp = np.asarray(positive_int("tensor_parallel_size", tensor_parallel_size))
    heads = model.num_attention_heads
    if np.any(heads % tp):
        raise InvalidInputError("tensor_parallel_size", tp.tolist(),
                                f"a divisor of num_attention_heads ({heads}) for {model.id}")
    names = {"num_key_value_heads": model.num_key_value_heads,
             "num_global_key_value_heads": model.num_global_key_value_heads}
    for name, kv in names.items():
        if kv is not None and not model.is_mla and np.any(np.where(tp <= kv, kv % tp, tp % kv)):
            raise InvalidInputError("tensor_parallel_size", tp.tolist(),
                                    f"a divisor or a multiple of {name} ({kv}) for {model.id}")
    return tp


def kv_bytes_per_token_per_layer(model: ModelSpec, *, tensor_parallel_size: ArrayLike = 1,
                                 kv_cache_dtype: str = "auto", dtype: str = "auto",
                                 mla_align_bytes: int = 1, mla_latent: bool = True,
                                 layer_type: str = "full_attention") -> np.ndarray:
    """KV bytes one token costs in one attention layer of kind ``layer_type`` on one GPU [bytes].

    Standard attention: ``2 · max(1, H_kv // tp) · head_dim · s``, with the layer kind's KV heads and
    head_dim (:meth:`ModelSpec.attention_dims`: Gemma 4's full-attention layers have their own). MLA:
    ``(kv_lora_rank + qk_rope_head_dim) · s``, replicated on every TP rank, padded up to a
    multiple of ``mla_align_bytes`` (256 in vLLM's V0 engine, 1 elsewhere); with ``mla_latent`` false
    (vLLM before 0.7.1), ``2 · (H // tp) · PRE_MLA_HEAD_DIM · s``: every query head's K and V, padded.
    """
    s = kv_element_bytes(model, kv_cache_dtype, dtype)
    tp = check_tensor_parallel(model, tensor_parallel_size)
    if model.is_mla and not mla_latent:
        return (2 * kv_heads_per_rank(model.num_attention_heads, tp) * PRE_MLA_HEAD_DIM * s).astype(np.int64)
    if model.is_mla:
        mla = model.mla_dims
        latent = (mla.kv_lora_rank + mla.qk_rope_head_dim) * s
        return np.broadcast_to(-(-latent // mla_align_bytes) * mla_align_bytes, tp.shape).astype(np.int64)
    kv_heads, head_dim = model.attention_dims(layer_type)
    return (2 * kv_heads_per_rank(kv_heads, tp) * head_dim * s).astype(np.int64)


def pp_layer_partition(num_layers: int, pipeline_parallel_size: int) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (``get_pp_indices``).

    Equal shares, and the remainder goes one layer each to the stages before the last, starting
    with the second-to-last: 27 layers at pp=2 → [14, 13]; 81 at pp=4 → [20, 20, 21, 20].
    """
    pp = int(positive_int("pipeline_parallel_size", pipeline_parallel_size, scalar=True))
    if pp > num_layers:
        raise InvalidInputError("pipeline_parallel_size", pp, f"at most num_hidden_layers ({num_layers})")
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    return parts


def stage_layer_types(model: ModelSpec, pipeline_parallel_size: int = 1) -> list[tuple[str, ...]]:
    """The attention kind of every layer, grouped by pipeline stage."""
    out: list[tuple[str, ...]] = []
    start = 0
    for n in pp_layer_partition(model.num_hidden_layers, pipeline_parallel_size):
        out.append(model.layer_types[start:start + n])
        start += n
    return out


def stage_kv_layer_types(model: ModelSpec, pipeline_parallel_size: int = 1) -> list[tuple[str, ...]]:
    """The attention kind of every layer that keeps a KV cache, grouped by pipeline stage: the trailing
    ``num_kv_shared_layers`` read an earlier layer's cache and keep none (vLLM's ``get_kv_cache_spec``
    skips a layer with a ``kv_sharing_target_layer_name``)."""
    out: list[tuple[str, ...]] = []
    start = 0
    for kinds in stage_layer_types(model, pipeline_parallel_size):
        out.append(tuple(k for i, k in enumerate(kinds, start) if i < model.kv_cache_layers))
        start += len(kinds)
    return out


def layer_window(model: ModelSpec, layer_type: str) -> float:
    """Tokens a layer of this kind keeps per sequence: its window, or unbounded (inf)."""
    if layer_type == "sliding_attention":
        window = model.sliding_window
    elif layer_type == "chunked_attention":
        window = model.attention_chunk_size
    else:
        return np.inf
    if window is None:  # ModelSpec guarantees a window for every windowed kind in its layer_types
        raise InvalidInputError("layer_type", layer_type, f"a layer kind that {model.id} gives a window")
    return float(window)


def kv_bytes_per_token(model: ModelSpec, *, tensor_parallel_size: ArrayLike = 1,
                       pipeline_parallel_size: int = 1, kv_cache_dtype: str = "auto",
                       dtype: str = "auto") -> np.ndarray:
    """KV bytes per token on the most loaded GPU, counting every layer as if it kept all tokens.

    This is the figure datasheets and vLLM's page size use (``Σ page_bytes / block_size`` over
    the stage's layers that keep a cache). Windowed layers are capped in :func:`kv_bytes_per_sequence`.
    Golden: Llama-3.1-70B bf16 = 2·80·8·128·2 = 327,680 B at TP1; 81,920 at TP4.
    """
    stages = []
    for kinds in stage_kv_layer_types(model, pipeline_parallel_size):
        stage = np.zeros(np.shape(tensor_parallel_size), dtype=np.int64)
        for k in kinds:
            stage = stage + kv_bytes_per_token_per_layer(model, tensor_parallel_size=tensor_parallel_size,
                                                         kv_cache_dtype=kv_cache_dtype, dtype=dtype, layer_type=k)
        stages.append(stage)
    return np.max(np.stack(stages), axis=0)


def kv_bytes_per_sequence(model: ModelSpec, seq_len: ArrayLike, *, tensor_parallel_size: ArrayLike = 1,
                          pipeline_parallel_size: int = 1, kv_cache_dtype: str = "auto",
                          dtype: str = "auto", block_size: int | None = None) -> np.ndarray:
    """KV bytes one sequence of ``seq_len`` tokens holds on the most loaded GPU [bytes].

    Windowed layers hold ``min(seq_len, window)`` tokens. With ``block_size`` the token count of
    every layer is rounded up to whole blocks (paged attention allocates blocks, not tokens).
    """
    n = np.asarray(positive_int("seq_len", seq_len), dtype=np.float64)
    b = 1 if block_size is None else int(positive_int("block_size", block_size, scalar=True))
    worst: np.ndarray | None = None
    for kinds in stage_kv_layer_types(model, pipeline_parallel_size):
        stage = np.zeros_like(n)
        for k in kinds:
            per_layer = kv_bytes_per_token_per_layer(model, tensor_parallel_size=tensor_parallel_size,
                                                     kv_cache_dtype=kv_cache_dtype, dtype=dtype, layer_type=k)
            stage = stage + np.ceil(np.minimum(n, layer_window(model, k)) / b) * b * per_layer
        worst = stage if worst is None else np.maximum(worst, stage)
    assert worst is not None  # pp_layer_partition always gives at least one stage
    return worst


def sequences_that_fit(model: ModelSpec, available_bytes: ArrayLike, seq_len: ArrayLike, **kw) -> np.ndarray:
    """Whole sequences of ``seq_len`` tokens that fit in ``available_bytes`` per GPU (never negative).

    ``kw`` are those of :func:`kv_bytes_per_sequence` (``tensor_parallel_size``, ``block_size``…).
    """
    need = kv_bytes_per_sequence(model, seq_len, **kw)
    avail = finite("available_bytes", available_bytes)  # NaN/inf would cast to a negative int64
    try:
        np.broadcast_shapes(np.shape(avail), np.shape(need))
    except ValueError:
        raise InvalidInputError("seq_len", np.shape(seq_len), f"one number, or an array that pairs with "
                                                              f"available_bytes of shape {np.shape(avail)}") from None
    return np.minimum(np.floor(np.maximum(avail, 0) / need), 2.0**62).astype(np.int64)
