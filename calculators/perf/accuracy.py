"""How close the performance model comes to the public measurement corpus, scored without flattering it.

The method (docs/performance-model.md §11):

1. **Comparable rows** (:func:`screen`, :func:`comparable_rows`). A corpus row is kept when the product can
   state the same run: a load it models (below), neither prefill/decode disaggregated nor speculative decoding,
   nor a workload whose prompts share a cached prefix, a model in the catalog (its id or alias, else the
   checkpoint it re-quantises), a GPU with a catalog id, ``tp``, ``pp``, ``input_len`` and ``output_len``
   stated (compared at the lengths the run served, :func:`_served_lengths`; attention data-parallel across the
   tensor-parallel GPUs where the row says so, :func:`dp_attention`), a weight precision that maps to a
   product format, a KV-cache dtype the product knows, one replica of ``tp × pp`` GPUs (or replicas, below), at
   least one metric the load can state, and a configuration the roofline accepts (for a ceiling or an open-loop run,
   with a KV pool). Every other row goes to the ``skipped`` table with the first reason that applies.
   The loads and what each can state:

   - ``concurrency`` (closed loop, ``N`` requests in flight) and ``static_batch`` (``B`` prompts at once):
     TPOT, TTFT and throughput. An ``offline_max`` run whose ``batch_size`` equals its ``num_prompts`` (all
     prompts sent at once, e.g. dstack's) is such a static batch.
   - ``request_rate`` (open loop, Poisson arrivals at ``λ``): TPOT always; TTFT only when the run kept up
     (served ≥ :data:`SATURATED` of the offered requests/s — else its TTFT is a queue over a finite run);
     throughput only when it did not (then it is the replica's capacity; else it is ``λ·O``, which says
     nothing of the engine).
   - ``offline_max`` (a throughput ceiling): throughput only, at :func:`ceiling_batch` requests in flight
     (the fewest of what the KV pool holds, the engine's default largest batch and the prompts sent).
   - **Replicas**: a closed-loop row on ``gpu_count`` = k × tp × pp GPUs is one replica at its concurrency
     when its own figures say each replica ran it (:func:`replicated`, Little's law); else it is skipped
     (the corpus does not say how the load was spread).
2. **Predictions** (:func:`predict`): one :class:`~calculators.perf.roofline.Roofline` per distinct
   (model, GPU, tp, pp, quantization, KV dtype, engine generation) with the shipped fitted coefficients of
   its GPU family and engine (``performance_fit.toml``, :mod:`calculators.perf.coefficients`), then
   the serving module's metrics over all of that configuration's rows at once, each at its load (closed loop
   at ``concurrency`` or the ceiling's batch, static batch at ``batch_size``, open loop at ``request_rate``
   with at most the ceiling's batch in flight, or the client's ``concurrency`` cap where the row states a
   smaller one). TPOT [s] is compared with the measured TPOT median, else ITL median, else TPOT mean (then
   LMDeploy's per-token latency p50, then a TPOT whose statistic the source does not state): a median over
   every gap between tokens (ITL, LMDeploy's per-token p50) with the model's median step, the others with its
   mean step. TTFT [s] is compared with the TTFT median, else mean, else unstated; output tokens/s per GPU
   with the per-GPU metric, else the whole-deployment figure ÷ ``gpu_count``, else (every request of the
   stated lengths) the total tokens/s × O/(I+O) ÷ ``gpu_count``. The key used
   is kept in ``measured_key``. A static batch's TTFT is the prefill of all its prompts together. A closed-loop
   run that states its prompts and length draw is charged its drain: its throughput is the steady state's times
   the share of its wall time its slots were busy (:func:`_busy_shares`).
3. **Errors**: signed relative error ``predicted / measured − 1`` (a fraction; −0.25 = 25 % low) and the
   log-ratio ``ln(measured / predicted)``. :func:`error_table` summarises them per metric × GPU family ×
   source: n, median |error|, median signed error (the bias) and p90 |error|, with ``"all"`` rows;
   :func:`per_source_view` counts each source once (the median over sources of each source's median).
4. **Leave one source out** (:func:`leave_one_source_out`): each source S is predicted by the coefficients
   refitted on every *other* source (``benchmarks/fit_performance.py`` stores one profile per left-out source
   beside the shipped one); S's rows never shape the numbers that predict S. For a caller's own efficiencies
   (nothing to refit) a multiplicative correction ``exp(c)`` is fitted on the other sources instead: ``c`` =
   median log-ratio of their rows of the same (GPU family, engine), else of the same GPU family, else of all.
   The held-out log-ratios give the 10 % and 90 % quantiles of an 80 % band ``corrected × [e^q10, e^q90]``;
   its coverage is measured on each source with quantiles from the other sources' held-out residuals.
5. **Leave one GPU family out** (:func:`family_holdout_table`; ``loso_rows(..., by="gpu_family")``): each family's
   rows predicted by the coefficients refitted without that family (``benchmarks/family_holdout.py --write``
   stores them), which have no entry for it, so its GPUs take the reference set — how a GPU of a family without
   runs (T4, MI250X, Gaudi, TPU) is priced. Its residuals give the bands such a GPU is shown with.

Pure: pandas and NumPy, no Streamlit or plotly. Units: seconds and tokens/s per GPU inside, errors as fractions.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

import numpy as np
import pandas as pd

from calculators.errors import InvalidInputError
from calculators.perf import serving
from calculators.perf.bands import TAIL_LEVELS, band_edges, fit_band, held_out_coverage, seen_family, share_inside
from calculators.perf.benchmark_drain import busy_share
from calculators.perf.coefficients import (
    DEFAULT_ENGINE,
    Profile,
    engine_generation,
    engine_release,
    load_fit,
)
from calculators.perf.measurements import GPUS, measurements_frame
from calculators.perf.roofline import DEFAULT_MAX_NUM_BATCHED_TOKENS, Efficiencies, Roofline, model_compute_dtype
from calculators.specs.catalog import get_gpu, get_model, load_gpus, load_models
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.vllm.capacity import CapacityResult
from calculators.vllm.concurrency import batch_limit, replica_capacity, running_footprint_tokens
from calculators.vllm.versions import serve_defaults

METRICS = ("tpot", "ttft", "throughput")
"""The compared quantities: time per output token, time to first token, output tokens/s per GPU."""
UNITS = {"tpot": "s", "ttft": "s", "throughput": "tokens/s per GPU"}
LABELS = {"tpot": "TPOT", "ttft": "TTFT", "throughput": "output tokens/s per GPU"}
MEASURED_KEYS: dict[str, tuple[str, ...]] = {
    "tpot": ("tpot_median_ms", "itl_mean_ms", "itl_median_ms", "tpot_mean_ms", "token_latency_p50_ms", "tpot_ms"),
    "ttft": ("ttft_median_ms", "ttft_mean_ms", "ttft_ms"),
}
"""Measured latency keys [ms] in order of preference: the first one a row carries is used. A mean inter-token
latency comes before the median: both are over every gap between tokens, but the mean is the total decode time
÷ tokens whatever the arrivals, while the median depends on how arriving prompts bunch into steps (requests of
one output length that start together finish together, so their successors' prompts land in a few steps and the
median gap is the bare decode step), which a steady state with Poisson arrivals does not state."""
ITL_KEYS = ("itl_median_ms", "token_latency_p50_ms")
"""TPOT keys that are medians over every gap between tokens, not over requests: compared with the median step
(``itl_median_s``), in which the steps that carry a prompt are the tail, not with the mean step (TPOT)."""
THROUGHPUT_PER_GPU, THROUGHPUT_TOTAL = "output_tok_s_per_gpu", "output_tok_s"
TARGETS = {"tpot": 0.15, "ttft": 0.25, "throughput": 0.15}
"""Target median |error| per metric (a fraction)."""
BIAS_TARGET = 0.15
"""No GPU family's median signed error beyond ± this fraction."""
FAMILIES = tuple(dict.fromkeys(family for family, _ in GPUS.values()))
ALL = "all"
"""The label of a summary row over every GPU family or every source."""
LOADS = ("concurrency", "static_batch", "request_rate", "offline_max")
ENGINE_MAX_BATCH = {"vllm-v0": 256, "trtllm": 2048, "trtllm-old": 2048, "lmdeploy": 256}
"""Default largest batch [sequences] of each engine generation but vLLM V1's (:func:`scheduler_limits`): V0's
``max_num_seqs`` (256 in every release, ``SchedulerConfig``), TensorRT-LLM's ``max_batch_size``
(2048, https://nvidia.github.io/TensorRT-LLM/commands/trtllm-build.html), LMDeploy's ``max_batch_size`` (256 on
datacentre GPUs). SGLang and ATOM have none: their KV pool is the limit."""
TRTLLM_FREE_GPU_MEMORY_FRACTION = 0.9
"""TensorRT-LLM's KV pool: this share of the memory the weights and the runtime's buffers leave
(``kv_cache_free_gpu_mem_fraction``, default 0.90 per
https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686aa854010d68bcbd0f4ab000221541ca6/docs/source/performance/perf-overview.md),
not vLLM's share of the whole memory less them."""
SATURATED = 0.95
"""An open-loop run is saturated when it served fewer than this share of the requests per second it offered."""
BURST_PROMPTS_PER_SLOT = 2
"""A closed loop that sends at most this many prompts per concurrent slot has its median request in the opening
burst (all ``concurrency`` prompts at once): its TTFT is not compared."""
FLAGS = ("disaggregated", "lockstep", "shared_prefix")
"""The true-or-false marks of a row (``extra.<flag>``); absent means false."""
CONFIG = ["model_id", "catalog_gpu", "tp", "pp", "quantization", "kv_dtype", "engine_generation",
          "max_num_batched_tokens", "scheduler_recv_interval", "max_num_seqs", "dp_attention"]
"""The columns that pick one roofline: the model on its GPUs, and the engine with the settings the run gave it."""
ROW_COLUMNS = ["row_id", "source_id", "source_row", "engine", "engine_generation", "gpu", "gpu_family",
               "catalog_gpu", "model", "model_id", "precision", "quantization", "kv_dtype", "tp", "pp", "ep", "dp",
               "dp_attention",
               "gpu_count", "replicas", "load_mode", "load", "concurrency", "request_rate", "batch_size", "num_prompts",
               "batch", "input_len", "output_len", "max_num_batched_tokens", "scheduler_recv_interval",
               "max_num_seqs", "busy_share", "lockstep"]
MEASURED_COLUMNS = ["measured_tpot_s", "tpot_key", "measured_ttft_s", "ttft_key", "measured_throughput",
                    "throughput_key"]
_QUANT_TOKENS = frozenset({"fp8", "fp4", "nvfp4", "mxfp4", "awq", "gptq", "int4", "int8", "w4a16", "w8a8",
                           "w4a8", "kv", "v2", "dynamic", "quantized"})
_PRECISION = {"fp8": "fp8", "int8": "int8", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "int4-awq": "awq",
              "int4-gptq": "gptq"}
_KV = {"auto": "auto", "bf16": "auto", "fp16": "auto", "fp8": "fp8", "fp8_e4m3": "fp8_e4m3",
       "fp8_e5m2": "fp8_e5m2"}


class _SkipError(Exception):
    """A configuration the product cannot state: ``reason`` (counted) and ``detail`` (shown)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(reason)
        self.reason, self.detail = reason, detail


# ---------------------------------------------------------------- model, precision, KV dtype

def _requantised_names(name: str) -> Iterator[str]:
    """``nvidia/DeepSeek-R1-0528-FP4-V2`` → ``DeepSeek-R1-0528-FP4``, ``DeepSeek-R1-0528`` (repo name, trailing
    quantisation tokens dropped one at a time)."""
    parts = name.rsplit("/", 1)[-1].split("-")
    while len(parts) > 1 and parts[-1].lower() in _QUANT_TOKENS:
        parts = parts[:-1]
        yield "-".join(parts).lower()


@lru_cache(maxsize=1)
def _repo_names() -> dict[str, str | None]:
    """Repository name (no organisation, lower case) → catalog id; None where two catalog models share it."""
    out: dict[str, str | None] = {}
    for m in load_models().values():
        for n in {x.rsplit("/", 1)[-1].lower() for x in (m.id, *m.aliases)}:
            out[n] = m.id if out.get(n, m.id) == m.id else None
    return out


def resolve_model(name: str) -> str | None:
    """The catalog id of a corpus model name: the id or an alias as is, else the catalog model that a
    re-quantised checkpoint repackages (``amd/Llama-3.1-405B-Instruct-FP8-KV`` → ``meta-llama/Llama-3.1-405B``;
    the row's ``precision`` then says the format). None when neither finds one unambiguously."""
    try:
        return get_model(name).id
    except InvalidInputError:
        pass
    return next((mid for n in _requantised_names(name) if (mid := _repo_names().get(n))), None)


def quantization_for(precision: str, model: ModelSpec, gpu: GPUSpec) -> str | None:
    """The product's ``quantization`` for a corpus weight precision (raises :class:`_SkipError` when none fits).

    bf16/fp16 → None (the checkpoint's format), or ``"none"`` when the catalog checkpoint is itself quantised
    (a 16-bit run of it); fp8 → fp8; int8 → int8; nvfp4, mxfp4 → themselves (gpt-oss's mxfp4 resolves to
    mxfp4-moe in the roofline); fp4 without a block format → nvfp4 on NVIDIA, mxfp4 elsewhere; int4-awq →
    awq; int4-gptq → gptq. int4 without a scheme, w4a8 and fp32 have no product format.
    """
    if precision in ("bf16", "fp16"):
        return "none" if model.quantization else None
    if precision == "fp4":
        return "nvfp4" if gpu.vendor.upper() == "NVIDIA" else "mxfp4"
    if precision in _PRECISION:
        return _PRECISION[precision]
    raise _SkipError("precision has no product format", precision)


def kv_dtype_for(kv_cache_dtype: object) -> str:
    """The product's ``kv_cache_dtype`` for the corpus field (null, auto, bf16, fp16 → ``auto``)."""
    if kv_cache_dtype is None or (not isinstance(kv_cache_dtype, str) and bool(pd.isna(kv_cache_dtype))):
        return "auto"
    if str(kv_cache_dtype) not in _KV:
        raise _SkipError("KV-cache dtype not modelled", str(kv_cache_dtype))
    return _KV[str(kv_cache_dtype)]


def _roofline(model_id: str, gpu_id: str, tp: int, pp: int, quantization: str | None, kv_dtype: str,
              efficiencies: Efficiencies, engine: str = DEFAULT_ENGINE, profile: Profile | None = None,
              settings: tuple[int, int] = (DEFAULT_MAX_NUM_BATCHED_TOKENS, 1), dp_attention: bool = False) -> Roofline:
    """One roofline per configuration: the given efficiencies, or (default ones) the fitted set of ``profile``
    (default: the shipped fit) for the GPU's family and the engine; ``settings`` are the engine's
    ``(max_num_batched_tokens, scheduler_recv_interval)``; ``dp_attention``: attention data-parallel across the
    ``tp`` GPUs."""
    return Roofline(get_model(model_id), get_gpu(gpu_id), tensor_parallel_size=tp, pipeline_parallel_size=pp,
                    quantization=quantization, kv_cache_dtype=kv_dtype, efficiencies=efficiencies, engine=engine,
                    profile=profile, max_num_batched_tokens=settings[0], scheduler_recv_interval=settings[1],
                    enable_dp_attention=dp_attention)


def _configure(model_id: str, gpu_id: str, tp: int, pp: int, precision: str, kv: object,
               needs_kv: bool, dp_attention: bool = False) -> tuple[Any, str]:
    """``(quantization, kv_dtype)`` of one distinct configuration, checked by building its roofline; where a
    row's batch comes from the KV pool (``needs_kv``: a ceiling or an open-loop run), the pool must exist."""
    model, gpu = get_model(model_id), get_gpu(gpu_id)
    quant, kv_dtype = quantization_for(precision, model, gpu), kv_dtype_for(kv)
    try:
        pm = _roofline(model_id, gpu_id, tp, pp, quant, kv_dtype, Efficiencies(), dp_attention=dp_attention)
    except InvalidInputError as exc:
        raise _SkipError("the roofline refuses the configuration", str(exc)) from None
    if needs_kv and ceiling_batch(pm, "sglang", np.array([1.0]), np.array([1.0]), np.array([np.inf]))[0] < 2:
        raise _SkipError("the weights leave no KV cache on these GPUs", f"{model_id} on {tp * pp} × {gpu_id}")
    return quant, kv_dtype


# ---------------------------------------------------------------- screening

def _first_present(f: pd.DataFrame, keys: tuple[str, ...]) -> tuple[pd.Series, pd.Series]:
    """Per row, the first of ``keys`` that is present: its value and its name (NaN / None when none is)."""
    value = pd.Series(np.nan, index=f.index, dtype=float)
    key = pd.Series(None, index=f.index, dtype=object)
    for k in keys:
        if k in f.columns:
            take = value.isna() & f[k].notna()
            value[take], key[take] = f.loc[take, k].astype(float), k
    return value, key


def _column(f: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` as floats, all NaN when the frame has no such column."""
    return f[name].astype(float) if name in f.columns else pd.Series(np.nan, index=f.index)


def _throughput(f: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Measured output tokens/s per GPU and its key: the per-GPU figure, else the deployment's ÷ ``gpu_count``,
    else (a run whose every request had the stated lengths: ``total_num_tokens`` = ``num_prompts`` × (I + O))
    the total tokens/s × O / (I + O) ÷ ``gpu_count``."""
    per_gpu, total = _column(f, THROUGHPUT_PER_GPU), _column(f, THROUGHPUT_TOTAL)
    i, o, gpus = f["input_len"].astype(float), f["output_len"].astype(float), f["gpu_count"].astype(float)
    exact = (_column(f, "total_num_tokens") - _column(f, "num_prompts") * (i + o)).abs() < 0.5
    share = (_column(f, "total_tok_s") * o / (i + o)).where(exact)
    tput = per_gpu.fillna(total / gpus).fillna(share / gpus)
    key = pd.Series(None, index=f.index, dtype=object)
    key[share.notna()] = "total_tok_s × O/(I+O) / gpu_count"
    key[total.notna()] = f"{THROUGHPUT_TOTAL} / gpu_count"
    key[per_gpu.notna()] = THROUGHPUT_PER_GPU
    return tput, key


def saturated(f: pd.DataFrame) -> pd.Series:
    """Open-loop rows that served fewer than :data:`SATURATED` × the offered requests/s (the measured
    ``request_throughput_req_s``, else output tokens/s ÷ ``output_len``): True, False, or NaN when unknown."""
    tokens = _column(f, THROUGHPUT_TOTAL).fillna(_column(f, THROUGHPUT_PER_GPU) * f["gpu_count"].astype(float))
    achieved = _column(f, "request_throughput_req_s").fillna(tokens / f["output_len"].astype(float))
    short = achieved < SATURATED * _column(f, "request_rate")
    return short.astype(object).where(achieved.notna())


def _measured(f: pd.DataFrame) -> pd.DataFrame:
    """Measured TPOT and TTFT [s], output tokens/s per GPU, and the key each was read from; only what the
    row's load can state: a throughput ceiling (``offline_max``) its throughput; an open-loop run its TPOT,
    its TTFT unless saturated (then a queue over a finite run) and its throughput only if saturated (else
    it is the offered rate × O, whatever the engine); a closed loop in lockstep (``extra.lockstep``: every
    request the same lengths, so they start and finish in waves) its TPOT and throughput (a request's TTFT
    then waits for its whole wave's prefill, which the steady-state closed loop does not state), as is a closed
    loop that sends at most two requests per slot (``num_prompts ≤ 2 × concurrency``: at least half its requests
    arrive in the opening burst of ``concurrency`` prompts at once, so its median TTFT is that burst's queue), and
    a closed loop whose TTFT is a mean (the mean carries the opening burst however many prompts follow it: its
    prompts wait for one another's prefill, seconds at hundreds in flight; the median of the other requests
    does not), and TensorRT-LLM with data-parallel attention (its balancer holds a new prompt until every
    attention rank has one, up to ``attention_dp_config.timeout_iters`` steps — 60 in InferenceX's launch
    scripts — a wait the model does not state, docs/performance-model.md §3.7)."""
    tpot, tpot_key = _first_present(f, MEASURED_KEYS["tpot"])
    ttft, ttft_key = _first_present(f, MEASURED_KEYS["ttft"])
    tput, tput_key = _throughput(f)
    rate, sat = f["load"] == "request_rate", saturated(f)
    offline = f["load_mode"] == "offline_max"
    closed = f["load"] == "concurrency"
    lockstep = closed & f["lockstep"].eq(True)
    burst = closed & (_column(f, "num_prompts") <= BURST_PROMPTS_PER_SLOT * _column(f, "concurrency"))
    mean_ttft = closed & ttft_key.eq("ttft_mean_ms")
    balanced = f["dp_attention"] & f["engine_generation"].str.startswith("trtllm")
    drop_ttft = offline | lockstep | burst | mean_ttft | balanced | (rate & (sat != False))  # noqa: E712  (NaN: not known to be unsaturated)
    drop_tput = rate & (sat != True)  # noqa: E712  (NaN: not known to be saturated)
    drop_tpot = offline
    return pd.DataFrame({"measured_tpot_s": tpot.mask(drop_tpot) * 1e-3, "tpot_key": tpot_key.mask(drop_tpot),
                         "measured_ttft_s": ttft.mask(drop_ttft) * 1e-3, "ttft_key": ttft_key.mask(drop_ttft),
                         "measured_throughput": tput.mask(drop_tput), "throughput_key": tput_key.mask(drop_tput)},
                        index=f.index)


def _flag(reason: pd.Series, detail: pd.Series, mask: pd.Series, why: str, what: Any) -> None:
    """Give ``why`` (and ``what``) to the rows of ``mask`` that have no reason yet, in place."""
    new = mask.fillna(False).astype(bool) & reason.isna()
    reason[new] = why
    detail[new] = what[new] if isinstance(what, pd.Series) else what


def _served_lengths(f: pd.DataFrame) -> None:
    """Compare the lengths the run served, in place.

    Where the source prints its token totals and the requests it completed (else the prompts it sent),
    ``input_len`` and ``output_len`` become the means per request, rounded to a token (else
    ``output_len_mean_tokens`` for the output). A random dataset drawn below the stated length (SGLang's
    ``--random-range-ratio``) or a run without ``--ignore-eos`` serves shorter requests than it names: dstack's
    gpt-oss runs stated at 2,048 output tokens served 470–730. Without totals, a row whose client drew each
    length uniformly from ⌊r·L⌋ to L tokens (``extra.lengths_uniform_from`` = r; InferenceX's 0.8) is compared
    at the mean of that draw, (⌊r·L⌋ + L) / 2. Only rows that state their lengths are touched."""
    done = _column(f, "completed_requests").fillna(_column(f, "num_prompts"))
    low = _column(f, "lengths_uniform_from")
    drawn = {length: (np.floor(low * f[length].astype(float)) + f[length].astype(float)) / 2
             for length in ("input_len", "output_len")}
    means = {"input_len": (_column(f, "total_input_tokens") / done).fillna(drawn["input_len"]),
             "output_len": (_column(f, "total_output_tokens") / done).fillna(_column(f, "output_len_mean_tokens"))
             .fillna(drawn["output_len"])}
    for length, mean in means.items():
        served = mean.notna() & (mean >= 1) & f[length].notna()
        f[length] = f[length].astype(float).where(~served, mean.round())


@cache
def scheduler_limits(engine: str, version: object, generation: str, model_id: object, gpu_id: object,
                     stated_tokens: int | None) -> tuple[int, float]:
    """The token budget and the largest batch [sequences] a row's engine ran with: the budget it states, else for
    vLLM V1 the ``vllm serve`` defaults of its release on its GPU
    (:func:`~calculators.vllm.versions.default_scheduler_limits`: 8,192 tokens and 1,024 sequences on GPUs of
    70 GiB or more from 0.8.5), else :data:`DEFAULT_MAX_NUM_BATCHED_TOKENS` and :data:`ENGINE_MAX_BATCH`. V0's own
    defaults hang on flags the corpus does not record (``max_model_len``, multi-step scheduling), so V0 rows keep
    the fixed ones."""
    fixed = stated_tokens or DEFAULT_MAX_NUM_BATCHED_TOKENS, float(ENGINE_MAX_BATCH.get(generation, np.inf))
    release = engine_release(engine, version) if generation.startswith("vllm-v1") else None
    if release is None or pd.isna(model_id) or pd.isna(gpu_id):
        return fixed
    try:
        budget, seqs = serve_defaults(get_model(str(model_id)), get_gpu(str(gpu_id)),
                                      max_num_batched_tokens=stated_tokens, vllm_version=".".join(map(str, release)))
    except InvalidInputError:  # a release outside those read (docs/vllm-memory.md)
        return fixed
    return budget, float(seqs)


def _prepare(frame: pd.DataFrame) -> pd.DataFrame:
    """Row ids, resolved model, served lengths, batch [sequences] and measured values."""
    f = frame.reset_index(drop=True).copy()
    _served_lengths(f)
    if "row_id" not in f.columns:
        f["row_id"] = np.arange(len(f))
    f["source_row"] = f.groupby("source_id").cumcount()
    if "catalog_gpu" not in f.columns:
        f["catalog_gpu"] = f["gpu"].map(lambda g: GPUS.get(g, ("other", None))[1])
    if "gpu_family" not in f.columns:
        f["gpu_family"] = f["gpu"].map(lambda g: GPUS.get(g, ("other", None))[0])
    for flag in FLAGS:
        f[flag] = f[flag].fillna(False).astype(bool) if flag in f.columns else False
    for col in ("spec_decoding", "kv_cache_dtype", "ep", "dp", "concurrency", "batch_size", "request_rate",
                "num_prompts"):
        if col not in f.columns:
            f[col] = None
    f["scheduler_recv_interval"] = _column(f, "scheduler_recv_interval").fillna(1).astype(int)
    f["model_id"] = f["model"].map({m: resolve_model(m) for m in f["model"].unique()})
    version = f["engine_version"] if "engine_version" in f.columns else pd.Series(None, index=f.index)
    f["engine_generation"] = [engine_generation(str(e), v) for e, v in zip(f["engine"], version, strict=True)]
    stated = [None if np.isnan(t) else int(t) for t in _column(f, "max_num_batched_tokens")]
    limits = [scheduler_limits(*key) for key in zip(f["engine"], version.astype(object), f["engine_generation"],
                                                     f["model_id"], f["catalog_gpu"], stated, strict=True)]
    f["max_num_batched_tokens"] = [int(tokens) for tokens, _ in limits]
    f["max_num_seqs"] = [seqs for _, seqs in limits]
    f["load"] = _load(f)
    f["replicas"] = f["gpu_count"].astype(float) / (f["tp"].astype(float) * f["pp"].astype(float))
    f["dp_attention"] = dp_attention(f)
    f["batch"] = np.select([f["load"] == "static_batch", f["load"] == "concurrency"],
                           [f["batch_size"].astype(float), f["concurrency"].astype(float)], np.nan)
    f["busy_share"] = _busy_shares(f)
    return f.join(_measured(f))


def _busy_shares(f: pd.DataFrame) -> pd.Series:
    """Share of each closed-loop run's wall time its slots were busy [fraction]
    (:func:`~calculators.perf.benchmark_drain.busy_share`): the drain of ``num_prompts`` requests through
    ``concurrency`` slots, lengths drawn from ``extra.lengths_uniform_from`` × L to L. 1 where the row does not
    state both (no drain is charged)."""
    low = _column(f, "lengths_uniform_from")
    prompts, slots = _column(f, "num_prompts"), _column(f, "concurrency")
    known = (f["load"] == "concurrency") & low.notna() & prompts.notna() & slots.notna()
    share = pd.Series(1.0, index=f.index)
    share[known] = [busy_share(round(c), round(p), float(r))
                    for c, p, r in zip(slots[known], prompts[known], low[known], strict=True)]
    return share


def _load(f: pd.DataFrame) -> pd.Series:
    """How a row is predicted: its ``load_mode``, except an ``offline_max`` run of ``num_prompts`` prompts
    sent at once with ``batch_size`` = ``num_prompts`` (one static batch, e.g. dstack's), a ``static_batch``."""
    one_batch = (f["load_mode"] == "offline_max") & (_column(f, "batch_size") == _column(f, "num_prompts"))
    return f["load_mode"].where(~one_batch, "static_batch")


def replicated(f: pd.DataFrame) -> pd.Series:
    """Closed-loop rows on ``gpu_count`` = k × tp × pp GPUs (k > 1) whose own figures say each of the k replicas
    ran the stated concurrency: the requests in flight by Little's law, ``throughput per GPU × gpu_count ×
    (TTFT + (O − 1)·TPOT) / O``, lie nearer (in log) to ``concurrency × k`` than to ``concurrency``. Such a row
    is one replica at that concurrency (its per-GPU throughput is the replica's)."""
    k, n, o = f["replicas"], f["concurrency"].astype(float), f["output_len"].astype(float)
    ttft_s = _first_present(f, MEASURED_KEYS["ttft"])[0] * 1e-3  # as published, compared or not
    e2e = ttft_s + (o - 1) * f["measured_tpot_s"]
    in_flight = f["measured_throughput"] * f["gpu_count"].astype(float) * e2e / o
    per_replica = np.abs(np.log(in_flight / (n * k))) < np.abs(np.log(in_flight / n))
    whole = (k > 1) & (k == np.round(k)) & (f["load"] == "concurrency")
    return pd.Series(whole & per_replica.fillna(False).astype(bool), index=f.index)


def dp_attention(f: pd.DataFrame) -> pd.Series:
    """Rows whose attention ran data-parallel inside the tensor-parallel group (``dp`` = ``tp`` > 1: SGLang's
    ``--enable-dp-attention``, TensorRT-LLM's attention DP): each GPU holds the whole attention and the KV cache
    of its own share of the requests (the roofline's ``enable_dp_attention``). A data-parallel size beside ``tp``
    (``dp`` ≠ ``tp``, or ``tp`` = 1) counts replicas instead."""
    tp = f["tp"].astype(float)
    return tp.gt(1) & f["dp"].astype(float).eq(tp)


def _row_checks(f: pd.DataFrame) -> list[tuple[pd.Series, str, Any]]:
    """The row-level reasons to skip, in the order they are given: (mask, reason, detail)."""
    no_metric = f[["measured_tpot_s", "measured_ttft_s", "measured_throughput"]].isna().all(axis=1)
    return [
        (~f["load_mode"].isin(LOADS), "load mode not modelled", f["load_mode"].astype(str)),
        (f["disaggregated"], "prefill/decode disaggregated (not modelled)", "disaggregated"),
        (f["spec_decoding"].notna(), "speculative decoding (not modelled)", f["spec_decoding"].astype(str)),
        (f["shared_prefix"], "shared-prefix workload (prefix caching not modelled)", "shared prefix"),
        (f["model_id"].isna(), "model not in the catalog", f["model"].astype(str)),
        (f["catalog_gpu"].isna(), "GPU has no catalog id", f["gpu"].astype(str)),
        (f["tp"].isna() | f["pp"].isna(), "tp or pp not stated", "tp/pp"),
        (f["input_len"].isna() | f["output_len"].isna(), "input_len or output_len not stated", "lengths"),
        (no_metric, "no TPOT, TTFT or output-throughput metric", "metrics"),
        (~((f["replicas"] == 1) | replicated(f)), "gpu_count differs from tp × pp (replicas or layout not stated)",
         f["gpu_count"].astype(str) + " GPUs"),
    ]


def _config_checks(f: pd.DataFrame, reason: pd.Series, detail: pd.Series) -> None:
    """Quantization and KV dtype of each distinct configuration still in play; a refused one skips its rows."""
    keys = ["model_id", "catalog_gpu", "tp", "pp", "precision", "kv_cache_dtype", "dp_attention"]
    live = f[reason.isna()]
    f["quantization"], f["kv_dtype"] = None, None
    kv_loads = f["load"].isin(["offline_max", "request_rate"])
    for key, idx in live.groupby(keys, dropna=False, sort=False).groups.items():
        model_id, gpu_id, tp, pp, precision, kv, dp = key
        try:
            quant, kv_dtype = _configure(str(model_id), str(gpu_id), int(tp), int(pp), str(precision), kv,
                                         bool(kv_loads[idx].any()), bool(dp))
        except _SkipError as skip:
            _flag(reason, detail, f.index.isin(idx) & reason.isna(), skip.reason, skip.detail)
            continue
        f.loc[idx, "quantization"], f.loc[idx, "kv_dtype"] = quant, kv_dtype


@dataclass(frozen=True)
class Screened:
    """The corpus split in two: ``rows`` the model can predict, ``skipped`` (row_id, source_id,
    source_row, reason, detail) the rest."""

    rows: pd.DataFrame
    skipped: pd.DataFrame


def screen(frame: pd.DataFrame | None = None) -> Screened:
    """Split ``frame`` (default: the whole corpus, :func:`measurements_frame`) into comparable and skipped
    rows. Each skipped row carries the first reason that applies (order: module docstring)."""
    f = _prepare(measurements_frame() if frame is None else frame)
    reason = pd.Series(None, index=f.index, dtype=object)
    detail = pd.Series(None, index=f.index, dtype=object)
    for mask, why, what in _row_checks(f):
        _flag(reason, detail, pd.Series(mask, index=f.index), why, what)
    _config_checks(f, reason, detail)
    skipped = f.loc[reason.notna(), ["row_id", "source_id", "source_row"]].assign(
        reason=reason[reason.notna()], detail=detail[reason.notna()])
    rows = f.loc[reason.isna()]
    for col in ("tp", "pp", "gpu_count", "input_len", "output_len"):
        rows = rows.astype({col: np.int64})
    return Screened(rows=rows[ROW_COLUMNS + MEASURED_COLUMNS].reset_index(drop=True),
                    skipped=skipped.reset_index(drop=True))


def comparable_rows(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows of ``frame`` (default: the corpus) the model can predict, one per measurement: the
    configuration (``model_id``, ``catalog_gpu``, ``tp``, ``pp``, ``quantization``, ``kv_dtype``), the load
    (``batch`` [sequences]), lengths [tokens] and the measured values with their
    keys (``measured_tpot_s``, ``measured_ttft_s`` [s], ``measured_throughput`` [tokens/s per GPU])."""
    return screen(frame).rows


def skipped_rows(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows :func:`comparable_rows` leaves out: row_id, source_id, source_row, reason, detail."""
    return screen(frame).skipped


# ---------------------------------------------------------------- predictions and errors

@lru_cache(maxsize=4096)
def _kv_limit(model_id: str, gpu_id: str, tp: int, pp: int, quantization: str | None, kv_dtype: str,
              context_tokens: int, trtllm_pool: bool = False, dp_attention: bool = False) -> int:
    """Sequences of ``context_tokens`` tokens the KV pool of one replica holds: vLLM's accounting (its share of
    the whole memory less weights, activations and the rest), or with ``trtllm_pool`` TensorRT-LLM's,
    :data:`TRTLLM_FREE_GPU_MEMORY_FRACTION` of what the same weights, activations and rest leave (a flag, not the
    engine's name, so that every other engine shares one cached answer). With ``dp_attention`` each GPU keeps its
    own sequences' cache (:func:`~calculators.vllm.concurrency.replica_capacity`)."""
    model, gpu = get_model(model_id), get_gpu(gpu_id)

    def pool(kv_cache_memory_bytes: int | None = None) -> tuple[int, CapacityResult]:
        return replica_capacity(model, gpu, tp, pp, dp_attention=dp_attention, quantization=quantization,
                                kv_cache_dtype=kv_dtype, max_model_len=context_tokens,
                                kv_cache_memory_bytes=kv_cache_memory_bytes)

    pools, capacity = pool()
    if trtllm_pool:
        stage = capacity.binding
        free = gpu.memory_bytes - stage.weights_bytes - stage.activation.value - stage.non_torch.value
        pools, capacity = pool(int(TRTLLM_FREE_GPU_MEMORY_FRACTION * free))
    return pools * batch_limit(model, capacity, float(context_tokens))


def footprint_tokens(engine: str, input_len: np.ndarray, output_len: np.ndarray,
                     lockstep: np.ndarray | bool = False) -> np.ndarray:
    """Tokens of KV cache one running sequence of ``I`` prompt and ``O`` output tokens is charged when the engine
    decides how many run at once [tokens]: vLLM's
    :func:`~calculators.vllm.concurrency.running_footprint_tokens` (``I + O/2``, or ``I + O`` in ``lockstep``);
    TensorRT-LLM's default policy (``GUARANTEED_NO_EVICT``) reserves each request's ``I + O`` on admission, and so
    does this for the engines whose reservation the rows do not state."""
    return running_footprint_tokens(input_len, output_len, np.asarray(lockstep, dtype=bool)
                                    | (not engine.startswith("vllm")))


def ceiling_batch(pm: Roofline, engine: str, input_len: np.ndarray, output_len: np.ndarray,
                  num_prompts: np.ndarray, max_num_seqs: float = np.inf,
                  lockstep: np.ndarray | bool = False) -> np.ndarray:
    """The batch [sequences] an engine runs for a throughput ceiling: the fewest of the sequences the KV pool
    holds (:func:`_kv_limit`: vLLM's accounting, TensorRT-LLM's own; sequences of :func:`footprint_tokens`), the
    engine's largest batch ``max_num_seqs`` (:func:`scheduler_limits`; none for SGLang and ATOM) and the prompts
    the run sends; at least 1. ``lockstep``: the runs whose requests all grow together."""
    config = (pm.model.id, pm.gpu.id, int(np.ravel(pm.tensor_parallel_size)[0]), pm.pipeline_parallel_size,
              pm.quantization, pm.kv_cache_dtype)
    trtllm_pool = engine.startswith("trtllm")
    footprint = footprint_tokens(engine, input_len, output_len, lockstep)
    kv = np.array([_kv_limit(*config, int(c), trtllm_pool, pm.enable_dp_attention) for c in footprint], dtype=float)
    return np.maximum(np.fmin(np.minimum(kv, max_num_seqs), num_prompts), 1.0)


_KEYS = ("tpot_s", "itl_median_s", "ttft_s", "output_tokens_per_s_per_gpu")


def _put(out: dict[str, np.ndarray], part: dict[str, np.ndarray], rows: np.ndarray) -> None:
    """Write ``part``'s TPOT, TTFT and throughput into ``out`` at the ``rows`` mask, in place."""
    for k in _KEYS:
        out[k][rows] = part[k]


def _load_metrics(pm: Roofline, rows: pd.DataFrame, engine: str) -> dict[str, np.ndarray]:
    """TPOT, TTFT [s] and output tokens/s per GPU of each row at its load, and the batch used [sequences]:
    closed loop at ``batch`` with at most the engine's largest batch running, and for vLLM at most the sequences
    its KV pool holds (:func:`ceiling_batch`; the rest wait for a slot — other engines size their pools by memory
    fractions the rows do not state), a ceiling at :func:`ceiling_batch`, a static batch of ``batch`` (TTFT = the
    prefill of all its prompts; for vLLM in waves of the same slots), or open loop at the row's ``request_rate``
    with at most the ceiling's batch in flight (or the client's cap, the row's ``concurrency``, if smaller)."""
    load = rows["load"].to_numpy()
    i, o = rows["input_len"].to_numpy(float), rows["output_len"].to_numpy(float)
    b = rows["batch"].to_numpy(float).copy()
    cap = float(rows["max_num_seqs"].iloc[0])
    ceiling, closed = load == "offline_max", load == "concurrency"
    if ceiling.any():
        b[ceiling] = ceiling_batch(pm, engine, i[ceiling], o[ceiling], rows["num_prompts"].to_numpy(float)[ceiling],
                                   cap)
    static, rate = load == "static_batch", load == "request_rate"
    slots = np.full(len(b), cap)
    capped = closed | static
    if capped.any() and engine.startswith("vllm"):
        together = rows["lockstep"].to_numpy(bool) | static  # a static batch's sequences grow together too
        slots[capped] = ceiling_batch(pm, engine, i[capped], o[capped], np.full(int(capped.sum()), np.inf), cap,
                                      together[capped])
    sm = serving.serving_metrics(pm, np.nan_to_num(b, nan=1.0), i, o, max_running=slots)
    out = {k: np.array(sm[k], dtype=float) for k in _KEYS}
    out["output_tokens_per_s_per_gpu"] *= rows["busy_share"].to_numpy(float)  # a finite run's drain (closed loop)
    if static.any():
        _put(out, serving.static_batch_metrics(pm, b[static], i[static], o[static], max_running=slots[static]),
             static)
    if rate.any():
        client = rows["concurrency"].to_numpy(float)[rate]
        prompts = np.nan_to_num(rows["num_prompts"].to_numpy(float)[rate], nan=np.inf)
        part = _open_loop(pm, rows["request_rate"].to_numpy(float)[rate], i[rate], o[rate], engine, client, prompts,
                          cap)
        _put(out, part, rate)
        b[rate] = part["concurrency"]
    return {**out, "batch": b}


def _open_loop(pm: Roofline, rate: np.ndarray, i: np.ndarray, o: np.ndarray, engine: str,
               client: np.ndarray, prompts: np.ndarray, max_num_seqs: float) -> dict[str, np.ndarray]:
    """Open-loop metrics at ``rate`` requests/s with at most :func:`ceiling_batch` requests in flight (each row's:
    the sequences of its lengths the KV pool holds, the engine's largest batch and the ``prompts`` the run sends),
    or the benchmark client's ``client`` cap (``--max-concurrency``; NaN: none) where that is smaller."""
    engine_cap = ceiling_batch(pm, engine, i, o, prompts, max_num_seqs)
    cap = np.floor(np.fmin(engine_cap, client))
    return dict(serving.open_loop_metrics(pm, rate, i, o, max_num_seqs=cap))


def _predict_config(rows: pd.DataFrame, efficiencies: Efficiencies, profile: Profile | None) -> pd.DataFrame:
    """Predicted TPOT, TTFT [s] and output tokens/s per GPU of rows that share one configuration, each at its
    load (:func:`_load_metrics`), with the batch [sequences] that load gave."""
    first = rows.iloc[0]
    quant = None if pd.isna(first["quantization"]) else str(first["quantization"])
    engine = str(first["engine_generation"])
    pm = _roofline(str(first["model_id"]), str(first["catalog_gpu"]), int(first["tp"]), int(first["pp"]), quant,
                   str(first["kv_dtype"]), efficiencies, engine, profile,
                   (int(first["max_num_batched_tokens"]), int(first["scheduler_recv_interval"])),
                   bool(first["dp_attention"]))
    sm = _load_metrics(pm, rows, engine)
    return pd.DataFrame({"predicted_tpot_s": sm["tpot_s"], "predicted_itl_s": sm["itl_median_s"],
                         "predicted_ttft_s": sm["ttft_s"],
                         "predicted_throughput": sm["output_tokens_per_s_per_gpu"], "predicted_batch": sm["batch"]},
                        index=rows.index)


def signed_error(predicted: Any, measured: Any) -> Any:
    """``predicted / measured − 1`` (a fraction: 0.030 s against 0.040 s is −0.25)."""
    return np.asarray(predicted, dtype=float) / np.asarray(measured, dtype=float) - 1


def _compute_dtype(key: tuple[Any, ...]) -> str:
    """The dtype the matmuls of configuration ``key`` (:data:`CONFIG`) run in."""
    return model_compute_dtype(get_model(str(key[0])), get_gpu(str(key[1])), None if pd.isna(key[4]) else str(key[4]))


def _config_prediction(key: tuple[Any, ...], rows: pd.DataFrame, efficiencies: Efficiencies | None,
                       profile: Profile | None, memo: dict[Any, pd.DataFrame] | None) -> pd.DataFrame:
    """:func:`_predict_config` of one configuration's rows; with a ``memo``, computed once per (configuration,
    resolved efficiencies) — a fit that moves one GPU family's or engine's numbers recomputes only those."""
    if memo is None:
        return _predict_config(rows, efficiencies or Efficiencies(), profile)
    eff = efficiencies or Efficiencies.fitted(get_gpu(str(key[1])), str(key[6]), profile, _compute_dtype(key))
    if (key, eff) not in memo:
        memo[(key, eff)] = _predict_config(rows, eff, None)
    return memo[(key, eff)]


def predict(rows: pd.DataFrame, efficiencies: Efficiencies | None = None,
            profile: Profile | None = None, memo: dict[Any, pd.DataFrame] | None = None) -> pd.DataFrame:
    """One row per (comparable row, metric it carries): ``metric``, ``unit``, ``measured_key``, ``measured``
    and ``predicted`` (s, or tokens/s per GPU), ``error`` = predicted/measured − 1, ``log_ratio`` =
    ln(measured/predicted). One roofline per configuration and engine; serving_metrics over its rows at once.
    Without ``efficiencies`` each configuration gets the fitted set of ``profile`` (default: the shipped one).
    ``memo`` (a dict the caller keeps for one set of ``rows``) reuses configurations whose efficiencies did not
    change."""
    groups = rows.groupby(CONFIG, dropna=False, sort=False)
    wide = rows.join(pd.concat([_config_prediction(key, g, efficiencies, profile, memo) for key, g in groups]))
    parts = []
    for metric in METRICS:
        suffix = "" if metric == "throughput" else "_s"
        sub = wide.loc[wide[f"measured_{metric}{suffix}"].notna()]
        predicted = sub[f"predicted_{metric}{suffix}"]
        if metric == "tpot":
            predicted = predicted.where(~sub["tpot_key"].isin(ITL_KEYS), sub["predicted_itl_s"])
        parts.append(sub[ROW_COLUMNS].assign(
            metric=metric, unit=UNITS[metric], measured_key=sub[f"{metric}_key"],
            measured=sub[f"measured_{metric}{suffix}"], predicted=predicted,
            predicted_batch=sub["predicted_batch"]))
    out = pd.concat(parts, ignore_index=True)
    out["error"] = signed_error(out["predicted"], out["measured"])
    out["log_ratio"] = np.log(out["measured"] / out["predicted"])
    return out


def _order(table: pd.DataFrame) -> pd.DataFrame:
    """Metric order of :data:`METRICS`, ``all`` first, then families in :data:`FAMILIES` order, then sources."""
    fam_rank = {f: i + 1 for i, f in enumerate(FAMILIES)} | {ALL: 0}
    key = pd.DataFrame({"m": table["metric"].map({m: i for i, m in enumerate(METRICS)}),
                        "f": table["gpu_family"].map(fam_rank).fillna(len(FAMILIES) + 1),
                        "s0": table["source_id"] != ALL, "s": table["source_id"]})
    return table.loc[key.sort_values(["m", "f", "s0", "s"]).index].reset_index(drop=True)


def _summarise(e: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    g = e.groupby(["metric", *by], sort=False)
    out = pd.DataFrame({"n": g.size(), "median_abs_error": g["abs"].median(), "bias": g["err"].median(),
                        "p90_abs_error": g["abs"].quantile(0.9)}).reset_index()
    for col in ("gpu_family", "source_id"):
        if col not in by:
            out[col] = ALL
    return out


def error_table(pred: pd.DataFrame, error: str = "error") -> pd.DataFrame:
    """Per metric × GPU family × source (``"all"`` for every family or every source, both for the overall
    row): ``n``, ``median_abs_error``, ``bias`` (median signed error) and ``p90_abs_error``, all fractions of
    the measured value, from column ``error`` of ``pred`` (``"error"`` or ``"loso_error"``)."""
    e = pred[["metric", "gpu_family", "source_id"]].assign(err=pred[error], abs=pred[error].abs())
    levels: list[list[str]] = [[], ["gpu_family"], ["source_id"], ["gpu_family", "source_id"]]
    table = pd.concat([_summarise(e, by) for by in levels], ignore_index=True)
    cols = ["metric", "gpu_family", "source_id", "n", "median_abs_error", "bias", "p90_abs_error"]
    return _order(table[cols])


def per_source_view(table: pd.DataFrame) -> pd.DataFrame:
    """Each source counted once: per metric and GPU family (``"all"``: every family), the number of sources
    and the median over sources of each source's median |error| and of its bias (median signed error), from
    an :func:`error_table`. One large source moves these as far as one small one."""
    rows = table[table["source_id"] != ALL]
    g = rows.groupby(["metric", "gpu_family"], sort=False)
    out = pd.DataFrame({"sources": g.size(), "rows": g["n"].sum(),
                        "median_abs_error": g["median_abs_error"].median(), "bias": g["bias"].median()})
    return _order(out.reset_index().assign(source_id=ALL)).drop(columns="source_id")


# ---------------------------------------------------------------- leave one source out

def _lookup(rows: pd.DataFrame, medians: pd.Series, on: list[str]) -> np.ndarray:
    """``medians`` (indexed by ``on``) looked up for each row of ``rows``; NaN where it has no entry."""
    if medians.empty:
        return np.full(len(rows), np.nan)
    table = medians.rename("value").reset_index()
    return rows[on].merge(table, how="left", on=on)["value"].to_numpy(float)


def fit_correction(train: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The log correction ``c`` for ``rows`` fitted on ``train`` (one metric): the median ``log_ratio`` of
    the training rows of the same (GPU family, engine); else of the same GPU family; else of all training
    rows; else 0 (no training rows: left uncorrected). Returns ``log_correction`` and ``correction_level``."""
    cell = _lookup(rows, train.groupby(["gpu_family", "engine"])["log_ratio"].median(), ["gpu_family", "engine"])
    fam = _lookup(rows, train.groupby("gpu_family")["log_ratio"].median(), ["gpu_family"])
    every = float(train["log_ratio"].median()) if len(train) else math.nan
    value = np.where(~np.isnan(cell), cell, np.where(~np.isnan(fam), fam, every))
    level = np.select([~np.isnan(cell), ~np.isnan(fam), np.full(len(rows), not math.isnan(every))],
                      ["GPU family and engine", "GPU family", "all other sources"], "none")
    return pd.DataFrame({"log_correction": np.nan_to_num(value, nan=0.0), "correction_level": level},
                        index=rows.index)


def _repredict(held: pd.DataFrame, profile: Profile, level: str) -> pd.DataFrame:
    """``held``'s rows (one per row and metric, as :func:`predict` gives them) predicted again with ``profile``:
    ``log_correction`` = ln(new / old prediction) and its ``correction_level`` (``level``)."""
    wide = pd.concat([_predict_config(g, Efficiencies(), profile)
                      for _, g in held.groupby(CONFIG, dropna=False, sort=False)]).loc[held.index]
    column = {m: f"predicted_{m}" + ("" if m == "throughput" else "_s") for m in METRICS}
    new = np.array([wide.at[i, column[m]] for i, m in zip(held.index, held["metric"], strict=True)], dtype=float)
    return pd.DataFrame({"log_correction": np.log(new / held["predicted"].to_numpy(float)),
                         "correction_level": level}, index=held.index)


#: What a held-out group is: a source (leave one source out) or a GPU family (leave one family out).
HELD_OUT_BY = {"source_id": "source", "gpu_family": "family"}


def _refit_rows(pred: pd.DataFrame, refits: dict[str, Profile | None], by: str) -> list[pd.DataFrame]:
    """Each group's rows (``by``: a source or a GPU family) predicted by the profile fitted without it; a group
    with no stored refit is left as predicted (level ``"no refit stored (in-sample)"``)."""
    parts, level = [], f"refit without the {HELD_OUT_BY[by]}"
    for group, held in pred.groupby(by, sort=False):
        profile = refits.get(str(group))
        parts.append(_repredict(held, profile, level) if profile is not None else pd.DataFrame(
            {"log_correction": 0.0, "correction_level": "no refit stored (in-sample)"}, index=held.index))
    return parts


def loso_rows(pred: pd.DataFrame, refits: dict[str, Profile | None] | None = None,
              by: str = "source_id") -> pd.DataFrame:
    """``pred`` with each source's rows predicted without that source: by the coefficients refitted without
    it (``refits``: source → profile, as ``performance_fit.toml`` stores them), or, without refits (a set of
    efficiencies of the caller's), corrected by :func:`fit_correction` fitted on the other sources' rows of the
    same metric. ``by="gpu_family"`` holds out GPU families instead (``refits``: family → the profile fitted
    without its rows, which has no entry for it: its rows take the reference set, as a GPU of a family without
    runs does). Adds ``log_correction`` (ln of held-out ÷ shipped prediction), ``correction_level``,
    ``corrected``, ``loso_error`` = corrected/measured − 1, ``loso_log_ratio`` = ln(measured/corrected)."""
    parts = []
    if refits is not None:
        parts = _refit_rows(pred, refits, by)
    else:
        for (metric, source), held in pred.groupby(["metric", "source_id"], sort=False):
            train = pred[(pred["metric"] == metric) & (pred["source_id"] != source)]
            parts.append(fit_correction(train, held))
    out = pred.join(pd.concat(parts)) if parts else pred.assign(log_correction=0.0, correction_level="none")
    out["corrected"] = out["predicted"] * np.exp(out["log_correction"])
    out["loso_error"] = signed_error(out["corrected"], out["measured"])
    out["loso_log_ratio"] = out["log_ratio"] - out["log_correction"]
    return out


def residual_band(loso: pd.DataFrame) -> pd.DataFrame:
    """Per metric, the 80 % band of the LOSO residual ``ln(measured / corrected)`` as factors on the corrected
    prediction (:func:`calculators.perf.bands.fit_band`: source-weighted quantiles at the tail level whose
    held-out coverage reaches 80 %). A metric that only one source measures gets the first tail level and no
    coverage. Columns: metric, n, tail, low_factor, high_factor."""
    rows = []
    for metric in [m for m in METRICS if m in set(loso["metric"])]:
        sub = loso[loso["metric"] == metric]
        if sub["source_id"].nunique() > 1:
            e = fit_band(sub["loso_log_ratio"], sub["source_id"])
            tail, lo, hi = e.tail, float(np.log(e.low_factor)), float(np.log(e.high_factor))
        else:
            tail = TAIL_LEVELS[0]
            lo, hi = band_edges(sub["loso_log_ratio"], sub["source_id"], tail)
        rows.append({"metric": metric, "n": len(sub), "tail": tail, "low_factor": math.exp(lo),
                     "high_factor": math.exp(hi)})
    return pd.DataFrame(rows, columns=["metric", "n", "tail", "low_factor", "high_factor"])


def _nested_coverage(pred: pd.DataFrame, loso: pd.DataFrame, metric: str, tail: float) -> dict[str, tuple[int, float]]:
    """Without stored refits, each source's held-out residuals depend on the other sources' corrections: the
    edges that judge a source come from the LOSO rows of the corpus without it (nested LOSO)."""
    out: dict[str, tuple[int, float]] = {}
    for source in loso["source_id"].unique():
        others = loso_rows(pred[pred["source_id"] != source])
        others = others[others["metric"] == metric]
        held = loso[(loso["source_id"] == source) & (loso["metric"] == metric)]["loso_log_ratio"]
        if not (others.empty or held.empty):
            out[str(source)] = share_inside(held, others["loso_log_ratio"], others["source_id"], tail)
    return out


def band_coverage(pred: pd.DataFrame, loso: pd.DataFrame | None = None) -> pd.DataFrame:
    """Share of held-out rows whose measured value lies in the band around their corrected prediction, with
    the band's edges fitted without the row's source (and its correction fitted without it too), at the tail
    level :func:`residual_band` chose. Per metric and source; the ``source_id`` ``"all"`` row gives the
    average over sources (``coverage``, the band's criterion) and the share of all rows (``row_coverage``).
    Rows whose metric no other source has are not counted."""
    loso = loso_rows(pred) if loso is None else loso
    refitted = bool(loso["correction_level"].isin(["refit without the source", "no refit stored (in-sample)"]).any())
    parts = []
    for _, band in residual_band(loso).iterrows():
        metric, tail = band["metric"], float(band["tail"])
        sub = loso[loso["metric"] == metric]
        per = (held_out_coverage(sub["loso_log_ratio"], sub["source_id"], tail) if refitted
               else _nested_coverage(pred, loso, metric, tail))
        if not per:
            continue
        n = sum(k for k, _ in per.values())
        parts.append({"metric": metric, "source_id": ALL, "n": n,
                      "coverage": float(np.mean([c for _, c in per.values()])),
                      "row_coverage": sum(k * c for k, c in per.values()) / n})
        parts += [{"metric": metric, "source_id": s, "n": k, "coverage": c, "row_coverage": c}
                  for s, (k, c) in per.items()]
    cols = ["metric", "source_id", "n", "coverage", "row_coverage"]
    table = pd.DataFrame(parts, columns=cols)
    return _order(table.assign(gpu_family=ALL))[cols]


def worst_rows(loso: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The ``n`` rows furthest from their measurement after the LOSO correction, by |ln(measured /
    corrected)| (so 2× too high and 2× too low rank alike), with the uncorrected figures beside them."""
    cols = ["source_id", "model", "gpu", "tp", "pp", "concurrency", "batch", "input_len", "output_len", "metric",
            "unit", "measured", "predicted", "error", "corrected", "loso_error"]
    order = loso["loso_log_ratio"].abs().sort_values(ascending=False).index[:n]
    return loso.loc[order, cols].reset_index(drop=True)


@dataclass(frozen=True)
class LosoResult:
    """Leave-one-source-out: corrected rows, their error table, worst rows, the band and its coverage."""

    rows: pd.DataFrame
    table: pd.DataFrame
    worst: pd.DataFrame
    band: pd.DataFrame
    coverage: pd.DataFrame


def leave_one_source_out(pred: pd.DataFrame, worst: int = 10,
                         refits: dict[str, Profile | None] | None = None) -> LosoResult:
    """Predict each source without it (:func:`loso_rows`: the stored refits, else a correction fitted on the
    others), then summarise: the error table of ``loso_error``, the ``worst`` rows, the residual band and its
    held-out coverage."""
    rows = loso_rows(pred, refits)
    return LosoResult(rows=rows, table=error_table(rows, "loso_error"), worst=worst_rows(rows, worst),
                      band=residual_band(rows), coverage=band_coverage(pred, rows))


# ---------------------------------------------------------------- targets and the report

def target_checks(table: pd.DataFrame, stage: str) -> pd.DataFrame:
    """Each metric against its targets: overall median |error| ≤ :data:`TARGETS`, and every GPU family's
    bias within ± :data:`BIAS_TARGET`. Columns: stage, metric, check, value, target, met, detail."""
    out = []
    for metric in METRICS:
        rows = table[(table["metric"] == metric) & (table["source_id"] == ALL)]
        overall = rows[rows["gpu_family"] == ALL]
        if overall.empty:
            continue
        mae = float(overall["median_abs_error"].iloc[0])
        out.append((stage, metric, "median |error|", mae, TARGETS[metric], mae <= TARGETS[metric], ""))
        fams = rows[rows["gpu_family"] != ALL]
        off = fams[fams["bias"].abs() > BIAS_TARGET]
        worst = float(fams["bias"].abs().max()) if len(fams) else math.nan
        detail = ", ".join(f"{f} {b:+.0%}" for f, b in zip(off["gpu_family"], off["bias"], strict=True))
        out.append((stage, metric, "GPU-family bias", worst, BIAS_TARGET, off.empty, detail))
    return pd.DataFrame(out, columns=["stage", "metric", "check", "value", "target", "met", "detail"])


def _plain(v: Any) -> Any:
    """A JSON-ready scalar: numpy → Python, NaN → None."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in row.items()} for row in df.to_dict("records")]


@dataclass(frozen=True)
class AccuracyReport:
    """Everything the harness computes: counts, per-row predictions (with LOSO columns), the uncorrected
    and LOSO error tables, the worst rows, the 80 % band, its held-out coverage and the target checks."""

    comparable_rows: int
    skipped: pd.DataFrame
    predictions: pd.DataFrame
    uncorrected: pd.DataFrame
    loso: pd.DataFrame
    worst: pd.DataFrame
    band: pd.DataFrame
    coverage: pd.DataFrame
    targets: pd.DataFrame
    family_held_out: pd.DataFrame = field(default_factory=pd.DataFrame)

    def per_source(self, stage: str = "LOSO") -> pd.DataFrame:
        """:func:`per_source_view` of the LOSO table (``stage`` ``"LOSO"``) or the uncorrected one."""
        return per_source_view(self.loso if stage == "LOSO" else self.uncorrected)

    def skipped_by_reason(self) -> pd.Series:
        """Skipped rows per reason, most first."""
        return self.skipped["reason"].value_counts()

    def gpus_without_family_runs(self) -> list[str]:
        """Catalog GPUs of a family no compared row ran on (T4's Turing, MI250X's CDNA2, Gaudi, TPU): the model
        prices them with the reference set, fitted on the other families' runs, and nothing here judges that.
        Read from the shipped fit's family entries (:func:`calculators.perf.bands.seen_family`), as the pages,
        bands and quote read it; a test holds them to the families of the compared rows."""
        return [g.id for g in load_gpus().values() if not seen_family(g)]

    def measured_keys(self) -> pd.DataFrame:
        """How many compared points used each measured key, per metric."""
        return self.predictions.groupby(["metric", "measured_key"]).size().rename("n").reset_index()

    def to_json(self) -> dict[str, Any]:
        """A plain dict: counts, tables (errors as fractions, values in s or tokens/s per GPU), band factors."""
        return {
            "comparable_rows": self.comparable_rows,
            "compared_points": {m: int((self.predictions["metric"] == m).sum()) for m in METRICS},
            "skipped_rows": len(self.skipped),
            "skipped_by_reason": {str(k): int(v) for k, v in self.skipped_by_reason().items()},
            "measured_keys": _records(self.measured_keys()),
            "units": dict(UNITS),
            "error_definition": "predicted / measured - 1 (fraction)",
            "targets": {"median_abs_error": dict(TARGETS), "gpu_family_bias": BIAS_TARGET},
            "uncorrected": _records(self.uncorrected),
            "leave_one_source_out": _records(self.loso),
            "target_checks": _records(self.targets),
            "band_80": _records(self.band),
            "band_coverage": _records(self.coverage),
            "worst": _records(self.worst),
            "gpus_without_family_runs": self.gpus_without_family_runs(),
            "leave_one_family_out": {"definition": "each GPU family's rows predicted by the coefficients refitted "
                                                   "without that family, with their reference set (as a GPU of a "
                                                   "family without runs is)",
                                     "rows": _records(self.family_held_out)},
            "per_source": {"definition": "median over sources of each source's median |error| (and bias)",
                           "uncorrected": _records(self.per_source("uncorrected")),
                           "leave_one_source_out": _records(self.per_source("LOSO"))},
        }


def family_holdout_table(pred: pd.DataFrame, refits: dict[str, Profile | None]) -> pd.DataFrame:
    """Leave one GPU family out: each family's rows predicted by ``refits[family]`` (the fit without its rows,
    so with the reference set, as a GPU of a family without runs is priced). Per family and metric: n, median
    |error| and bias (median signed error). Families without a refit are left out."""
    cols = ["gpu_family", "metric", "n", "median_abs_error", "bias"]
    held = loso_rows(pred[pred["gpu_family"].isin([f for f, p in refits.items() if p is not None])], refits,
                     by="gpu_family")
    if held.empty:
        return pd.DataFrame(columns=cols)
    g = held.groupby(["gpu_family", "metric"])["loso_error"]
    return g.agg(n="size", median_abs_error=lambda e: e.abs().median(), bias="median").reset_index()[cols]


def assemble(screened: Screened, uncorrected: pd.DataFrame, loso: LosoResult,
             family_held_out: pd.DataFrame | None = None) -> AccuracyReport:
    """The report from its parts (the screened corpus, the uncorrected table, the LOSO result and the leave-one-
    family-out table), with the target checks of both error tables."""
    targets = pd.concat([target_checks(uncorrected, "uncorrected"), target_checks(loso.table, "LOSO")],
                        ignore_index=True)
    return AccuracyReport(comparable_rows=len(screened.rows), skipped=screened.skipped, predictions=loso.rows,
                          uncorrected=uncorrected, loso=loso.table, worst=loso.worst, band=loso.band,
                          coverage=loso.coverage, targets=targets,
                          family_held_out=pd.DataFrame() if family_held_out is None else family_held_out)


def accuracy_report(frame: pd.DataFrame | None = None, efficiencies: Efficiencies | None = None,
                    worst: int = 10) -> AccuracyReport:
    """Screen, predict, score and cross-validate ``frame`` (default: the whole corpus) in one call. The shipped
    fit is judged by the refits stored without each source; a caller's ``efficiencies`` by the correction."""
    screened = screen(frame)
    pred = predict(screened.rows, efficiencies)
    refits = shipped_refits(pred) if efficiencies is None else None
    families = family_holdout_table(pred, shipped_family_refits(pred)) if efficiencies is None else None
    return assemble(screened, error_table(pred), leave_one_source_out(pred, worst, refits), families)


def shipped_refits(pred: pd.DataFrame) -> dict[str, Profile | None]:
    """Source → the shipped fit file's profile fitted without it (None where the file has none)."""
    fit = load_fit()
    return {str(s): fit.without(str(s)) for s in pred["source_id"].unique()}


def shipped_family_refits(pred: pd.DataFrame) -> dict[str, Profile | None]:
    """GPU family → the shipped fit file's profile fitted without its rows (None where the file has none)."""
    fit = load_fit()
    return {str(f): fit.without_family(str(f)) for f in pred["gpu_family"].unique()}


__all__ = ["ALL", "BIAS_TARGET", "FAMILIES", "LABELS", "METRICS", "TARGETS", "UNITS", "AccuracyReport", "LosoResult",
           "Screened", "accuracy_report", "assemble", "band_coverage", "comparable_rows", "error_table",
           "family_holdout_table", "fit_correction", "kv_dtype_for", "leave_one_source_out", "loso_rows",
           "per_source_view", "predict", "quantization_for", "residual_band", "resolve_model", "screen",
           "signed_error", "shipped_family_refits", "shipped_refits", "skipped_rows", "target_checks", "worst_rows"]
