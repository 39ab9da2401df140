"""vLLM's start-up KV-cache accounting, per version: budget, blocks, and the lines it prints.

Method: docs/vllm-memory.md §0–§6. Per GPU worker::

    available = ceil(total × gpu_memory_utilization) − weights − activation_peak − non_torch
                [− cudagraph, where the version deducts it]
    num_gpu_blocks = floor(available / bytes_per_block)   (minimum over pipeline stages)

``--kv-cache-memory`` replaces ``available`` with the given bytes. Uniform models have one KV group
(``bytes_per_block = block_size × Σ per-layer token bytes``); models that mix full and windowed
layers get groups of equal layer count that share block ids (``page × group_size`` per block).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.memory.kv_cache import (
    V0_MLA_ALIGN_BYTES,
    dtype_bytes,
    kv_bytes_per_token_per_layer,
    kv_element_bytes,
    layer_window,
    stage_kv_layer_types,
    stage_layer_types,
)
from calculators.memory.weights import resolve_quantization, weight_bytes_per_stage
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.units import GiB
from calculators.validation import fraction, positive_int
from calculators.vllm.encoder_profile import deepstack_buffer_bytes, encoder_pass
from calculators.vllm.mla_weights import mla_load_bytes_per_layer
from calculators.vllm.overheads import (
    COEFFICIENTS,
    FLASHINFER_SAMPLER_CHOICES,
    Coefficients,
    Estimate,
    activation_peak,
    cudagraph,
    non_torch,
    pinned_segments,
    sampler_profile,
)
from calculators.vllm.versions import (
    DEFAULT_VLLM_VERSION,
    VllmVersion,
    caches_mla_latent,
    default_scheduler_limits,
    parse_vllm_version,
    subtracts_cudagraphs,
    uses_hybrid_kv_manager,
)
from calculators.vllm.weight_layout import mxfp4_note, weight_layout

V0_SWAP_SPACE_BYTES = 4 * GiB  # vLLM V0 --swap-space default, sizes "# CPU blocks"


@dataclass(frozen=True)
class Settings:
    """The engine flags after vLLM's defaults are applied (vLLM's argument names)."""

    tensor_parallel_size: int
    pipeline_parallel_size: int
    dtype: str
    quantization: str
    kv_cache_dtype: str
    gpu_memory_utilization: float
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    enforce_eager: bool
    kv_cache_memory_bytes: int | None
    vllm_version: str
    engine: str
    expert_parallel_size: int | None
    flashinfer_sampler: str
    language_model_only: bool = False


@dataclass(frozen=True)
class KVGroup:
    """Layers of one attention kind that share block ids (vLLM ``KVCacheGroupSpec``), ``block_size`` tokens a
    block (a kind with smaller pages gets proportionally more, so every block is the same size)."""

    layer_type: str
    num_layers: int
    block_size: int


@dataclass(frozen=True)
class StageMemory:
    """One GPU of one pipeline stage: where its memory goes and how many blocks it can hold."""

    stage: int
    num_layers: int
    weights_bytes: float
    activation: Estimate
    non_torch: Estimate
    cudagraph: Estimate
    cudagraph_subtracted: bool
    available: Estimate
    kv_bytes_per_token: int
    groups: tuple[KVGroup, ...]
    bytes_per_block: int
    num_blocks: int
    num_blocks_low: int
    num_blocks_high: int


@dataclass(frozen=True)
class CapacityResult:
    """Everything ``llmcap capacity`` reports for one model, GPU and set of flags."""

    model_id: str
    gpu: str
    gpu_memory_bytes: float
    settings: Settings
    budget_bytes: float
    stages: tuple[StageMemory, ...]
    binding_stage: int
    blocks_per_request: int
    kv_cache_tokens: int
    kv_cache_tokens_low: int
    kv_cache_tokens_high: int
    max_concurrency: float
    max_concurrency_low: float
    max_concurrency_high: float
    fits: bool
    message: str
    estimated_max_model_len: int | None
    vllm_lines: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def binding(self) -> StageMemory:
        return self.stages[self.binding_stage]


def kv_groups(layer_types: tuple[str, ...], hybrid_manager: bool, page_bytes: dict[str, int],
              block_size: int) -> tuple[KVGroup, ...]:
    """Partition a stage's KV-cache layers into groups of equal size.

    One group when every layer is of one kind (or the version sizes windowed layers as full
    attention). Otherwise the group size is the smallest per-kind layer count, each kind is cut
    into ``ceil(count / size)`` groups, and short groups are padded (vLLM ``get_kv_cache_groups``).
    ``page_bytes`` are each kind's bytes per token per layer: a kind whose page is smaller than the
    largest gets ``block_size × ratio`` tokens a block (``unify_kv_cache_spec_page_size``,
    vllm/v1/core/kv_cache_utils.py, v0.12.0; Gemma 4's sliding layers, half the bytes of its full ones).
    """
    kinds = layer_types if hybrid_manager else ("full_attention",) * len(layer_types)
    counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    if len(counts) <= 1:
        return tuple(KVGroup(kind, n, block_size) for kind, n in counts.items())
    largest = max(page_bytes[k] for k in counts)
    size = min(counts.values())
    return tuple(KVGroup(k, size, block_size * largest // page_bytes[k])
                 for k, n in counts.items() for _ in range(math.ceil(n / size)))


def blocks_per_request(model: ModelSpec, group: KVGroup, seq_len: ArrayLike,
                       max_num_batched_tokens: int) -> np.ndarray:
    """Blocks one request of ``seq_len`` tokens holds in a group (vLLM ``max_memory_usage_bytes``), vectorised.

    With ``B`` the group's block size: full attention: ``ceil(len / B)``. Sliding window:
    ``ceil(min(window − 1 + max_num_batched_tokens, len) / B) + 1``. Chunked local:
    ``ceil(min(chunk + max_num_batched_tokens, len) / B)`` (docs/vllm-memory.md §3.4, §4).
    """
    n = np.asarray(seq_len, dtype=np.int64)
    block_size = group.block_size
    if group.layer_type == "full_attention":
        return -(-n // block_size)
    window = int(layer_window(model, group.layer_type))
    if group.layer_type == "sliding_attention":
        return -(-np.minimum(window - 1 + max_num_batched_tokens, n) // block_size) + 1
    return -(-np.minimum(window + max_num_batched_tokens, n) // block_size)


def request_blocks(model: ModelSpec, groups: tuple[KVGroup, ...], seq_len: ArrayLike, s: Settings) -> np.ndarray:
    """Blocks one request of ``seq_len`` tokens holds across all KV groups (see :func:`blocks_per_request`)."""
    return sum((blocks_per_request(model, g, seq_len, s.max_num_batched_tokens) for g in groups),
               start=np.zeros(np.shape(seq_len), dtype=np.int64))


def estimate_max_model_len(model: ModelSpec, stage: StageMemory, s: Settings) -> int:
    """Longest request whose blocks fit in the stage's KV memory (binary search, as vLLM's)."""
    blocks = stage.available.value // stage.bytes_per_block
    lo, hi = 0, s.max_model_len
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if request_blocks(model, stage.groups, mid, s) <= blocks:
            lo = mid
        else:
            hi = mid - 1
    return lo


def resolve_settings(model: ModelSpec, gpu_memory_bytes: float, gpu_name: str, *, tensor_parallel_size: int = 1,
                     pipeline_parallel_size: int = 1, dtype: str = "auto", quantization: str | None = None,
                     kv_cache_dtype: str = "auto", gpu_memory_utilization: float = 0.9,
                     max_model_len: int | None = None, max_num_batched_tokens: int | None = None,
                     max_num_seqs: int | None = None, block_size: int | None = None, enforce_eager: bool = False,
                     kv_cache_memory_bytes: int | None = None, vllm_version: str = DEFAULT_VLLM_VERSION,
                     engine: str = "auto", expert_parallel_size: int | None = None,
                     flashinfer_sampler: str = "auto", mla_block_size: int = 16,
                     language_model_only: bool = False, rocm: bool = False,
                     compute_capability: str | None = None) -> Settings:
    """Validate the flags and fill in what vLLM would choose for those not given.

    ``rocm`` and ``compute_capability`` describe the GPU where vLLM's defaults depend on them
    (:func:`~calculators.vllm.versions.default_scheduler_limits`).

    ``language_model_only`` is vLLM's ``--language-model-only`` (the same as a ``--limit-mm-per-prompt`` of 0
    for every modality): a multimodal model loads and profiles no vision or audio tower."""
    v = parse_vllm_version(vllm_version, engine)
    if flashinfer_sampler not in FLASHINFER_SAMPLER_CHOICES:
        raise InvalidInputError("flashinfer_sampler", flashinfer_sampler,
                                "one of " + ", ".join(FLASHINFER_SAMPLER_CHOICES))
    if np.ndim(gpu_memory_utilization) != 0:
        raise InvalidInputError("gpu_memory_utilization", gpu_memory_utilization, "one fraction in (0, 1]")
    fraction("gpu_memory_utilization", gpu_memory_utilization)
    dtype = model.torch_dtype if dtype == "auto" else dtype
    dtype_bytes(dtype)
    kv_element_bytes(model, kv_cache_dtype, dtype)
    mml = int(positive_int("max_model_len", max_model_len if max_model_len is not None
                           else model.max_position_embeddings, scalar=True))
    if mml > model.max_position_embeddings:
        raise InvalidInputError("max_model_len", mml,
                                f"at most max_position_embeddings ({model.max_position_embeddings}) of {model.id}")
    tokens, seqs = default_scheduler_limits(v, model, gpu_memory_bytes / GiB, gpu_name, mml, rocm=rocm,
                                            compute_capability=compute_capability,
                                            max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs)
    if max_num_batched_tokens is None and not language_model_only:
        tokens = max(tokens, model.max_tokens_per_mm_item)  # a step holds a whole item vLLM will not split
    default_block = mla_block_size if model.is_mla and v.engine == "V1" else 16
    return Settings(
        tensor_parallel_size=int(positive_int("tensor_parallel_size", tensor_parallel_size, maximum=1024,
                                              scalar=True)),
        pipeline_parallel_size=int(positive_int("pipeline_parallel_size", pipeline_parallel_size, maximum=1024,
                                                scalar=True)),
        dtype=dtype, quantization=resolve_quantization(model, quantization), kv_cache_dtype=kv_cache_dtype,
        gpu_memory_utilization=float(gpu_memory_utilization), max_model_len=mml,
        max_num_batched_tokens=int(positive_int("max_num_batched_tokens", tokens, scalar=True)),
        max_num_seqs=int(positive_int("max_num_seqs", seqs, scalar=True)),
        block_size=int(positive_int("block_size", default_block if block_size is None else block_size,
                                    maximum=4096, scalar=True)),
        enforce_eager=bool(enforce_eager),
        kv_cache_memory_bytes=None if kv_cache_memory_bytes is None else int(
            positive_int("kv_cache_memory", kv_cache_memory_bytes, scalar=True)),
        vllm_version=v.text, engine=v.engine,
        expert_parallel_size=None if expert_parallel_size is None else int(
            positive_int("expert_parallel_size", expert_parallel_size, scalar=True)),
        flashinfer_sampler=flashinfer_sampler, language_model_only=bool(language_model_only),
    )


@dataclass(frozen=True)
class _Context:
    """What every stage shares: flags, release, GPU, budget and the estimates' constants."""

    settings: Settings
    version: VllmVersion
    gpu: GPUSpec | None
    budget: float
    coefficients: Coefficients


def stage_overheads(model: ModelSpec, s: Settings, gpu: GPUSpec | None, num_layers: int,
                    coefficients: Coefficients = COEFFICIENTS,
                    last_stage: bool = True) -> tuple[Estimate, Estimate, Estimate, bool]:
    """A stage's activation peak, non-torch memory and CUDA-graph pool, and whether the graphs are deducted.

    Only the last pipeline stage runs the profile's sampler pass. In 0.27–0.30 the non-torch term also holds
    the freed activation segments those releases count as consumed (:func:`pinned_segments`)."""
    v = parse_vllm_version(s.vllm_version, s.engine)
    quantized = s.quantization != "none"
    encoder = encoder_pass(model, v, max_num_batched_tokens=s.max_num_batched_tokens, max_num_seqs=s.max_num_seqs,
                           max_model_len=s.max_model_len, tensor_parallel_size=s.tensor_parallel_size,
                           act_bytes=dtype_bytes(s.dtype))
    act = activation_peak(model, max_num_batched_tokens=s.max_num_batched_tokens, max_num_seqs=s.max_num_seqs,
                          tensor_parallel_size=s.tensor_parallel_size, act_bytes=dtype_bytes(s.dtype),
                          sampler=sampler_profile(v, model, quantized, s.flashinfer_sampler) if last_stage else None,
                          encoder=encoder, quantization=s.quantization, coefficients=coefficients)
    nt = non_torch(s.tensor_parallel_size * s.pipeline_parallel_size, gpu, v, coefficients)
    pinned = pinned_segments(model, v, max_num_batched_tokens=s.max_num_batched_tokens,
                             tensor_parallel_size=s.tensor_parallel_size, act_bytes=dtype_bytes(s.dtype),
                             quantization=s.quantization, coefficients=coefficients)
    nt = nt if pinned is None else nt.plus(pinned)
    cg = cudagraph(model, num_layers, s.enforce_eager, s.max_num_seqs, coefficients)
    return act, nt, cg, subtracts_cudagraphs(v, model, quantized, s.enforce_eager)


def _stage(model: ModelSpec, ctx: _Context, i: int, kinds: tuple[str, ...], kv_kinds: tuple[str, ...],
           weights: float) -> StageMemory:
    """One pipeline stage: its ``kinds`` of layer, the ``kv_kinds`` of those that keep a KV cache, its weights."""
    s, v, budget = ctx.settings, ctx.version, ctx.budget
    act, nt, cg, cg_sub = stage_overheads(model, s, ctx.gpu, len(kinds), ctx.coefficients,
                                          last_stage=i == s.pipeline_parallel_size - 1)
    if s.kv_cache_memory_bytes is not None:
        available = Estimate.exact(float(s.kv_cache_memory_bytes), "--kv-cache-memory")
    else:
        def avail(a: float, n: float, c: float) -> float:
            return budget - weights - a - n - (c if cg_sub else 0.0)
        available = Estimate(avail(act.value, nt.value, cg.value), avail(act.high, nt.high, cg.high),
                             avail(act.low, nt.low, cg.low), "budget − weights − activation − non-torch"
                             + (" − CUDA graphs" if cg_sub else ""))
    page = {k: int(kv_bytes_per_token_per_layer(
        model, tensor_parallel_size=s.tensor_parallel_size, kv_cache_dtype=s.kv_cache_dtype, dtype=s.dtype,
        mla_align_bytes=V0_MLA_ALIGN_BYTES if v.engine == "V0" else 1, mla_latent=caches_mla_latent(v),
        layer_type=k)) for k in dict.fromkeys(kv_kinds)}
    hybrid = uses_hybrid_kv_manager(v)
    groups = kv_groups(kv_kinds, hybrid, page, s.block_size)
    # a block holds one page per layer of a group; without the hybrid manager one group holds every layer's page
    block_bytes = (max(g.block_size * page[g.layer_type] for g in groups) * max(g.num_layers for g in groups)
                   if hybrid else s.block_size * sum(page[k] for k in kv_kinds))

    def blocks(x: float) -> int:
        return max(0, int(x // block_bytes))
    return StageMemory(i, len(kinds), weights, act, nt, cg, cg_sub, available, sum(page[k] for k in kv_kinds),
                       groups, block_bytes, blocks(available.value), blocks(available.low), blocks(available.high))


def vllm_capacity(model: ModelSpec, *, gpu: GPUSpec | None = None, gpu_memory_bytes: float | None = None,
                  coefficients: Coefficients = COEFFICIENTS, **flags) -> CapacityResult:
    """Predict vLLM's start-up KV-cache numbers for a model on a GPU with these flags.

    ``flags`` are :func:`resolve_settings`'s (vLLM's names). Give ``gpu`` (catalog entry) or
    ``gpu_memory_bytes`` (total memory as the framework reports it). ``coefficients`` are the
    estimates' fitted constants (the accuracy benchmark refits them).
    """
    if gpu_memory_bytes is not None:
        given = gpu_memory_bytes
    elif gpu is not None:
        given = gpu.memory_bytes
    else:
        raise InvalidInputError("gpu", None, "a GPU name, or the GPU's memory in GiB")
    try:
        total = float(given)
    except (TypeError, ValueError):
        raise InvalidInputError("gpu_memory_gib", gpu_memory_bytes, "one positive number") from None
    if not (total > 0 and math.isfinite(total)):
        raise InvalidInputError("gpu_memory_gib", total / GiB, "a positive number")
    name = gpu.name if gpu else f"GPU with {total / GiB:.2f} GiB"
    arch = gpu.architecture if gpu else ""
    mla_block = {"Hopper": 64, "Blackwell": 128, "Blackwell Ultra": 128}.get(arch, 16)
    s = resolve_settings(model, total, name, mla_block_size=mla_block, rocm=bool(gpu and gpu.vendor == "AMD"),
                         compute_capability=gpu.compute_capability if gpu else None, **flags)
    if s.language_model_only:  # the towers are neither loaded nor profiled
        model = model.model_copy(update={"encoder_params": 0.0, "vision_encoder": None})
    v = parse_vllm_version(s.vllm_version, s.engine)
    budget = math.ceil(total * s.gpu_memory_utilization)
    weights = weight_bytes_per_stage(model, tensor_parallel_size=s.tensor_parallel_size,
                                     pipeline_parallel_size=s.pipeline_parallel_size, quantization=s.quantization,
                                     dtype=s.dtype, expert_parallel_size=s.expert_parallel_size,
                                     layout=weight_layout(gpu, v))
    weights[0] += deepstack_buffer_bytes(model, max_num_batched_tokens=s.max_num_batched_tokens,
                                         act_bytes=dtype_bytes(s.dtype))
    mla_layer = mla_load_bytes_per_layer(model, v, s.quantization, s.tensor_parallel_size, dtype_bytes(s.dtype))
    ctx = _Context(s, v, gpu, budget, coefficients)
    stages = tuple(_stage(model, ctx, i, kinds, kv_kinds, float(np.ravel(weights[i])[0]) + len(kinds) * mla_layer)
                   for i, (kinds, kv_kinds) in enumerate(zip(stage_layer_types(model, s.pipeline_parallel_size),
                                                            stage_kv_layer_types(model, s.pipeline_parallel_size),
                                                            strict=True)))
    binding = min(range(len(stages)), key=lambda i: (stages[i].num_blocks, stages[i].available.value))
    weight_notes = [mxfp4_note(gpu, v)] if s.quantization.startswith("mxfp4") else []
    return _report(model, name, total, s, v, budget, stages, binding, mla_layer, weight_notes)


def printed_kv_numbers(model: ModelSpec, st: StageMemory, s: Settings, v: VllmVersion,
                       num_blocks: int) -> tuple[int, float]:
    """``GPU KV cache size`` tokens and ``Maximum concurrency`` as this version computes them (§5).

    V0 and V1 ≤ 0.9.0: tokens = blocks × B, concurrency = tokens / max_model_len. 0.9.1–0.20:
    concurrency = blocks / blocks-per-request, tokens = ``floor(blocks / groups) × B``. 0.21+:
    tokens = ``int(concurrency × max_model_len)``.
    """
    mml = s.max_model_len
    if v.engine == "V0" or not v.at_least(0, 9, 1):
        tokens = num_blocks * s.block_size
        return tokens, tokens / mml
    concurrency = num_blocks / int(request_blocks(model, st.groups, mml, s))
    if not v.at_least(0, 21):
        return (num_blocks // len(st.groups)) * min(g.block_size for g in st.groups), concurrency
    return int(concurrency * mml), concurrency


def _lines(st: StageMemory, s: Settings, v: VllmVersion, total: float, budget: float, tokens: int,
           conc: float, failure: str | None) -> list[str]:
    g = GiB
    mml = s.max_model_len
    if v.engine == "V0":
        out = [f"Loading model weights took {st.weights_bytes / g:.4f} GB"]
        if s.kv_cache_memory_bytes is None and not v.at_least(0, 6, 6):
            out.append(f"Memory profiling results: total_gpu_memory={total / g:.2f}GiB peak_torch_memory="
                       f"{(st.weights_bytes + st.activation.value) / g:.2f}GiB non_torch_memory="
                       f"{st.non_torch.value / g:.2f}GiB kv_cache_size={st.available.value / g:.2f}GiB "
                       f"gpu_memory_utilization={s.gpu_memory_utilization:.2f}")
        elif s.kv_cache_memory_bytes is None:
            out += [f"the current vLLM instance can use total_gpu_memory ({total / g:.2f}GiB) x "
                    f"gpu_memory_utilization ({s.gpu_memory_utilization:.2f}) = {budget / g:.2f}GiB",
                    f"model weights take {st.weights_bytes / g:.2f}GiB; non_torch_memory takes "
                    f"{st.non_torch.value / g:.2f}GiB; PyTorch activation peak memory takes "
                    f"{st.activation.value / g:.2f}GiB; the rest of the memory reserved for KV Cache is "
                    f"{st.available.value / g:.2f}GiB."]
        cpu = int(V0_SWAP_SPACE_BYTES // st.bytes_per_block)
        word = "cuda" if v.at_least(0, 7) else "GPU"
        out.append(f"# {word} blocks: {tokens // s.block_size}, # CPU blocks: {cpu}")
        return out + ([failure] if failure else [f"Maximum concurrency for {mml} tokens per request: {conc:.2f}x"])
    out = [f"Model loading took {st.weights_bytes / g:.4f} GiB"]
    if v.at_least(0, 9, 1):
        out.append(f"Available KV cache memory: {st.available.value / g:.2f} GiB")
    if failure:
        return out + [failure]
    if not v.at_least(0, 8):
        return out + [f"# GPU blocks: {st.num_blocks}"]
    size = f"GPU KV cache size: {tokens:,} tokens"
    conc_line = f"Maximum concurrency for {mml:,} tokens per request: {conc:.2f}x"
    return out + ([f"{size}, {conc_line}"] if v.at_least(0, 28) else [size, conc_line])


def _failure(model: ModelSpec, st: StageMemory, s: Settings, v: VllmVersion) -> tuple[str | None, int | None]:
    """vLLM's start-up error for this stage, if any, and the longest request that would fit."""
    if st.available.value <= 0 or st.num_blocks == 0:
        return ("ValueError: No available memory for the cache blocks. Try increasing "
                "`gpu_memory_utilization` when initializing the engine."), 0
    per_request = int(request_blocks(model, st.groups, s.max_model_len, s))
    if per_request <= st.num_blocks:
        return None, None
    estimate = estimate_max_model_len(model, st, s)
    if v.engine == "V0":
        return (f"ValueError: The model's max seq len ({s.max_model_len}) is larger than the maximum number of "
                f"tokens that can be stored in KV cache ({st.num_blocks * s.block_size}). Try increasing "
                "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."), estimate
    need = per_request * st.bytes_per_block
    return (f"ValueError: To serve at least one request with the models's max seq len ({s.max_model_len}), "
            f"({need / GiB:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
            f"({st.available.value / GiB:.2f} GiB). Based on the available memory, the estimated maximum model "
            f"length is {estimate}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine."), estimate


def _report(model: ModelSpec, name: str, total: float, s: Settings, v: VllmVersion, budget: float,
            stages: tuple[StageMemory, ...], binding: int, mla_layer: float,
            weight_notes: list[str]) -> CapacityResult:
    st = stages[binding]
    blocks = min(x.num_blocks for x in stages)
    lo_blocks, hi_blocks = min(x.num_blocks_low for x in stages), min(x.num_blocks_high for x in stages)
    tokens, conc = printed_kv_numbers(model, st, s, v, blocks)
    tokens_lo, conc_lo = printed_kv_numbers(model, st, s, v, lo_blocks)
    tokens_hi, conc_hi = printed_kv_numbers(model, st, s, v, hi_blocks)
    failure, estimate = _failure(model, st, s, v)
    fits = failure is None
    per_request = int(request_blocks(model, st.groups, s.max_model_len, s))
    g = GiB
    if fits:
        message = (f"fits: {tokens:,} KV-cache tokens, {conc:.2f}x concurrency at {s.max_model_len:,} tokens "
                   f"per request")
        if s.kv_cache_memory_bytes is None:
            message += f" (estimated range {conc_lo:.2f}x–{conc_hi:.2f}x)"
    elif st.weights_bytes >= budget and s.kv_cache_memory_bytes is None:
        message = (f"does not fit: weights need {st.weights_bytes / g:.2f} GiB per GPU, the budget is "
                   f"{budget / g:.2f} GiB ({s.gpu_memory_utilization:g} × {total / g:.2f} GiB)")
    elif estimate == 0:
        used = budget - st.available.value
        message = (f"does not fit: needs {used / g:.2f} GiB per GPU before any KV cache "
                   f"(weights {st.weights_bytes / g:.2f} GiB), has {budget / g:.2f} GiB")
    else:
        message = (f"does not fit: one request of {s.max_model_len:,} tokens needs "
                   f"{per_request * st.bytes_per_block / g:.2f} GiB of KV cache, {st.available.value / g:.2f} GiB "
                   f"is available; the longest that fits is {estimate:,} tokens")
    return CapacityResult(
        model_id=model.id, gpu=name, gpu_memory_bytes=total, settings=s, budget_bytes=float(budget),
        stages=stages, binding_stage=binding, blocks_per_request=per_request, kv_cache_tokens=tokens,
        kv_cache_tokens_low=tokens_lo, kv_cache_tokens_high=tokens_hi, max_concurrency=conc,
        max_concurrency_low=conc_lo, max_concurrency_high=conc_hi, fits=fits, message=message,
        estimated_max_model_len=estimate,
        vllm_lines=tuple(_lines(st, s, v, total, budget, tokens, conc, failure)),
        notes=tuple(weight_notes + _notes(model, st, s, v, mla_layer)))


def _notes(model: ModelSpec, st: StageMemory, s: Settings, v: VllmVersion, mla_layer: float) -> list[str]:
    notes = []
    if mla_layer > 0:
        notes.append(f"weights include {st.num_layers * mla_layer / GiB:.2f} GiB per GPU of matrices vLLM {v.text}'s "
                     "MLA attention derives from the checkpoint at load (docs/vllm-memory.md §2.2)")
    if s.kv_cache_memory_bytes is None:
        notes.append("activation peak, non-torch memory and CUDA graphs are estimates (vLLM measures them); "
                     "pass --kv-cache-memory or paste your start-up log for exact numbers")
        if sampler_profile(v, model, s.quantization != "none", s.flashinfer_sampler) == "v1_flashinfer_if_installed":
            notes.append(f"vLLM {v.text} samples through FlashInfer when the flashinfer package is installed (the "
                         "vllm/vllm-openai images) and sorts the logits otherwise (pip); the estimate assumes the "
                         "sort: choose FlashInfer sampler 'on' (--flashinfer-sampler on) if your log says 'Using "
                         "FlashInfer for top-p & top-k sampling'")
        notes.extend(_vision_notes(model))
    if st.cudagraph.value > 0 and not st.cudagraph_subtracted:
        notes.append(f"vLLM {v.text} does not deduct CUDA graphs (~{st.cudagraph.value / GiB:.2f} GiB per GPU): "
                     "real usage exceeds gpu_memory_utilization by that much")
    if len(st.groups) > 1:
        notes.append(f"{len(st.groups)} KV-cache groups of {st.groups[0].num_layers} layers share each block")
    if v.engine == "V0" and s.pipeline_parallel_size > 1:
        notes.append("V0 splits the GPU blocks across the pipeline's virtual engines")
    return notes


def _vision_notes(model: ModelSpec) -> list[str]:
    """What the activation estimate assumes of a vision tower's profiling pass."""
    enc = model.vision_encoder
    if enc is None and model.encoder_params > 0:
        return ["the vision encoder's profiling pass is not modelled for this model family: vLLM's activation "
                "peak can be gigabytes higher (docs/vllm-memory.md §2.3)"]
    if enc is None:
        return []
    text = (f"the activation peak includes the vision encoder's profiling pass over dummy {enc.family} images "
            f"of {enc.patches_per_item:,} patches each")
    if enc.video is not None:
        text += ", or in the V1 engine the family's largest dummy video when it counts for more tokens"
    return [text + (f"; {enc.note}" if enc.note else "")]
