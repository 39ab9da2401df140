"""What a measured profile says on its own: the Little's-law batch, the measured knee, the SLO point, goodput.

The load points of an imported :class:`calculators.profiles.Profile` become one tidy frame
(:func:`profile_frame`, SI units: seconds, tokens, requests). From it:

- the mean batch of each load point by Little's law, ``B = output tokens/s × TPOT`` (each running
  sequence emits one token per TPOT; the same definition as :func:`calculators.perf.calibration.profile_points`);
- the **measured knee**: :func:`calculators.perf.curves.knee_batch` over the measured batch and output
  throughput (the same 15 % rule as the roofline curves: the smallest batch whose doubling gains
  less than 15 %, throughput interpolated in log-batch);
- the **SLO point**: the largest load whose p99 TTFT and p99 TPOT meet the targets
  (:func:`calculators.perf.curves.slo_batch` over the load order);
- goodput where the file reports it, and the predicted-vs-measured TPOT of a calibration.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from calculators.errors import InvalidInputError
from calculators.perf.curves import KNEE_THRESHOLD, knee_batch, slo_batch

STATS = ("mean", "median", "p90", "p95", "p99")
LATENCIES = ("ttft", "tpot")
#: Load axes a curve can be drawn against, with their axis titles.
LOAD_AXES = {
    "concurrency": "concurrency [requests in flight, client cap]",
    "request_rate_per_s": "request rate [requests/s]",
    "batch_size": "mean batch B = output tokens/s × TPOT (Little's law) [sequences]",
    "point": "load point (in order of load)",
}
_SLO_STATS = ("p99", "p95", "p90", "median", "mean")  # the first one the file gives is used


def _load_label(lp) -> str:
    if lp.label:
        return lp.label
    if lp.request_rate_per_s is not None:
        rate = lp.request_rate_per_s
        return f"rate {rate:g}/s" if rate != float("inf") else "rate inf (all at once)"
    if lp.concurrency is not None:
        return f"concurrency {lp.concurrency:g}"
    return "point"


def profile_frame(profile) -> pd.DataFrame:
    """One row per load point, in order of load, SI units.

    Columns: ``point``, ``label``, ``concurrency`` [requests], ``request_rate_per_s`` [1/s] (``inf`` = all at
    once), ``request_throughput_per_s``, ``request_goodput_per_s`` [requests/s], ``output_tokens_per_s``
    [tokens/s], ``mean_input_tokens``, ``mean_output_tokens`` [tokens], ``{ttft,tpot}_{stat}_s`` [s] for
    ``stat`` in mean, median, p90, p95, p99, ``batch_tpot_s`` (the TPOT used for the batch: mean, else
    median) and ``batch_size`` [sequences]. Missing values are NaN.
    """
    rows = []
    for i, lp in enumerate(profile.load_points):  # flattening the pydantic records, not a calculation
        row = {"point": i, "label": _load_label(lp)}
        for k in ("concurrency", "request_rate_per_s", "request_throughput_per_s", "request_goodput_per_s",
                  "output_tokens_per_s", "mean_input_tokens", "mean_output_tokens"):
            v = getattr(lp, k)
            row[k] = np.nan if v is None else float(v)
        for m in LATENCIES:
            stats = getattr(lp, f"{m}_s")
            for s in STATS:
                v = getattr(stats, s)
                row[f"{m}_{s}_s"] = np.nan if v is None else float(v)
        rows.append(row)
    df = pd.DataFrame(rows)
    df["batch_tpot_s"] = df["tpot_mean_s"].fillna(df["tpot_median_s"])
    df["batch_size"] = df["output_tokens_per_s"] * df["batch_tpot_s"]
    return df


def load_axes(frame: pd.DataFrame) -> list[str]:
    """The load axes on which every point has a distinct finite positive value (``point`` always last)."""
    out = []
    for k in ("concurrency", "request_rate_per_s", "batch_size"):
        v = frame[k].to_numpy(dtype=float)
        if np.all(np.isfinite(v) & (v > 0)) and len(np.unique(v)) == len(v):
            out.append(k)
    return out + ["point"]


@dataclass(frozen=True)
class MeasuredKnee:
    """The knee of the measured throughput curve.

    ``reached`` is False when every measured doubling still gained ``threshold`` or more: then
    ``batch_size`` is the largest measured batch and the knee lies beyond the run.
    """

    point: int
    batch_size: float
    output_tokens_per_s: float
    reached: bool
    threshold: float
    batches: np.ndarray  # the measured batches, ascending [sequences]
    gains: np.ndarray    # throughput gain of doubling each batch (NaN where 2B is beyond the run)


def doubling_gains(batch: np.ndarray, throughput: np.ndarray) -> np.ndarray:
    """``T(2B) / T(B) − 1`` at each ``B``, ``T`` interpolated in log2 B; NaN where ``2B`` is beyond the data."""
    b, t = np.asarray(batch, dtype=float), np.asarray(throughput, dtype=float)
    doubled = np.interp(np.log2(b * 2), np.log2(b), t)
    return np.where(b * 2 <= b.max(), doubled / t - 1, np.nan)


def measured_knee(frame: pd.DataFrame, threshold: float = KNEE_THRESHOLD) -> MeasuredKnee | None:
    """:func:`calculators.perf.curves.knee_batch` over the measured batch and output throughput.

    ``None`` when fewer than two points have both a Little's-law batch and a throughput.
    """
    ok = frame[np.isfinite(frame["batch_size"]) & (frame["batch_size"] > 0)
               & np.isfinite(frame["output_tokens_per_s"]) & (frame["output_tokens_per_s"] > 0)]
    ok = ok.sort_values("batch_size").drop_duplicates("batch_size")
    if len(ok) < 2:
        return None
    b, t = ok["batch_size"].to_numpy(dtype=float), ok["output_tokens_per_s"].to_numpy(dtype=float)
    knee = knee_batch(b, t, threshold)
    i = int(np.argmin(np.abs(b - knee)))
    return MeasuredKnee(point=int(ok["point"].iloc[i]), batch_size=float(b[i]), output_tokens_per_s=float(t[i]),
                        reached=bool(b[i] < b.max()), threshold=threshold, batches=b, gains=doubling_gains(b, t))


def slo_stat(frame: pd.DataFrame, metric: str) -> str | None:
    """The statistic of ``metric`` (ttft or tpot) the SLO is checked on: p99, else the highest the file gives."""
    for s in _SLO_STATS:
        if np.isfinite(frame[f"{metric}_{s}_s"].to_numpy(dtype=float)).all():
            return s
    return None


@dataclass(frozen=True)
class SloPoint:
    """The largest load meeting the TTFT/TPOT targets (``point`` None: no load does, or no target)."""

    point: int | None
    ttft_target_s: float | None
    tpot_target_s: float | None
    ttft_stat: str | None
    tpot_stat: str | None
    meets: np.ndarray  # per load point, in load order


def slo_point(frame: pd.DataFrame, *, ttft_target_s: float | None, tpot_target_s: float | None) -> SloPoint:
    """The largest load (in the profile's load order) whose TTFT and TPOT statistics meet the targets.

    The targets are p99s; where the file has no p99 for every point the highest percentile it has is
    used and named in ``ttft_stat``/``tpot_stat`` (a metric the file lacks entirely cannot be checked
    and is ignored, which the caller should say). No target at all: ``point`` is None.
    """
    ts, ps = slo_stat(frame, "ttft"), slo_stat(frame, "tpot")
    ttft = frame[f"ttft_{ts}_s"] if ts else np.zeros(len(frame))
    tpot = frame[f"tpot_{ps}_s"] if ps else np.zeros(len(frame))
    t_target = ttft_target_s if ts else None
    p_target = tpot_target_s if ps else None
    order = frame["point"].to_numpy(dtype=float)
    if t_target is None and p_target is None:
        return SloPoint(None, ttft_target_s, tpot_target_s, ts, ps, np.ones(len(frame), dtype=bool))
    best = slo_batch(order, ttft, tpot, ttft_target_s=t_target, tpot_target_s=p_target)
    meets = np.ones(len(frame), dtype=bool)
    if t_target is not None:
        meets &= np.asarray(ttft, dtype=float) <= t_target
    if p_target is not None:
        meets &= np.asarray(tpot, dtype=float) <= p_target
    return SloPoint(None if best is None else int(best), ttft_target_s, tpot_target_s, ts, ps, meets)


def has_goodput(frame: pd.DataFrame) -> bool:
    """Whether the file reports goodput (requests meeting the benchmark's SLOs per second) at some point."""
    return bool(np.isfinite(frame["request_goodput_per_s"].to_numpy(dtype=float)).any())


def display_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The load points for a table: throughputs, Little's-law batch, TTFT/TPOT in ms (empty where missing)."""
    out = pd.DataFrame({"load": frame["label"]})
    for k, name in (("concurrency", "concurrency"), ("request_rate_per_s", "rate [req/s]"),
                    ("request_throughput_per_s", "throughput [req/s]"), ("request_goodput_per_s", "goodput [req/s]"),
                    ("output_tokens_per_s", "output [tok/s]"), ("batch_size", "batch B (Little)"),
                    ("mean_input_tokens", "mean in [tok]"), ("mean_output_tokens", "mean out [tok]")):
        if np.isfinite(frame[k].to_numpy(dtype=float)).any() or (k == "request_rate_per_s" and frame[k].notna().any()):
            out[name] = frame[k]
    for m in LATENCIES:
        for s in STATS:
            col = frame[f"{m}_{s}_s"]
            if col.notna().any():
                out[f"{m.upper()} {'p50' if s == 'median' else s} [ms]"] = col * 1e3
    return out


def prediction_overlay(roofline, points: pd.DataFrame, calibration=None) -> pd.DataFrame:
    """Measured TPOT of each calibration point against the roofline's prediction with its own (default)
    efficiencies and, given a calibration, with the fitted ones; relative errors ``predicted/measured − 1``.

    ``points`` as from :func:`calculators.perf.calibration.profile_points`.
    """
    from calculators.perf.calibration import predicted_tpot_s
    out = points[["label", "batch_size", "input_len", "output_len", "tpot_s"]].rename(
        columns={"tpot_s": "measured_tpot_s"}).reset_index(drop=True)
    out["default_tpot_s"] = predicted_tpot_s(roofline, points, roofline.efficiencies)
    out["default_error"] = out["default_tpot_s"] / out["measured_tpot_s"] - 1
    if calibration is not None:
        out["calibrated_tpot_s"] = predicted_tpot_s(roofline, points, calibration.efficiencies)
        out["calibrated_error"] = out["calibrated_tpot_s"] / out["measured_tpot_s"] - 1
    return out.sort_values("batch_size").reset_index(drop=True)


def catalog_match(name: str | None, resolve) -> str | None:
    """The catalog id a profile's model/GPU name resolves to (``resolve`` raises InvalidInputError), else None."""
    if not name:
        return None
    try:
        return resolve(name).id
    except InvalidInputError:
        return None
