"""How close the performance model comes to the public measurement corpus, scored without flattering it.

The method (docs/performance-model.md §11), on the rows :mod:`calculators.perf.comparable` keeps:

1. **Predictions** (:func:`predict`): one :class:`~calculators.perf.roofline.Roofline` per distinct
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
   the share of its wall time its slots were busy (:func:`~calculators.perf.comparable._busy_shares`).
2. **Errors**: signed relative error ``predicted / measured − 1`` (a fraction; −0.25 = 25 % low) and the
   log-ratio ``ln(measured / predicted)``. :func:`error_table` summarises them per metric × GPU family ×
   source: n, median |error|, median signed error (the bias) and p90 |error|, with ``"all"`` rows;
   :func:`per_source_view` counts each source once (the median over sources of each source's median).
3. **Leave one source out** (:func:`leave_one_source_out`): each source S is predicted by the coefficients
   refitted on every *other* source (``benchmarks/fit_performance.py`` stores one profile per left-out source
   beside the shipped one); S's rows never shape the numbers that predict S. For a caller's own efficiencies
   (nothing to refit) a multiplicative correction ``exp(c)`` is fitted on the other sources instead: ``c`` =
   median log-ratio of their rows of the same (GPU family, engine), else of the same GPU family, else of all.
   The held-out log-ratios give the 10 % and 90 % quantiles of an 80 % band ``corrected × [e^q10, e^q90]``;
   its coverage is measured on each source with quantiles from the other sources' held-out residuals.
4. **Leave one GPU family out** (:func:`family_holdout_table`; ``loso_rows(..., by="gpu_family")``): each family's
   rows predicted by the coefficients refitted without that family (``benchmarks/family_holdout.py --write``
   stores them), which have no entry for it, so its GPUs take the reference set — how a GPU of a family without
   runs (T4, MI250X, Gaudi, TPU) is priced. Its residuals give the bands such a GPU is shown with.

Pure: pandas and NumPy, no Streamlit or plotly. Units: seconds and tokens/s per GPU inside, errors as fractions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calculators.perf import serving
from calculators.perf.bands import TAIL_LEVELS, band_edges, fit_band, held_out_coverage, seen_family, share_inside
from calculators.perf.coefficients import (
    Profile,
    load_fit,
)
from calculators.perf.comparable import ROW_COLUMNS, Screened, screen
from calculators.perf.corpus_engine import ceiling_batch, row_roofline
from calculators.perf.measurements import GPUS
from calculators.perf.roofline import Efficiencies, Roofline, model_compute_dtype
from calculators.specs.catalog import get_gpu, get_model, load_gpus

METRICS = ("tpot", "ttft", "throughput")
"""The compared quantities: time per output token, time to first token, output tokens/s per GPU."""


UNITS = {"tpot": "s", "ttft": "s", "throughput": "tokens/s per GPU"}


LABELS = {"tpot": "TPOT", "ttft": "TTFT", "throughput": "output tokens/s per GPU"}


ITL_KEYS = ("itl_median_ms", "token_latency_p50_ms")
"""TPOT keys that are medians over every gap between tokens, not over requests: compared with the median step
(``itl_median_s``), in which the steps that carry a prompt are the tail, not with the mean step (TPOT)."""


TARGETS = {"tpot": 0.15, "ttft": 0.25, "throughput": 0.15}
"""Target median |error| per metric (a fraction)."""


BIAS_TARGET = 0.15
"""No GPU family's median signed error beyond ± this fraction."""


FAMILIES = tuple(dict.fromkeys(family for family, _ in GPUS.values()))


ALL = "all"
"""The label of a summary row over every GPU family or every source."""


CONFIG = ["model_id", "catalog_gpu", "tp", "pp", "quantization", "kv_dtype", "engine_generation",
          "max_num_batched_tokens", "scheduler_recv_interval", "max_num_seqs", "dp_attention", "enable_chunked_prefill"]
"""The columns that pick one roofline: the model on its GPUs, and the engine with the settings the run gave it."""


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
    pm = row_roofline(str(first["model_id"]), str(first["catalog_gpu"]), int(first["tp"]), int(first["pp"]), quant,
                   str(first["kv_dtype"]), efficiencies, engine, profile,
                   (int(first["max_num_batched_tokens"]), int(first["scheduler_recv_interval"])),
                   bool(first["dp_attention"]), bool(first["enable_chunked_prefill"]))
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
           "accuracy_report", "assemble", "band_coverage", "error_table", "family_holdout_table", "fit_correction",
           "leave_one_source_out", "loso_rows", "per_source_view", "predict", "residual_band", "shipped_family_refits",
           "shipped_refits", "signed_error", "target_checks", "worst_rows"]
