"""Analytic (roofline) performance model: decode step and prefill time from datasheet peaks.

Decode at batch ``B`` and context ``C`` (docs/performance-model.md §3.1)::

    bytes = dense weights + expert weights · (1 − (1 − k/E)^B)      (experts a batch touches)
            + B · KV bytes of a sequence of C tokens (windowed layers capped)
    FLOP  = B · (2 · active parameters + attention FLOP growing with C)
    time  = max(linear FLOP / (peak · eff_c), weight bytes / (bandwidth · eff_m))
            + max(attention FLOP / (peak_16 · eff_c), KV bytes / (bandwidth · eff_m))
            + TP all-reduce (2 per layer; ring 2(tp−1)/tp · bytes / link + latency) + fixed overhead

With pipeline parallelism every figure is per stage, the ``m`` micro-batches of a step take
``(m + pp − 1)`` stage times (bubble ``(pp − 1)/(pp − 1 + m)``) plus ``pp − 1`` hand-offs. With data-parallel
attention (``enable_dp_attention``, §3.7) each GPU reads attention's weights whole and the KV cache of its own
sequences, the all-reduces become an all-gather and a reduce-scatter, and the step waits for the busiest rank.
Everything broadcasts over NumPy arrays of ``tensor_parallel_size``, batch and context.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.memory.gguf import is_gguf
from calculators.memory.kv_cache import (
    check_tensor_parallel,
    dtype_bytes,
    kv_bytes_per_token_per_layer,
    layer_window,
    pp_layer_partition,
)
from calculators.memory.weights import (
    expert_rank_padding,
    resolve_quantization,
    shard,
    stage_linear_sums,
    step_read_bytes_per_gpu,
)
from calculators.perf.coefficients import DEFAULT_ENGINE, Profile, load_fit, resolved
from calculators.perf.model import StepTimeMixin
from calculators.specs.catalog import load_gpus
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.validation import fraction, positive, positive_int

_REF = load_fit().shipped.reference
#: Achievable share of dense peak FLOP/s in matmuls: fitted on the public corpus (docs/performance-model.md §4;
#: large bf16 products reach 60–90 %, ibid.). The reference value; GPU families have their own (§4).
COMPUTE_EFFICIENCY = _REF.compute
#: Achievable share of HBM bandwidth in decode's weight and KV reads, fitted likewise (NVIDIA aiconfigurator's
#: empirical 0.8 is the prior, docs/performance-model.md §4).
MEMORY_EFFICIENCY = _REF.memory
#: Fixed cost of one engine step (scheduling, sampling, graph launch) [s], fitted (docs/performance-model.md §4).
STEP_OVERHEAD_S = _REF.step_overhead_s
#: Latency of one tensor-parallel all-reduce of a small message [s] (NCCL/custom all-reduce, 5–30 µs), fitted.
ALLREDUCE_LATENCY_S = _REF.allreduce_latency_s
#: Latency of one pipeline-stage hand-off.
PP_HANDOFF_LATENCY_S = 20e-6
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192
#: The smallest efficiency or share accepted: no kernel runs at under 0.1 % of its peak (the fitted ones are above
#: 20 %), and a share of 1e-308 would overflow the step times to infinity.
MIN_EFFICIENCY = 1e-3
#: The largest fixed cost accepted [s per step, layer, sequence or request]: a minute, where the fitted ones are
#: microseconds to milliseconds; beyond it the figures are no longer a serving engine's.
MAX_COST_S = 60.0
#: The largest ``moe_small_batch_penalty`` accepted [×] (fitted: 0.08).
MAX_PENALTY = 1e3


def _efficiency(field: str, value: ArrayLike) -> None:
    """A share of a datasheet peak or of another efficiency: from :data:`MIN_EFFICIENCY` to 1."""
    if np.any(np.asarray(fraction(field, value)) < MIN_EFFICIENCY):
        raise InvalidInputError(field, value, f"a fraction from {MIN_EFFICIENCY:g} to 1 (a share of the peak)")


@dataclass(frozen=True)
class Efficiencies:
    """The roofline's tunable constants; the defaults are the fitted reference set of
    ``calculators/data/performance_fit.toml`` (docs/performance-model.md §4, each term's source there).

    ``compute``, ``memory``: shares of the datasheet's dense peak and HBM bandwidth (≤ 1).
    ``compute_dtype_share`` (≤ 1): the linear layers' matmuls in an 8- or 4-bit compute dtype reach
    ``compute`` × this share of their own (doubled or quadrupled) peak; 1 for 16-bit matmuls. Attention's matmuls
    run in the 16-bit activation dtype, at ``compute × attention_compute_share`` of its peak: a fused attention
    kernel (softmax between its two products, causal masking, short key blocks) reaches less of the peak than a
    large GEMM.
    ``step_overhead_s`` [s per step], ``layer_overhead_s`` [s per layer per step: launch gaps and small
    kernels between the matmuls], ``sequence_overhead_s`` [s per running sequence per step: sampling, input
    preparation, scheduling]: the engine's software costs. ``allreduce_latency_s`` [s per all-reduce];
    between GPUs joined by PCIe only, ``pcie_allreduce_latency_s`` [s per all-reduce] and ``pcie_link_efficiency``
    (≤ 1, the share of the link's bandwidth the all-reduce reaches) instead: NCCL there, not the custom all-reduce.
    ``attention_halving_context_tokens`` [tokens]: decode attention reads the KV cache at
    ``memory / (1 + context / this)`` of the bandwidth (paged attention is not at roofline, and its split-KV
    reduction grows with the context). ``moe_small_batch_penalty`` [×]: expert weights are read
    ``1 + penalty / (1 + tokens per expert)`` times slower than dense ones (grouped GEMMs with a handful of rows
    per expert), and at ``moe_expert_efficiency`` (≤ 1) of the dense reads' bandwidth at any count (grouped
    GEMMs over many small matrices); ``moe_layer_overhead_s`` [s per MoE layer per step]: routing, token
    permutation and the grouped GEMMs' launch and tail, which a dense layer does not have; ``moe_compute_share``
    (≤ 1): the experts' matmuls reach this share of the dense ones' compute efficiency (grouped GEMMs over
    experts split ``tp`` ways, each a narrow matrix). ``mla_attention``: the
    MLA decode kernel's efficiency relative to plain KV reads (≤ 1). ``request_overhead_s`` [s per request]: the
    latency each request spends outside the engine's steps (API server, tokenisation, streaming), added to its
    TTFT and end-to-end latency, no GPU time. ``prefill_layer_overhead_s`` and ``prefill_moe_layer_overhead_s``
    [s per layer and per MoE layer of a step that carries prompt tokens]: such a step runs beyond the token counts
    whose CUDA graphs the engine captured, so its kernels are launched one by one (the MoE layers' routing,
    sorting and grouped GEMMs most of all), where a decode step replays a graph.
    """

    compute: float = COMPUTE_EFFICIENCY
    memory: float = MEMORY_EFFICIENCY
    step_overhead_s: float = STEP_OVERHEAD_S
    allreduce_latency_s: float = ALLREDUCE_LATENCY_S
    pcie_allreduce_latency_s: float = _REF.pcie_allreduce_latency_s
    pcie_link_efficiency: float = _REF.pcie_link_efficiency
    layer_overhead_s: float = _REF.layer_overhead_s
    sequence_overhead_s: float = _REF.sequence_overhead_s
    attention_halving_context_tokens: float = _REF.attention_halving_context_tokens
    moe_small_batch_penalty: float = _REF.moe_small_batch_penalty
    moe_layer_overhead_s: float = _REF.moe_layer_overhead_s
    moe_expert_efficiency: float = _REF.moe_expert_efficiency
    mla_attention: float = _REF.mla_attention
    request_overhead_s: float = _REF.request_overhead_s
    prefill_layer_overhead_s: float = _REF.prefill_layer_overhead_s
    prefill_moe_layer_overhead_s: float = _REF.prefill_moe_layer_overhead_s
    moe_compute_share: float = _REF.moe_compute_share
    compute_dtype_share: float = 1.0
    attention_compute_share: float = _REF.attention_compute_share

    def __post_init__(self) -> None:
        _efficiency("compute_efficiency", self.compute)
        _efficiency("compute_dtype_share", self.compute_dtype_share)
        _efficiency("attention_compute_share", self.attention_compute_share)
        _efficiency("memory_efficiency", self.memory)
        _efficiency("mla_attention", self.mla_attention)
        _efficiency("moe_expert_efficiency", self.moe_expert_efficiency)
        _efficiency("moe_compute_share", self.moe_compute_share)
        _efficiency("pcie_link_efficiency", self.pcie_link_efficiency)
        if not np.all(np.asarray(self.attention_halving_context_tokens) > 0):  # inf: no fall with context
            raise InvalidInputError("attention_halving_context_tokens", self.attention_halving_context_tokens,
                                    "a positive number of tokens (inf for no fall with context)")
        for name in ("step_overhead_s", "allreduce_latency_s", "pcie_allreduce_latency_s", "layer_overhead_s",
                     "sequence_overhead_s", "moe_small_batch_penalty", "moe_layer_overhead_s", "request_overhead_s",
                     "prefill_layer_overhead_s", "prefill_moe_layer_overhead_s"):
            v = np.asarray(getattr(self, name), dtype=np.float64)
            top, what = (MAX_PENALTY, "a factor") if name == "moe_small_batch_penalty" else (MAX_COST_S, "seconds")
            if not np.all(np.isfinite(v) & (v >= 0) & (v <= top)):
                raise InvalidInputError(name, v.tolist(), f"a non-negative number of {what} up to {top:g} (a cost "
                                        "cannot be negative, and one beyond that stops every step)")

    def is_default(self) -> bool:
        """True when every field holds its default (scalar) value: "use the fitted set" (:meth:`fitted`)."""
        ref = Efficiencies.__dataclass_fields__
        return all(np.ndim(getattr(self, k)) == 0 and getattr(self, k) == f.default for k, f in ref.items())

    def is_shipped(self) -> bool:
        """True for the defaults and for every set the shipped fit gives a catalog GPU and engine: data the
        product ships, not a caller's own numbers."""
        return self.is_default() or tuple(getattr(self, n) for n in _FIELDS) in _shipped_sets()

    @classmethod
    def fitted(cls, gpu: GPUSpec, engine: str = DEFAULT_ENGINE, profile: Profile | None = None,
               compute_dtype: str = "bf16") -> Efficiencies:
        """The fitted set for ``gpu``'s family, ``engine`` and the matmuls' ``compute_dtype``
        (:func:`resolved`), from the shipped profile unless one is given."""
        return cls(**resolved(profile or load_fit().shipped, gpu.vendor, gpu.architecture, engine, compute_dtype))


_FIELDS = tuple(f.name for f in fields(Efficiencies))


@cache
def _shipped_sets() -> frozenset[tuple[float, ...]]:
    """The field values of every set :meth:`Efficiencies.fitted` gives a catalog GPU with a known engine and a
    compute dtype it has, from the shipped fit (as tuples: building and validating each set would cost 0.2 s)."""
    profile = load_fit().shipped
    engines = {DEFAULT_ENGINE, *profile.engine}
    return frozenset(tuple(values[n] for n in _FIELDS)
                     for g in load_gpus().values() for e in engines for d in g.peak_flop_per_s
                     for values in (resolved(profile, g.vendor, g.architecture, e, d),))


def compute_dtype(gpu: GPUSpec, quantization: str, model_dtype: str) -> str:
    """The tensor-core dtype the matmuls run in: fp8/int8 weights-and-activations use their own
    rate, FP4 formats use fp4 where the GPU has it, weight-only int4 and GGUF dequantise to fp16."""
    want = {"fp8": "fp8", "int8": "int8", "nvfp4": "fp4", "mxfp4": "fp4", "mxfp4-moe": "bf16",
            "awq": "fp16", "gptq": "fp16", "awq-int8": "fp16", "gptq-int8": "fp16"}.get(
        quantization, "fp16" if model_dtype == "float16" or is_gguf(quantization) else "bf16")
    for dtype in (want, "bf16", "fp16"):
        if dtype in gpu.peak_flop_per_s:
            return dtype
    raise InvalidInputError("gpu", gpu.id, "a GPU with a bf16 or fp16 tensor-core rate")


def model_compute_dtype(model: ModelSpec, gpu: GPUSpec, quantization: str | None = None, dtype: str = "auto") -> str:
    """:func:`compute_dtype` of ``model`` served on ``gpu``: its quantization (None: the checkpoint's own) and
    activation dtype (``"auto"``: the checkpoint's)."""
    activation = model.torch_dtype if dtype == "auto" else dtype
    return compute_dtype(gpu, resolve_quantization(model, quantization), activation)


def attention_dtype(model: ModelSpec, gpu: GPUSpec, dtype: str = "auto") -> str:
    """The tensor-core dtype of attention's matmuls (QKᵀ, PV): the 16-bit activation dtype, bf16 or fp16 for a
    float16 model (``dtype`` ``"auto"``: the checkpoint's), whatever the weights' format
    (docs/performance-model.md §3.6)."""
    return compute_dtype(gpu, "none", model.torch_dtype if dtype == "auto" else dtype)


@dataclass(frozen=True)
class Coefficients:
    """Per-GPU, per-stage terms of the step-time formula (arrays over ``tensor_parallel_size``)."""

    dense_weight_bytes: np.ndarray
    expert_weight_bytes: np.ndarray
    expert_hit_fraction: float
    kv_full_bytes_per_token: np.ndarray
    kv_window_bytes_per_token: np.ndarray
    window_tokens: float
    linear_flop_per_token: np.ndarray
    expert_flop_per_token: np.ndarray
    lm_head_flop_per_token: np.ndarray
    attn_full_flop_per_token_ctx: np.ndarray
    attn_window_flop_per_token_ctx: np.ndarray
    attn_prefill_full_flop_per_token_ctx: np.ndarray
    attn_prefill_window_flop_per_token_ctx: np.ndarray
    peak_flop_per_s: float
    attn_peak_flop_per_s: float
    bandwidth_bytes_per_s: float
    allreduce_bytes_per_token: float
    link_bytes_per_s: float
    layers_per_stage: int
    tp: np.ndarray
    pp: int
    mla: bool
    moe_layers_per_stage: float
    dp_attention: bool = False
    pcie_link: bool = False
    qk_norm_allreduce: bool = False


@dataclass(frozen=True)
class Roofline(StepTimeMixin):
    """The analytic performance model for one model on one GPU type.

    ``tensor_parallel_size`` may be an array; every method then broadcasts over it too. ``engine`` names the
    serving engine's generation (``"vllm-v1"``, ``"vllm-v0"``, ``"sglang"``, ``"trtllm"``…): with the default
    efficiencies the roofline uses the fitted set for its GPU's family and for that engine
    (:meth:`Efficiencies.fitted`; ``profile`` replaces the shipped fit), any other set is used as given.

    Two engine settings shape the serving metrics (:mod:`calculators.perf.serving`): ``max_num_batched_tokens``,
    the tokens one step may carry (vLLM's flag; SGLang's ``--chunked-prefill-size``), and
    ``scheduler_recv_interval``, the decode steps between the scheduler's polls for new requests (SGLang's
    ``--scheduler-recv-interval``, default 1: vLLM and SGLang's default look every step). ``enable_chunked_prefill``
    is vLLM's flag (None: the engine's default, always on in V1, off in V0): with it vLLM runs the running requests'
    decodes first and gives arriving prompts what the budget leaves (:attr:`decodes_first`).

    ``enable_dp_attention`` runs attention data-parallel across the ``tensor_parallel_size`` GPUs (SGLang's
    ``--enable-dp-attention`` with ``--dp`` equal to ``--tp``; TensorRT-LLM's ``enable_attention_dp``): each GPU
    holds attention's weights whole and the KV cache of its own share of the sequences, the rest of the layer
    keeps its tensor or expert split (docs/performance-model.md §3.7).
    """

    model: ModelSpec
    gpu: GPUSpec
    tensor_parallel_size: ArrayLike = 1
    pipeline_parallel_size: int = 1
    quantization: str | None = None
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    efficiencies: Efficiencies = field(default_factory=Efficiencies)
    micro_batches: int | None = None
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS
    scheduler_recv_interval: int = 1
    engine: str = DEFAULT_ENGINE
    enable_chunked_prefill: bool | None = None
    enable_dp_attention: bool = False
    profile: Profile | None = field(default=None, repr=False, compare=False)
    coefficients: Coefficients = field(init=False, repr=False)

    def __post_init__(self) -> None:
        positive_int("max_num_batched_tokens", self.max_num_batched_tokens, scalar=True)
        positive_int("scheduler_recv_interval", self.scheduler_recv_interval, scalar=True)
        if self.enable_dp_attention and not self.model.is_moe:
            raise InvalidInputError("enable_dp_attention", True, f"off for {self.model.id}: data-parallel attention "
                                    "splits a mixture-of-experts model's experts across its attention ranks, and "
                                    "this model has none")
        if self.efficiencies.is_default():
            object.__setattr__(self, "efficiencies",
                               Efficiencies.fitted(self.gpu, self.engine, self.profile, self.dtype_used))
        object.__setattr__(self, "coefficients", _coefficients(self))

    @property
    def dtype_used(self) -> str:
        return model_compute_dtype(self.model, self.gpu, self.quantization, self.dtype)

    @property
    def num_gpus(self) -> np.ndarray:
        return np.asarray(self.tensor_parallel_size) * self.pipeline_parallel_size

    @property
    def decodes_first(self) -> bool:
        """Whether arriving prompts get only the budget the running decodes leave: vLLM's chunked prefill (V1's
        scheduler always; V0's with ``enable_chunked_prefill``). SGLang and the others run prompts first."""
        if self.engine.startswith("vllm-v1"):
            return True
        return self.engine.startswith("vllm") and bool(self.enable_chunked_prefill)

    @property
    def request_overhead_s(self) -> float:
        """Latency each request spends outside the engine's steps [s] (docs/performance-model.md §4)."""
        return float(self.efficiencies.request_overhead_s)

    def decode_breakdown(self, batch_size: ArrayLike, context_tokens: ArrayLike) -> dict[str, np.ndarray]:
        """Decode step at ``batch_size`` sequences of ``context_tokens`` each, term by term [s]."""
        b = positive("batch_size", batch_size)
        ctx = positive("context_tokens", context_tokens)
        return decode_terms(self.coefficients, self.efficiencies, b, ctx, self._micro_batches())

    def decode_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike) -> np.ndarray:
        """Time of one decode step of the whole batch [s]."""
        return self.decode_breakdown(batch_size, context_tokens)["step_s"]

    def mixed_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike, prefill_tokens: ArrayLike,
                          prompt_tokens: ArrayLike) -> np.ndarray:
        """One step of ``batch_size`` decodes (0: a prefill-only step) fused with ``prefill_tokens`` prompt tokens
        [s] (:func:`mixed_terms`)."""
        b = np.asarray(batch_size, dtype=np.float64)
        if not np.all(np.isfinite(b) & (b >= 0)):
            raise InvalidInputError("batch_size", b.tolist(), "a number of sequences ≥ 0")
        ctx = positive("context_tokens", context_tokens)
        return mixed_terms(self.coefficients, self.efficiencies, b, ctx, prefill_tokens, prompt_tokens,
                           self._micro_batches())["step_s"]

    def prefill_time_s(self, prompt_tokens: ArrayLike, num_prompts: ArrayLike = 1) -> np.ndarray:
        """Time to prefill ``num_prompts`` prompts of ``prompt_tokens`` each [s], in chunks of
        ``max_num_batched_tokens``, with the causal attention term ``∝ P²/2``."""
        p = positive("prompt_tokens", prompt_tokens)
        n = positive("num_prompts", num_prompts)
        return prefill_terms(self.coefficients, self.efficiencies, p, n, self.max_num_batched_tokens)["time_s"]

    def _micro_batches(self) -> int:
        return int(positive_int("micro_batches", self.micro_batches or self.pipeline_parallel_size, scalar=True))


def _coefficients(r: Roofline) -> Coefficients:
    m, g = r.model, r.gpu
    tp = check_tensor_parallel(m, r.tensor_parallel_size).astype(np.float64)
    pp = int(positive_int("pipeline_parallel_size", r.pipeline_parallel_size, scalar=True))
    q = resolve_quantization(m, r.quantization)
    s = dtype_bytes(m.torch_dtype if r.dtype == "auto" else r.dtype)
    if np.any(tp > 1) and g.scale_up_bytes_per_s_per_direction <= 0:
        raise InvalidInputError("tensor_parallel_size", r.tensor_parallel_size, f"1: {g.id} has no scale-up link")
    if np.any(tp > g.scale_up_domain):  # the all-reduce term prices the scale-up link, not a network between nodes
        raise InvalidInputError("tensor_parallel_size", r.tensor_parallel_size,
                                f"at most {g.scale_up_domain}, the GPUs of one {g.id} scale-up domain: tensor "
                                "parallelism beyond it runs over the scale-out network, which the model does not "
                                "price (use pipeline parallelism across nodes)")
    layers = max(pp_layer_partition(m.num_hidden_layers, pp))
    frac = layers / m.num_hidden_layers
    sums = stage_linear_sums(m, q, s, 0, m.num_hidden_layers)
    experts = sums["experts"][0] * shard(m, "experts", tp) * frac * expert_rank_padding(m, q, tp, None)
    dp = bool(r.enable_dp_attention)
    total = step_read_bytes_per_gpu(m, tensor_parallel_size=tp, pipeline_parallel_size=pp, quantization=q,
                                    dtype=r.dtype, dp_attention=dp)
    hit = m.num_experts_per_tok / m.num_experts if m.is_moe else 0.0
    expert_params = sums["experts"][1] * hit / tp  # the routed experts' parameters a token runs through
    params = sum(sums[k][1] * shard(m, k, tp) for k in ("tp", "attn", "kv", "global_kv", "none")) + expert_params
    lm_head = 2 * m.hidden_size * m.vocab_size / tp
    windowed = [t for t in m.layer_types if t != "full_attention"]
    n_win = len(windowed) * frac
    n_full = m.num_hidden_layers * frac - n_win
    window_kind = windowed[0] if windowed else "full_attention"
    # every layer reads the cache of its kind, a KV-shared one the cache of the layer it shares (Gemma 3n/4)
    # with data-parallel attention a GPU keeps the whole cache of 1/tp of the sequences: per replica token, 1/tp of it
    kv_full, kv_window = (kv_bytes_per_token_per_layer(m, tensor_parallel_size=1 if dp else tp,
                                                       kv_cache_dtype=r.kv_cache_dtype, dtype=r.dtype,
                                                       layer_type=k).astype(np.float64) / (tp if dp else 1)
                          for k in ("full_attention", window_kind))
    heads = m.num_attention_heads / tp
    attn_full, attn_window = (4 * heads * m.attention_dims(k)[1] for k in ("full_attention", window_kind))
    prefill_full, prefill_window = attn_full, attn_window
    if m.is_mla:  # decode attends in the latent space, prefill decompresses K and V and attends as MHA
        mla = m.mla_dims
        attn_full = attn_window = 2 * heads * (2 * mla.kv_lora_rank + mla.qk_rope_head_dim)
        prefill_full = prefill_window = 2 * heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim)
    return Coefficients(
        dense_weight_bytes=total - experts, expert_weight_bytes=experts, expert_hit_fraction=hit,
        kv_full_bytes_per_token=kv_full * n_full, kv_window_bytes_per_token=kv_window * n_win,
        window_tokens=layer_window(m, windowed[0]) if windowed else np.inf,
        linear_flop_per_token=2 * params * frac + lm_head / pp, lm_head_flop_per_token=lm_head / pp,
        expert_flop_per_token=2 * expert_params * frac,
        attn_full_flop_per_token_ctx=attn_full * n_full, attn_window_flop_per_token_ctx=attn_window * n_win,
        attn_prefill_full_flop_per_token_ctx=prefill_full * n_full,
        attn_prefill_window_flop_per_token_ctx=prefill_window * n_win,
        peak_flop_per_s=g.peak_flop_per_s[r.dtype_used],
        attn_peak_flop_per_s=g.peak_flop_per_s[attention_dtype(m, g, r.dtype)],
        bandwidth_bytes_per_s=g.memory_bandwidth_bytes_per_s,
        allreduce_bytes_per_token=m.hidden_size * s, link_bytes_per_s=g.scale_up_bytes_per_s_per_direction,
        layers_per_stage=layers, tp=tp, pp=pp, mla=m.is_mla, moe_layers_per_stage=len(m.moe_layers) * frac,
        dp_attention=dp, pcie_link=g.scale_up_over_pcie, qk_norm_allreduce=m.qk_norm_over_heads and not dp)


def _linear_compute_s(c: Coefficients, e: Efficiencies, linear_flop: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """The linear layers' matmuls of a pass of ``tokens`` tokens [s]: at the compute dtype's peak (8- or 4-bit for
    quantised weights and activations) and ``compute × compute_dtype_share`` of it, the experts' share of them at
    ``moe_compute_share`` of that efficiency (docs/performance-model.md §3.1, §3.6)."""
    experts = tokens * c.expert_flop_per_token * (1 / e.moe_compute_share - 1)
    return (linear_flop + experts) / c.peak_flop_per_s / (e.compute * e.compute_dtype_share)


def _attention_compute_s(c: Coefficients, e: Efficiencies, attention_flop: np.ndarray) -> np.ndarray:
    """Attention's matmuls [s], at the 16-bit activation dtype's peak (queries, keys and values are not quantised
    with the weights) and ``compute × attention_compute_share`` of it (docs/performance-model.md §3.1, §4)."""
    return attention_flop / c.attn_peak_flop_per_s / (e.compute * e.attention_compute_share)


def _kernels_s(linear_s: np.ndarray, weights_s: np.ndarray, attention_s: np.ndarray,
               kv_s: np.ndarray) -> np.ndarray:
    """A pass's matmul time [s]: the linear layers' kernels at the slower of their matmuls and their weight reads,
    then attention's at the slower of its matmuls and its KV traffic. The two run one after the other, so a
    compute-bound linear layer does not hide a memory-bound attention kernel (docs/performance-model.md §3.1)."""
    return np.maximum(linear_s, weights_s) + np.maximum(attention_s, kv_s)


QK_NORM_BYTES_PER_TOKEN = 8
"""Bytes per token of the all-reduce of an attention that RMS-normalises q and k over all heads: the token's sums of
squares of q and of k, two fp32 values (vLLM's ``MiniMaxText01RMSNormTP.forward_qk``)."""


def _allreduce_s(c: Coefficients, e: Efficiencies, tokens: np.ndarray) -> np.ndarray:
    """Two ring all-reduces per layer: ``2(tp−1)/tp · bytes / link + latency`` each; between GPUs joined by PCIe
    only, NCCL's at ``pcie_link_efficiency`` of the link and ``pcie_allreduce_latency_s`` each (§3.4). With
    data-parallel attention the two are an all-gather of the replica's tokens before the MLP and a reduce-scatter
    after it, each half an all-reduce's bytes (docs/performance-model.md §3.7). An attention that normalises q and
    k over all heads (``qk_norm_allreduce``, MiniMax-M2) adds a third of :data:`QK_NORM_BYTES_PER_TOKEN` (§3.4)."""
    share = np.where(c.pcie_link, e.pcie_link_efficiency, 1.0)
    latency = np.where(c.pcie_link, e.pcie_allreduce_latency_s, e.allreduce_latency_s)
    link = np.where(np.asarray(c.link_bytes_per_s) > 0, c.link_bytes_per_s * share, np.inf)
    volume = np.where(c.dp_attention, 0.5, 1.0)
    ring = 2 * (c.tp - 1) / c.tp * tokens / link
    one = volume * ring * c.allreduce_bytes_per_token + latency
    norm = np.where(c.qk_norm_allreduce, ring * QK_NORM_BYTES_PER_TOKEN + latency, 0.0)
    return np.where(c.tp > 1, c.layers_per_stage * (2 * one + norm), 0.0)


def _layers_s(c: Coefficients, e: Efficiencies) -> np.ndarray:
    """Per-layer fixed costs of one pass over a stage [s]: every layer's, plus the MoE layers' own."""
    return np.asarray(c.layers_per_stage * e.layer_overhead_s + c.moe_layers_per_stage * e.moe_layer_overhead_s)


def _eager_prefill_s(c: Coefficients, e: Efficiencies, prompt_tokens: np.ndarray) -> np.ndarray:
    """Launch costs of a pass over a stage that carries prompt tokens and so runs outside the captured graphs [s]:
    per layer and per MoE layer; 0 for a step without prompt tokens (docs/performance-model.md §4)."""
    cost = c.layers_per_stage * e.prefill_layer_overhead_s + c.moe_layers_per_stage * e.prefill_moe_layer_overhead_s
    return np.where(np.asarray(prompt_tokens) > 0, cost, 0.0)


def _software_s(c: Coefficients, e: Efficiencies, sequences: np.ndarray) -> np.ndarray:
    """The engine's fixed costs of one step [s]: per step, per running sequence (docs/performance-model.md §4).
    With data-parallel attention each of the ``tp`` attention ranks schedules its own share of the sequences, side
    by side."""
    s = np.asarray(sequences, dtype=np.float64)
    busiest = np.where(c.dp_attention, np.maximum(s / c.tp, np.minimum(s, 1.0)), s)
    return e.step_overhead_s + busiest * e.sequence_overhead_s


def _attention_imbalance(c: Coefficients, sequences: ArrayLike) -> np.ndarray:
    """How many times its even share of a pass's attention work the busiest GPU does [×]: 1 under tensor
    parallelism (every GPU runs its heads of every sequence); with data-parallel attention ``tp / min(n, tp)`` for
    ``n`` decoding sequences, or prompts prefilled together, as a rank runs whole sequences and the step waits for
    the busiest (one prompt's prefill attention runs on one GPU). Prompts that join decode steps are taken as
    spread over the ranks, as the engines' request dispatch does (docs/performance-model.md §3.7)."""
    n = np.asarray(sequences, dtype=np.float64)
    return np.where(c.dp_attention, c.tp / np.clip(n, 1.0, c.tp), 1.0)


def _weights_s(c: Coefficients, e: Efficiencies, tokens: np.ndarray) -> np.ndarray:
    """Reading the weights a step of ``tokens`` tokens touches [s]: dense ones at the memory efficiency, the
    experts ``E·(1 − (1 − k/E)^T)`` of them touched, at ``moe_expert_efficiency`` of that bandwidth and slowed
    ``1 + penalty / (1 + T·k/E)`` at few tokens per expert (grouped GEMMs of a few rows,
    docs/performance-model.md §4)."""
    touched = 1 - (1 - c.expert_hit_fraction) ** tokens
    slow = expert_read_slowdown(c, e, tokens)
    return (c.dense_weight_bytes + c.expert_weight_bytes * touched * slow) / (c.bandwidth_bytes_per_s * e.memory)


def expert_read_slowdown(c: Coefficients, e: Efficiencies, tokens: ArrayLike) -> np.ndarray:
    """How many times longer expert weights take to read than dense ones in a step of ``tokens`` tokens [×]:
    ``(1 + penalty / (1 + T·k/E)) / moe_expert_efficiency`` (docs/performance-model.md §4)."""
    t = np.asarray(tokens, dtype=np.float64)
    return (1 + e.moe_small_batch_penalty / (1 + t * c.expert_hit_fraction)) / e.moe_expert_efficiency


def attention_read_efficiency(c: Coefficients, e: Efficiencies, ctx: ArrayLike) -> np.ndarray:
    """Share of HBM bandwidth decode attention reads the KV cache at, at ``ctx`` tokens of context:
    ``memory / (1 + ctx / attention_halving_context_tokens)``, times ``mla_attention`` for MLA (§4)."""
    ctx = np.asarray(ctx, dtype=np.float64)
    return e.memory * np.where(c.mla, e.mla_attention, 1.0) / (1 + ctx / e.attention_halving_context_tokens)


def _attention_read_s(c: Coefficients, e: Efficiencies, kv_bytes: np.ndarray, ctx: np.ndarray) -> np.ndarray:
    """Decode attention reading ``kv_bytes`` of KV cache at ``ctx`` tokens of context [s]
    (:func:`attention_read_efficiency`)."""
    return kv_bytes / (c.bandwidth_bytes_per_s * attention_read_efficiency(c, e, ctx))


def _logit_rows(prompt_tokens: np.ndarray, rows: ArrayLike) -> np.ndarray:
    """Rows of prompt tokens the LM head runs on: one per prompt (or prompt chunk) in the pass, ``rows``, at
    most the prompt tokens and at least one where there are any. Engines take the logits of each scheduled
    request's last token only (vLLM V1 ``logits_indices = query_start_loc[1:] - 1`` in
    ``vllm/v1/worker/gpu_model_runner.py``, https://github.com/vllm-project/vllm/tree/v0.10.2), so the other
    prompt tokens skip the LM head's ``2 · hidden · vocab / tp`` FLOP (docs/performance-model.md §3.2)."""
    t = np.asarray(prompt_tokens, dtype=np.float64)
    return np.where(t > 0, np.clip(np.asarray(rows, dtype=np.float64), 1.0, np.maximum(t, 1.0)), 0.0)


def decode_terms(c: Coefficients, e: Efficiencies, batch: ArrayLike, ctx: ArrayLike,
                 micro_batches: int) -> dict[str, np.ndarray]:
    """The decode step split into its terms [s] (see the module docstring).

    ``linear_s``, ``weights_s``, ``attention_s`` and ``kv_s`` are one micro-batch's on one stage: the linear
    layers' matmuls and weight reads, attention's matmuls and KV reads. ``kernels_s`` is their
    ``max(linear, weights) + max(attention, KV)`` over the ``m + pp − 1`` stage slots of a step, so
    ``step_s = kernels_s + allreduce_s + overhead_s + handoff_s``. ``compute_s`` and ``memory_s`` are the
    micro-batch's totals (``memory_bound`` compares them)."""
    b = np.asarray(batch, dtype=np.float64) / micro_batches
    ctx = np.asarray(ctx, dtype=np.float64)
    win = np.minimum(ctx, c.window_tokens)
    touched = 1 - (1 - c.expert_hit_fraction) ** b
    kv_read = b * (c.kv_full_bytes_per_token * ctx + c.kv_window_bytes_per_token * win)
    mem_bytes = c.dense_weight_bytes + c.expert_weight_bytes * touched + kv_read
    attn_flop = b * (c.attn_full_flop_per_token_ctx * ctx + c.attn_window_flop_per_token_ctx * win)
    flop = b * c.linear_flop_per_token + attn_flop
    linear_s = _linear_compute_s(c, e, b * c.linear_flop_per_token, b)
    busiest = _attention_imbalance(c, b)
    attention_s = _attention_compute_s(c, e, attn_flop) * busiest
    weights_s, kv_s = _weights_s(c, e, b), _attention_read_s(c, e, kv_read, ctx) * busiest
    compute_s, memory_s = linear_s + attention_s, weights_s + kv_s
    comm_s = _allreduce_s(c, e, b) + _layers_s(c, e)
    stages = micro_batches + c.pp - 1
    handoff = (c.pp - 1) * (b * c.allreduce_bytes_per_token / np.maximum(c.link_bytes_per_s, 1.0)
                            + PP_HANDOFF_LATENCY_S)
    overhead = _software_s(c, e, b * micro_batches)
    kernels = stages * _kernels_s(linear_s, weights_s, attention_s, kv_s)
    step = kernels + stages * comm_s + handoff + overhead
    return {"compute_s": compute_s, "memory_s": memory_s, "linear_s": linear_s, "weights_s": weights_s,
            "attention_s": attention_s, "kv_s": kv_s, "kernels_s": kernels,
            "allreduce_s": _allreduce_s(c, e, b) * stages, "handoff_s": handoff + 0 * step,
            "overhead_s": overhead + stages * _layers_s(c, e) + 0 * step, "step_s": step,
            "flop": flop, "bytes": mem_bytes,
            "bubble_fraction": (c.pp - 1) / stages + 0 * step,
            "memory_bound": memory_s >= compute_s}


def mixed_terms(c: Coefficients, e: Efficiencies, batch: ArrayLike, ctx: ArrayLike, prefill_tokens: ArrayLike,
                prompt_tokens: ArrayLike, micro_batches: int) -> dict[str, np.ndarray]:
    """One chunked-prefill step of vLLM V1: ``batch`` decodes at ``ctx`` fused with ``prefill_tokens`` tokens of
    prompts of ``prompt_tokens`` [s].

    The weights are read once for all ``B + P`` tokens; the prompt tokens add their linear FLOP (the LM head's
    on one row per prompt only, :func:`_logit_rows`), attention to half their prompt on average (``∝ P · I/2``)
    and the KV they write (the tiled attention kernel reads a chunk's keys and values once, not once per query
    token), as :func:`prefill_terms` counts them. With ``P = 0`` this is :func:`decode_terms` exactly
    (docs/performance-model.md §2).
    """
    b = np.asarray(batch, dtype=np.float64) / micro_batches
    p = np.asarray(prefill_tokens, dtype=np.float64) / micro_batches
    ctx = np.asarray(ctx, dtype=np.float64)
    half = np.asarray(prompt_tokens, dtype=np.float64) / 2
    win, half_win = np.minimum(ctx, c.window_tokens), np.minimum(half, c.window_tokens)
    written = (c.kv_full_bytes_per_token + c.kv_window_bytes_per_token) * p  # prompt KV written, as in prefill
    kv_read = b * (c.kv_full_bytes_per_token * ctx + c.kv_window_bytes_per_token * win)
    # the decodes' attention waits for the busiest rank; arriving prompts are spread over the ranks (§3.7)
    busiest = _attention_imbalance(c, b)
    attn_flop = (busiest * b * (c.attn_full_flop_per_token_ctx * ctx + c.attn_window_flop_per_token_ctx * win)
                 + p * (c.attn_prefill_full_flop_per_token_ctx * half
                        + c.attn_prefill_window_flop_per_token_ctx * half_win))
    prompts = p * micro_batches / np.maximum(2 * half, 1.0)
    skip_head = p - _logit_rows(p, prompts / micro_batches)  # prompt tokens whose logits are not taken
    linear_flop = (b + p) * c.linear_flop_per_token - skip_head * c.lm_head_flop_per_token
    linear_s = _linear_compute_s(c, e, linear_flop, b + p)
    attention_s = _attention_compute_s(c, e, attn_flop)
    weights_s = _weights_s(c, e, b + p)
    kv_s = (written / (c.bandwidth_bytes_per_s * e.memory)
            + _attention_read_s(c, e, kv_read, ctx) * busiest)
    compute_s, memory_s = linear_s + attention_s, weights_s + kv_s
    stages = micro_batches + c.pp - 1
    handoff = (c.pp - 1) * ((b + p) * c.allreduce_bytes_per_token / np.maximum(c.link_bytes_per_s, 1.0)
                            + PP_HANDOFF_LATENCY_S)
    comm_s = _allreduce_s(c, e, b + p) + _layers_s(c, e) + _eager_prefill_s(c, e, p)
    software = _software_s(c, e, b * micro_batches + prompts)
    step = stages * (_kernels_s(linear_s, weights_s, attention_s, kv_s) + comm_s) + handoff + software
    return {"compute_s": compute_s, "memory_s": memory_s, "step_s": step, "memory_bound": memory_s >= compute_s}


def prefill_terms(c: Coefficients, e: Efficiencies, prompt: ArrayLike, prompts: ArrayLike,
                  max_num_batched_tokens: int) -> dict[str, np.ndarray]:
    """Prefill of ``prompts`` prompts of ``prompt`` tokens, chunked by the token budget [s]; the LM head runs on
    one row per prompt and chunk (:func:`_logit_rows`). ``kernels_s`` is the matmuls' and memory traffic's time
    on the ``pp`` stages; ``time_s`` adds the chunks' all-reduces and per-chunk costs and the hand-offs."""
    p = np.asarray(prompt, dtype=np.float64)
    n = np.asarray(prompts, dtype=np.float64)
    tokens = n * p
    chunks = np.ceil(tokens / max_num_batched_tokens)
    w = np.minimum(p, c.window_tokens)
    causal_full = p * (p + 1) / 2
    causal_win = w * (w + 1) / 2 + (p - w) * w
    attn_flop = n * (c.attn_prefill_full_flop_per_token_ctx * causal_full
                     + c.attn_prefill_window_flop_per_token_ctx * causal_win)
    written = tokens * (c.kv_full_bytes_per_token + c.kv_window_bytes_per_token)
    skip_head = tokens - _logit_rows(tokens, n + chunks - 1)  # a chunk boundary splits at most one prompt
    linear_flop = tokens * c.linear_flop_per_token - skip_head * c.lm_head_flop_per_token
    linear_s = _linear_compute_s(c, e, linear_flop, tokens)
    attention_s = _attention_compute_s(c, e, attn_flop) * _attention_imbalance(c, n / chunks)
    weights_s, kv_s = chunks * _weights_s(c, e, tokens / chunks), written / (c.bandwidth_bytes_per_s * e.memory)
    compute_s, memory_s = linear_s + attention_s, weights_s + kv_s
    per_chunk = (_allreduce_s(c, e, tokens / chunks) + _layers_s(c, e) + _eager_prefill_s(c, e, tokens)
                 + _software_s(c, e, n / chunks))
    handoff = (c.pp - 1) * (tokens * c.allreduce_bytes_per_token / np.maximum(c.link_bytes_per_s, 1.0)
                            + PP_HANDOFF_LATENCY_S)
    kernels = c.pp * _kernels_s(linear_s, weights_s, attention_s, kv_s)
    time = kernels + chunks * per_chunk * c.pp + handoff
    return {"compute_s": compute_s * c.pp, "memory_s": memory_s * c.pp, "kernels_s": kernels, "time_s": time,
            "flop": linear_flop + attn_flop, "memory_bound": memory_s >= compute_s}


def ridge_point(gpu: GPUSpec, dtype: str = "bf16") -> float:
    """Arithmetic intensity where a kernel turns compute-bound [FLOP/byte] = peak ÷ bandwidth.

    A100-80GB bf16: 312 TFLOP/s ÷ 2.039 TB/s ≈ 153; H100 SXM: 989.4 ÷ 3.35 ≈ 295.
    """
    if dtype not in gpu.peak_flop_per_s:
        raise InvalidInputError("dtype", dtype, f"one of {', '.join(gpu.peak_flop_per_s)} for {gpu.id}")
    return gpu.peak_flop_per_s[dtype] / gpu.memory_bandwidth_bytes_per_s


def crossover_batch_size(r: Roofline, context_tokens: ArrayLike, *, max_batch: float = 1e7) -> np.ndarray:
    """Smallest decode batch at which compute time reaches memory time, per context [sequences].

    ``inf`` where KV reads keep decode memory-bound at every batch size (each extra sequence adds
    more bytes than FLOP relative to the ridge), ``1`` where even one sequence is compute-bound.
    Vectorised bisection in log space (60 halvings).
    """
    ctx = np.asarray(positive("context_tokens", context_tokens), dtype=np.float64)
    c, e = r.coefficients, r.efficiencies

    def gap(b: np.ndarray) -> np.ndarray:
        t = decode_terms(c, e, b, ctx, 1)
        return t["compute_s"] - t["memory_s"]

    shape = np.broadcast_shapes(ctx.shape, c.tp.shape)
    lo, hi = np.zeros(shape), np.full(shape, np.log(max_batch))
    never, always = gap(np.exp(hi)) < 0, gap(np.ones(shape)) >= 0
    for _ in range(60):
        mid = (lo + hi) / 2
        below = gap(np.exp(mid)) < 0
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(never, np.inf, np.where(always, 1.0, np.exp(hi)))
