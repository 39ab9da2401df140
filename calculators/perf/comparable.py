"""Which rows of the public measurement corpus the product can state, and at which load.

The method (docs/performance-model.md §11; the predictions and their scores are :mod:`calculators.perf.accuracy`'s):
:func:`screen` and :func:`comparable_rows` keep a corpus row when its source is not set aside (a source file's
``not_compared`` says why one is) and the product can state the same run: a load it models (below), neither
prefill/decode disaggregated nor speculative decoding, nor a workload whose prompts share a cached prefix, a model
in the catalog (its id or alias, else the checkpoint it re-quantises), a GPU with a catalog id, ``tp``, ``pp``,
``input_len`` and ``output_len`` stated (compared at the lengths the run served, :func:`_served_lengths`; attention
data-parallel across the tensor-parallel GPUs where the row says so, :func:`dp_attention`), a weight precision that
maps to a product format, a KV-cache dtype the product knows, one replica of ``tp × pp`` GPUs (or replicas, below),
at least one metric the load can state, and a configuration the roofline accepts (for a ceiling or an open-loop run,
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

Pure: pandas and NumPy, no Streamlit or plotly. Units: seconds and tokens/s per GPU inside.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from calculators.errors import InvalidInputError
from calculators.perf.benchmark_drain import busy_share
from calculators.perf.coefficients import (
    engine_generation,
)
from calculators.perf.corpus_engine import ceiling_batch, row_roofline, scheduler_limits
from calculators.perf.measurements import GPUS, load_sources, measurements_frame
from calculators.perf.roofline import Efficiencies
from calculators.specs.catalog import get_gpu, get_model, load_models
from calculators.specs.schema import GPUSpec, ModelSpec

MEASURED_KEYS: dict[str, tuple[str, ...]] = {
    "tpot": ("tpot_median_ms", "itl_mean_ms", "itl_median_ms", "tpot_mean_ms", "token_latency_p50_ms", "tpot_ms"),
    "ttft": ("ttft_median_ms", "ttft_mean_ms", "ttft_ms"),
}
"""Measured latency keys [ms] in order of preference: the first one a row carries is used. A mean inter-token
latency comes before the median: both are over every gap between tokens, but the mean is the total decode time
÷ tokens whatever the arrivals, while the median depends on how arriving prompts bunch into steps (requests of
one output length that start together finish together, so their successors' prompts land in a few steps and the
median gap is the bare decode step), which a steady state with Poisson arrivals does not state."""


THROUGHPUT_PER_GPU, THROUGHPUT_TOTAL = "output_tok_s_per_gpu", "output_tok_s"


LOADS = ("concurrency", "static_batch", "request_rate", "offline_max")


SATURATED = 0.95
"""An open-loop run is saturated when it served fewer than this share of the requests per second it offered."""


BURST_PROMPTS_PER_SLOT = 2
"""A closed loop that sends at most this many prompts per concurrent slot has its median request in the opening
burst (all ``concurrency`` prompts at once): its TTFT is not compared."""


FLAGS = ("disaggregated", "lockstep", "shared_prefix", "enable_chunked_prefill")
"""The true-or-false marks of a row (``extra.<flag>``); absent means false."""


ROW_COLUMNS = ["row_id", "source_id", "source_row", "engine", "engine_generation", "gpu", "gpu_family",
               "catalog_gpu", "model", "model_id", "precision", "quantization", "kv_dtype", "tp", "pp", "ep", "dp",
               "dp_attention", "enable_chunked_prefill",
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


def _configure(model_id: str, gpu_id: str, tp: int, pp: int, precision: str, kv: object,
               needs_kv: bool, dp_attention: bool = False) -> tuple[Any, str]:
    """``(quantization, kv_dtype)`` of one distinct configuration, checked by building its roofline; where a
    row's batch comes from the KV pool (``needs_kv``: a ceiling or an open-loop run), the pool must exist."""
    model, gpu = get_model(model_id), get_gpu(gpu_id)
    quant, kv_dtype = quantization_for(precision, model, gpu), kv_dtype_for(kv)
    try:
        pm = row_roofline(model_id, gpu_id, tp, pp, quant, kv_dtype, Efficiencies(), dp_attention=dp_attention)
    except InvalidInputError as exc:
        raise _SkipError("the roofline refuses the configuration", str(exc)) from None
    if needs_kv and ceiling_batch(pm, "sglang", np.array([1.0]), np.array([1.0]), np.array([np.inf]))[0] < 2:
        raise _SkipError("the weights leave no KV cache on these GPUs", f"{model_id} on {tp * pp} × {gpu_id}")
    return quant, kv_dtype


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
    set_aside = {sid: s.not_compared for sid, s in load_sources().items() if s.not_compared}
    return [
        (f["source_id"].isin(set_aside), "source set aside: " + f["source_id"].astype(str) + " (its file says why)",
         f["source_id"].map(set_aside)),
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


__all__ = ["Screened", "comparable_rows", "dp_attention", "kv_dtype_for", "quantization_for", "replicated",
           "resolve_model", "saturated", "screen", "skipped_rows"]
