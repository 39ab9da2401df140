"""Many simulations in a row: ``max_num_seqs``, request-rate and length-mix sweeps, and continuous vs static.

Each sweep returns a tidy table with its knee (:func:`calculators.perf.curves.knee_batch`, docs/performance-model.md
§7) and its SLO point (the largest value meeting the p99 targets without overload).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from calculators.perf.curves import knee_batch
from calculators.perf.model import PerformanceModel
from calculators.sim.engine import simulate
from calculators.sim.policies import SLO, ContinuousBatching, StaticBatching
from calculators.sim.results import SimulationResult
from calculators.sim.workload import ClosedLoop, LogNormal, Poisson, Workload, make_workload
from calculators.validation import positive, positive_int


@dataclass
class SweepResult:
    """A sweep's tidy table, with its knee (max_num_seqs sweeps) and SLO point (``None`` if none)."""

    frame: pd.DataFrame
    knee: float | None
    slo_point: float | None


def _row(res: SimulationResult) -> dict:
    s = res.summary()
    return {k: s[k] for k in ("request_throughput_per_s", "output_tokens_per_s", "goodput_requests_per_s",
                              "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "itl_p99_s", "e2e_p50_s",
                              "e2e_p99_s", "mean_batch_size", "mean_kv_usage", "preemptions", "completed",
                              "overloaded", "overload_factor")}


def _meets(df: pd.DataFrame, slo: SLO | None) -> np.ndarray:
    ok = ~df["overloaded"].to_numpy(dtype=bool)
    if slo is not None and slo.ttft_s is not None:
        ok &= df["ttft_p99_s"].to_numpy(dtype=float) <= slo.ttft_s
    if slo is not None and slo.tpot_s is not None:
        ok &= ~(df["tpot_p99_s"].to_numpy(dtype=float) > slo.tpot_s)
    return ok


def sweep_max_num_seqs(pm: PerformanceModel, workload: Workload, values, *, policy: ContinuousBatching | None = None,
                       duration_s: float | None = None, slo: SLO | None = None,
                       on_progress: Callable[[int, int, int], None] | None = None,
                       warmup_s: float = 0.0) -> SweepResult:
    """Simulate at each ``max_num_seqs``; the knee (:func:`calculators.perf.curves.knee_batch`: smallest value
    whose doubling gains < 15 % throughput) and the SLO point (largest value meeting p99 TTFT/TPOT, not
    overloaded). For the knee to mean capacity, offer more load than the replica can serve.

    ``on_progress(done, total, value)`` is called before each run (a progress bar's hook); ``warmup_s`` is left
    out of every run's statistics (:func:`calculators.sim.engine.simulate`)."""
    base = policy or ContinuousBatching()
    vals = np.unique(np.asarray(positive_int("max_num_seqs", np.atleast_1d(values))))
    rows = []
    for k, v in enumerate(vals.tolist()):
        if on_progress is not None:
            on_progress(k, len(vals), v)
        pol = replace(base, max_num_seqs=v, max_num_batched_tokens=max(base.max_num_batched_tokens, v))
        rows.append({"max_num_seqs": v, **_row(simulate(pm, workload, pol, duration_s=duration_s, slo=slo,
                                                        warmup_s=warmup_s))})
    return summarise_max_num_seqs(pd.DataFrame(rows), slo)


def summarise_max_num_seqs(frame: pd.DataFrame, slo: SLO | None = None) -> SweepResult:
    """A ``max_num_seqs`` sweep's table (sorted) with its knee (:func:`calculators.perf.curves.knee_batch` on
    requests/s) and SLO point (largest value meeting the p99 targets without overload)."""
    if frame.empty:
        return SweepResult(frame, None, None)
    df = frame.sort_values("max_num_seqs").reset_index(drop=True)
    knee = knee_batch(df["max_num_seqs"], df["request_throughput_per_s"]) if len(df) >= 2 else None
    ok = _meets(df, slo)
    return SweepResult(df, knee, float(df["max_num_seqs"][ok].max()) if ok.any() else None)


def sweep_request_rate(pm: PerformanceModel, rates, input_len, output_len, *, policy=None, num_requests: int = 2000,
                       duration_s: float | None = None, seed: int = 0, arrival: str = "poisson", cv: float = 1.0,
                       slo: SLO | None = None) -> SweepResult:
    """Simulate at each offered request rate [1/s] (same seed, so only the rate changes); the SLO point
    is the highest rate that meets p99 TTFT/TPOT without overload."""
    from calculators.sim.workload import Gamma
    rows = []
    for rate in np.atleast_1d(np.asarray(positive("request_rate", rates), dtype=float)).tolist():
        arr = Poisson(rate) if arrival == "poisson" else Gamma(rate, cv)
        wl = make_workload(arr, input_len, output_len, num_requests=num_requests, seed=seed)
        limit = duration_s if duration_s is not None else 2.0 * num_requests / rate
        rows.append({"request_rate": rate, **_row(simulate(pm, wl, policy, duration_s=limit, slo=slo))})
    df = pd.DataFrame(rows)
    ok = _meets(df, slo)
    return SweepResult(df, None, float(df["request_rate"][ok].max()) if ok.any() else None)


def sweep_length_mix(pm: PerformanceModel, mixes: dict, arrivals, *, policy=None, num_requests: int = 2000,
                     duration_s: float | None = None, seed: int = 0, slo: SLO | None = None) -> SweepResult:
    """Simulate each named ``(input_len, output_len)`` mix under the same arrivals."""
    rows = []
    for name, (ind, outd) in mixes.items():
        wl = make_workload(arrivals, ind, outd, num_requests=num_requests, seed=seed)
        rows.append({"mix": name, "mean_input_tokens": float(wl.input_tokens.mean()),
                     "mean_output_tokens": float(wl.output_tokens.mean()),
                     **_row(simulate(pm, wl, policy, duration_s=duration_s, slo=slo))})
    df = pd.DataFrame(rows)
    ok = _meets(df, slo)
    return SweepResult(df, None, None if not ok.any() else float(np.flatnonzero(ok)[-1]))


def continuous_vs_static(pm: PerformanceModel, *, batch_size: int = 32, input_mean: float = 256,
                         input_p95: float = 600, output_mean: float = 150, output_p95: float = 450,
                         request_rate: float | None = None, num_requests: int = 3000, max_wait_ms: float = 50.0,
                         seed: int = 0) -> dict:
    """The classic experiment (docs/queueing.md §9): continuous vs static batching on log-normal lengths.

    ``request_rate=None`` offers a closed loop of ``2 · batch_size`` users with no think time, so both
    policies run saturated and the throughput ratio is a capacity ratio; a rate gives an open loop.
    Returns the throughput ratio (continuous ÷ static, requests/s) and each policy's p99 TTFT and
    end-to-end latency [s] and output tokens/s. Textbooks often quote 2–4×; this reports what the
    simulation gives.
    """
    arr = ClosedLoop(2 * batch_size) if request_rate is None else Poisson(request_rate)
    wl = make_workload(arr, LogNormal(input_mean, input_p95), LogNormal(output_mean, output_p95),
                       num_requests=num_requests, seed=seed)
    limit = None if request_rate is None else 1.2 * num_requests / request_rate  # arrivals end at ≈ n / rate
    cont = simulate(pm, wl, ContinuousBatching(max_num_seqs=batch_size, max_num_batched_tokens=max(8192, batch_size)),
                    duration_s=limit)
    stat = simulate(pm, wl, StaticBatching(max_batch_size=batch_size, max_wait_ms=max_wait_ms), duration_s=limit)
    return {
        "throughput_ratio": cont.request_throughput_per_s / stat.request_throughput_per_s,
        "continuous_requests_per_s": cont.request_throughput_per_s,
        "static_requests_per_s": stat.request_throughput_per_s,
        "continuous_output_tokens_per_s": cont.output_tokens_per_s,
        "static_output_tokens_per_s": stat.output_tokens_per_s,
        "continuous_ttft_p99_s": cont.latency["ttft"]["p99"], "static_ttft_p99_s": stat.latency["ttft"]["p99"],
        "continuous_e2e_p99_s": cont.latency["e2e"]["p99"], "static_e2e_p99_s": stat.latency["e2e"]["p99"],
        "continuous_overloaded": cont.overloaded, "static_overloaded": stat.overloaded,
    }
