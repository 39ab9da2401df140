"""What a simulation run says beyond its summary: the time line and latency CDFs as tidy frames,
Little's law checked on the run, the run seen as a queue (its closed-form waits), and sweep grids.

Pure functions of a :class:`calculators.sim.results.SimulationResult`, SI units (seconds, 1/s).

Sources: L. Kleinrock, *Queueing Systems, Vol. 1* (1975), §3.2 (M/M/1), §3.5 (M/M/c, Erlang C) and
§5.6 (Pollaczek–Khinchine, M/D/1); J. D. C. Little, "A proof for the queuing formula L = λW",
*Operations Research* 9 (1961); S. Stidham, "A last word on L = λW", *Operations Research* 22 (1974)
(the finite-horizon form used on runs cut off by their time limit). See docs/queueing.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from calculators.planning.queueing import QueueWait, md1_mean_wait_s, mm1_mean_wait_s, mmc_wait
from calculators.sim.results import SimulationResult


def timeline_frame(res: SimulationResult, *, max_points: int = 600) -> pd.DataFrame:
    """Queue depth, batch size and KV usage over time, time-weighted means in at most ``max_points`` bins.

    Columns ``time_s``, ``queue_depth``, ``batch_size``, ``kv_usage`` [fraction].
    """
    ts = res.timeseries
    cols = ["queue_depth", "batch_size", "kv_usage"]
    if ts.empty:
        return pd.DataFrame(columns=["time_s", *cols])
    t = ts["time_s"].to_numpy(dtype=float)
    dt = ts["dt_s"].to_numpy(dtype=float)
    if t.size <= max_points:
        return ts[["time_s", *cols]].astype(float).reset_index(drop=True)
    edges = np.linspace(t[0], max(t[-1] + dt[-1], t[0] + 1e-9), max_points + 1)
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, max_points - 1)
    w = np.maximum(dt, 1e-12)
    wsum = np.bincount(idx, weights=w, minlength=max_points)
    keep = wsum > 0
    out = {"time_s": edges[:-1][keep]}
    for c in cols:
        out[c] = (np.bincount(idx, weights=w * ts[c].to_numpy(dtype=float), minlength=max_points) / np.where(
            keep, wsum, 1))[keep]
    return pd.DataFrame(out)



def latency_cdf(res: SimulationResult, metric: str, *, max_points: int = 400) -> pd.DataFrame:
    """Empirical CDF of one latency (``ttft``, ``tpot``, ``e2e``, ``queue_wait``; ``itl`` weighted by the
    sequences decoding in each step) as ``latency_ms`` and ``fraction`` columns."""
    if metric == "itl":
        v, w = (np.asarray(a, dtype=float) for a in res.itl_samples)
        keep = (w > 0) & np.isfinite(v)
        v, w = v[keep], w[keep]
    else:
        r = res.requests
        v = r.loc[r["finished"], f"{metric}_s"].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        w = np.ones_like(v)
    if v.size == 0:
        return pd.DataFrame({"latency_ms": [], "fraction": []})
    order = np.argsort(v, kind="stable")
    v, cw = v[order], np.cumsum(w[order])
    frac = cw / cw[-1]
    if v.size > max_points:
        pick = np.unique(np.searchsorted(frac, np.linspace(0, 1, max_points), side="left").clip(0, v.size - 1))
        v, frac = v[pick], frac[pick]
    return pd.DataFrame({"latency_ms": v * 1e3, "fraction": frac})



def throughput_ratio(a: SimulationResult, b: SimulationResult) -> float:
    """Requests per second of A ÷ B (``inf`` when B finished nothing)."""
    return a.request_throughput_per_s / b.request_throughput_per_s if b.request_throughput_per_s else math.inf



@dataclass(frozen=True)
class LittleCheck:
    """Little's law on a run: ``L`` [requests] against ``λ·W`` over the same window ``T`` [s]."""

    L: float
    arrivals: int
    window_s: float
    lambda_per_s: float
    W_s: float
    drained: bool

    @property
    def lambda_W(self) -> float:
        return self.lambda_per_s * self.W_s

    @property
    def relative_gap(self) -> float:
        if self.L > 0:
            return abs(self.L - self.lambda_W) / self.L
        return 0.0 if self.lambda_W == 0 else math.inf

    @property
    def ok(self) -> bool:
        """Within 2 %: the simulator's two independent records agree."""
        return self.relative_gap < 0.02


def little_check(res: SimulationResult) -> LittleCheck:
    """``L`` (time-average requests in the system, from the time line) and ``λ·W`` from the per-request records.

    On a run cut off by its time limit the finite-horizon form holds exactly: ``λ`` = arrivals ÷ T and
    ``W`` = mean time each arrival spent in the system up to T (Stidham 1974); on a drained run that is
    the classic ``L = λW`` with completed requests.
    """
    r = res.requests
    T = max(res.elapsed_s, 1e-300)
    a = r["arrival_s"].to_numpy(dtype=float)
    fin = r["finish_s"].to_numpy(dtype=float)
    inside = np.isfinite(a) & (a <= T) & ~r["rejected"].to_numpy(dtype=bool)
    sojourn = np.minimum(np.where(np.isfinite(fin), fin, T), T)[inside] - a[inside]
    n = int(inside.sum())
    return LittleCheck(L=res.time_avg_in_system, arrivals=n, window_s=T, lambda_per_s=n / T,
                       W_s=float(sojourn.mean()) if n else 0.0, drained=res.stop_reason == "completed")


def service_figures(res: SimulationResult) -> dict:
    """The run as a queue: ``λ`` offered [1/s], mean in-service time ``S`` [s] (first scheduled → finished),
    the capacity of the batched server ``μ = mean batch / S`` [1/s], and the measured mean queue wait [s]."""
    r = res.requests.loc[res.requests["finished"]]
    s = float((r["e2e_s"] - r["queue_wait_s"]).mean()) if len(r) else math.nan
    lam = res.arrived / res.elapsed_s if res.elapsed_s > 0 else math.nan
    mu = res.mean_batch_size / s if s and math.isfinite(s) and s > 0 else math.nan
    return {"lambda_per_s": lam, "service_s": s, "mu_per_s": mu, "rho": lam / mu if mu else math.nan,
            "measured_wait_s": res.latency["queue_wait"]["mean"]}



@dataclass(frozen=True)
class ClosedForms:
    """The run as a queue and the mean waits the closed forms predict for it [s] (``None``: not defined)."""

    figures: dict
    md1_wait_s: float | None
    mm1_wait_s: float | None
    erlang_c: QueueWait | None
    servers: int


def closed_forms(res: SimulationResult, servers: int) -> ClosedForms:
    """M/D/1 and M/M/1 with the replica as one server of rate ``μ = B̄ / S``; M/M/c (Erlang C) with
    ``c = servers`` slots, each serving one request in the mean in-service time ``S``."""
    f = service_figures(res)
    one = math.isfinite(f["mu_per_s"]) and f["mu_per_s"] > 0
    md1 = float(md1_mean_wait_s(f["lambda_per_s"], 1 / f["mu_per_s"])) if one else None
    mm1 = float(mm1_mean_wait_s(f["lambda_per_s"], 1 / f["mu_per_s"])) if one else None
    many = math.isfinite(f["service_s"]) and f["service_s"] > 0 and servers >= 1
    erl = mmc_wait(f["lambda_per_s"], f["service_s"], int(servers)) if many else None
    return ClosedForms(f, md1, mm1, erl, int(servers))


def sweep_grid(top: int) -> list[int]:
    """Powers of two from 1 up to ``top`` and ``top`` itself (the knee needs B and 2B pairs)."""
    top = max(1, int(top))
    return sorted({*(2 ** k for k in range(int(math.log2(top)) + 1)), top})
