"""What a simulated run measured: the per-request and per-step records, and their summary.

Times in seconds, throughputs per second. Percentiles are of finished requests; ITL samples are step
durations weighted by the sequences decoding in them (docs/queueing.md §10).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from calculators.sim.policies import SLO
from calculators.sim.workload import Workload

OVERLOAD_TOLERANCE = 0.10  # offered / achieved above 1 + this, with a growing queue, is overload


@dataclass(frozen=True)
class RunRecord:
    """The raw record of one run, before it is summarised.

    ``requests``: one row per request (:func:`requests_frame`); ``timeseries``: one row per step or change
    with ``time_s``, ``dt_s``, ``queue_depth``, ``batch_size``, ``kv_blocks_used``, ``kv_usage``,
    ``in_system``; ``itl``: (step durations [s], sequences decoding in each step); ``elapsed_s``: the
    simulated clock at the stop; ``stop_reason``: ``completed``, ``duration`` or ``max_events``.
    """

    requests: pd.DataFrame
    timeseries: pd.DataFrame
    itl: tuple[np.ndarray, np.ndarray]
    elapsed_s: float
    preemptions: int
    stop_reason: str


@dataclass
class SimulationResult:
    """What one simulated run measured. Times in seconds, throughputs per second.

    ``latency`` maps ``ttft``, ``tpot``, ``itl``, ``e2e`` and ``queue_wait`` to ``{"mean", "p50", "p95",
    "p99"}``. ``requests`` has one row per request, ``timeseries`` one row per step (continuous) or
    per change (static) with ``time_s``, ``dt_s``, ``queue_depth``, ``batch_size``, ``kv_usage``.
    """

    policy: str
    num_requests: int
    arrived: int
    completed: int
    rejected: int
    elapsed_s: float
    request_throughput_per_s: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    latency: dict[str, dict[str, float]]
    preemptions: int
    goodput_requests_per_s: float
    slo_attainment: float
    mean_queue_depth: float
    max_queue_depth: int
    mean_batch_size: float
    mean_kv_usage: float
    max_kv_usage: float
    time_avg_in_system: float
    overloaded: bool
    overload_factor: float
    stop_reason: str
    requests: pd.DataFrame = field(repr=False)
    timeseries: pd.DataFrame = field(repr=False)
    itl_samples: tuple[np.ndarray, np.ndarray] = field(repr=False)
    warmup_s: float = 0.0

    def summary(self) -> dict:
        """Flat JSON-ready figures (latencies as ``<metric>_<stat>_s``)."""
        out = {k: getattr(self, k) for k in (
            "policy", "num_requests", "arrived", "completed", "rejected", "elapsed_s", "request_throughput_per_s",
            "input_tokens_per_s", "output_tokens_per_s", "preemptions", "goodput_requests_per_s", "slo_attainment",
            "mean_queue_depth", "max_queue_depth", "mean_batch_size", "mean_kv_usage", "max_kv_usage",
            "time_avg_in_system", "overloaded", "overload_factor", "stop_reason")}
        for metric, stats in self.latency.items():
            for stat, v in stats.items():
                out[f"{metric}_{stat}_s"] = v
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else
                    (v.item() if isinstance(v, np.generic) else v)) for k, v in out.items()}


def _stats(x: np.ndarray) -> dict[str, float]:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"mean": math.nan, "p50": math.nan, "p95": math.nan, "p99": math.nan}
    p = np.percentile(x, [50, 95, 99])
    return {"mean": float(x.mean()), "p50": float(p[0]), "p95": float(p[1]), "p99": float(p[2])}


def _weighted_stats(values: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    keep = weights > 0
    v, w = values[keep], weights[keep]
    if v.size == 0:
        return _stats(np.empty(0))
    order = np.argsort(v, kind="stable")
    v, cw = v[order], np.cumsum(w[order])
    q = [v[min(np.searchsorted(cw, f * cw[-1]), v.size - 1)] for f in (0.5, 0.95, 0.99)]
    return {"mean": float(np.dot(v, w[order]) / cw[-1]), "p50": float(q[0]), "p95": float(q[1]), "p99": float(q[2])}


def _steady(requests: pd.DataFrame, timeseries: pd.DataFrame, itl: tuple[np.ndarray, np.ndarray],
            warmup_s: float) -> tuple[np.ndarray, np.ndarray, pd.DataFrame, tuple[np.ndarray, np.ndarray]]:
    """What the statistics count once the warm-up is over: requests that arrived after it (latencies),
    requests that finished after it (throughput), and the steps from it on (time-series means, ITL)."""
    arrived_after = requests["arrival_s"].to_numpy() >= warmup_s
    finished_after = requests["finished"].to_numpy() & (requests["finish_s"].to_numpy() >= warmup_s)
    later = timeseries["time_s"].to_numpy() >= warmup_s
    if len(itl[0]) == len(timeseries):  # continuous batching: one ITL sample per step
        itl = (itl[0][later], itl[1][later])
    return arrived_after, finished_after, timeseries.loc[later], itl


def summarize(policy: str, requests: pd.DataFrame, timeseries: pd.DataFrame, itl: tuple[np.ndarray, np.ndarray], *,
              elapsed_s: float, preemptions: int, stop_reason: str, slo: SLO | None = None,
              warmup_s: float = 0.0) -> SimulationResult:
    """Build a :class:`SimulationResult` from the tidy frames (also used to combine pools).

    With ``warmup_s`` > 0 the statistics describe the steady state: latencies of requests that arrived after
    it, throughput over ``[warmup_s, elapsed_s]``, time-series means from it on. Counts (arrived, completed),
    the overload test and Little's law's time average still cover the whole run.
    """
    r = requests
    done = r["finished"].to_numpy()
    arrived = int((r["arrival_s"].to_numpy() <= elapsed_s).sum())
    after, finished_after, steady_ts, itl_steady = _steady(r, timeseries, itl, warmup_s)
    t = max(float(elapsed_s) - warmup_s, 1e-300)
    slo = slo or SLO()
    good = finished_after.copy()
    if slo.ttft_s is not None:
        good &= r["ttft_s"].to_numpy() <= slo.ttft_s
    if slo.tpot_s is not None:
        tp = r["tpot_s"].to_numpy()
        good &= ~(tp > slo.tpot_s)  # NaN (one output token) passes
    completed = int(done.sum())
    lat = {m: _stats(r.loc[done & after, f"{m}_s"].to_numpy(dtype=float)) for m in ("ttft", "tpot", "e2e",
                                                                                    "queue_wait")}
    lat["itl"] = _weighted_stats(*itl_steady)
    ts = steady_ts if len(steady_ts) else timeseries
    dt = ts["dt_s"].to_numpy()
    span = dt.sum() if dt.sum() > 0 else 1.0
    q, b, kv = (ts[c].to_numpy(dtype=float) for c in ("queue_depth", "batch_size", "kv_usage"))
    busy = (b > 0) & (dt > 0)
    factor = arrived / completed if completed else math.inf
    whole_q = timeseries["queue_depth"].to_numpy(dtype=float)
    half = whole_q.size // 2
    growing = bool(whole_q.size >= 4 and whole_q[half:].mean() > whole_q[:half].mean() and whole_q[-1] > 0)
    overloaded = stop_reason != "completed" and factor > 1 + OVERLOAD_TOLERANCE and growing
    return SimulationResult(
        policy=policy, num_requests=len(r), arrived=arrived, completed=completed,
        rejected=int(r["rejected"].sum()), elapsed_s=float(elapsed_s),
        request_throughput_per_s=int(finished_after.sum()) / t,
        input_tokens_per_s=float(r.loc[finished_after, "input_tokens"].sum()) / t,
        output_tokens_per_s=float(r.loc[finished_after, "output_tokens"].sum()) / t,
        latency=lat, preemptions=int(preemptions), goodput_requests_per_s=int(good.sum()) / t,
        slo_attainment=float(good.sum() / finished_after.sum()) if finished_after.any() else 0.0,
        mean_queue_depth=float(np.dot(q, dt) / span), max_queue_depth=int(q.max()) if q.size else 0,
        mean_batch_size=float(np.dot(b[busy], dt[busy]) / dt[busy].sum()) if busy.any() else 0.0,
        mean_kv_usage=float(np.dot(kv, dt) / span), max_kv_usage=float(kv.max()) if kv.size else 0.0,
        time_avg_in_system=_time_avg_in_system(timeseries, elapsed_s),
        overloaded=bool(overloaded), overload_factor=float(factor), stop_reason=stop_reason,
        requests=r, timeseries=timeseries, itl_samples=itl, warmup_s=float(warmup_s))


def _time_avg_in_system(ts: pd.DataFrame, elapsed_s: float) -> float:
    """Requests queued or running, averaged over the whole run (Little's ``L``)."""
    area = ts.attrs.get("in_system_area", np.dot(ts["in_system"].to_numpy(dtype=float), ts["dt_s"].to_numpy()))
    return float(area / max(float(elapsed_s), 1e-300))


def requests_frame(wl: Workload, arrival, sched, first, finish, npre, rejected,
                   request_overhead_s: float = 0.0) -> pd.DataFrame:
    """One row per request. ``arrival_s`` … ``finish_s`` are engine times; TTFT and end-to-end latency add
    ``request_overhead_s``, the time a request spends outside the engine's steps (API server, tokenisation,
    streaming; docs/performance-model.md §2), as a client measures them."""
    a, s, f, e = (np.asarray(x, dtype=np.float64) for x in (arrival, sched, first, finish))
    o = wl.output_tokens
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(o > 1, (e - f) / np.maximum(o - 1, 1), np.nan)
    return pd.DataFrame({
        "request_id": np.arange(wl.num_requests), "arrival_s": a, "input_tokens": wl.input_tokens,
        "output_tokens": o, "scheduled_s": s, "first_token_s": f, "finish_s": e,
        "queue_wait_s": s - a, "ttft_s": f - a + request_overhead_s, "tpot_s": tpot,
        "e2e_s": e - a + request_overhead_s,
        "preemptions": np.asarray(npre, dtype=np.int64), "rejected": np.asarray(rejected, dtype=bool),
        "finished": np.isfinite(e)})
