"""What the app shows beside a simulation run: the percentile table, the time line and latency CDFs
as tidy frames, the overload sentence, the policy comparison, and "show the math" texts for the
closed-form queues and Little's law with the run's numbers substituted.

Pure functions of a :class:`calculators.sim.engine.SimulationResult`; no Streamlit here. Inputs are
SI (seconds); tables show milliseconds where they say so.

Sources: L. Kleinrock, *Queueing Systems, Vol. 1* (1975), §3.2 (M/M/1), §3.5 (M/M/c, Erlang C) and
§5.6 (Pollaczek–Khinchine, M/D/1); J. D. C. Little, "A proof for the queuing formula L = λW",
*Operations Research* 9 (1961); S. Stidham, "A last word on L = λW", *Operations Research* 22 (1974)
(the finite-horizon form used on runs cut off by their time limit).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from calculators.perf.curves import knee_batch
from calculators.planning.queueing import md1_mean_wait_s, mm1_mean_wait_s, mmc_wait
from calculators.sim.engine import SLO, SimulationResult

METRICS = (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "end-to-end"), ("queue_wait", "queue wait"))
KLEINROCK = "Kleinrock, Queueing Systems Vol. 1 (1975)"
LITTLE = "Little, Oper. Res. 9 (1961): L = λW; finite-horizon form: Stidham, Oper. Res. 22 (1974)"


def _ms(x: float) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x * 1e3:,.1f} ms"


def percentile_table(res: SimulationResult) -> pd.DataFrame:
    """One row per latency metric with mean, p50, p95 and p99 [ms] (NaN where nothing was measured)."""
    rows = [{"metric": label, **{f"{k} [ms]": res.latency[m][k] * 1e3 for k in ("mean", "p50", "p95", "p99")}}
            for m, label in METRICS]
    return pd.DataFrame(rows)


def headline(res: SimulationResult) -> dict[str, float]:
    """The run's headline figures (per second; attainment and KV usage as fractions)."""
    return {"requests_per_s": res.request_throughput_per_s, "output_tokens_per_s": res.output_tokens_per_s,
            "goodput_requests_per_s": res.goodput_requests_per_s, "slo_attainment": res.slo_attainment,
            "completed": res.completed, "arrived": res.arrived, "preemptions": res.preemptions,
            "mean_batch_size": res.mean_batch_size, "max_kv_usage": res.max_kv_usage}


def overload_text(res: SimulationResult, offered_rate_per_s: float | None = None) -> str | None:
    """A sentence saying by how much the run was overloaded, or ``None`` when it was not."""
    if not res.overloaded:
        return None
    f = res.overload_factor
    rate = "" if not offered_rate_per_s else (f" Offered {offered_rate_per_s:,.2f} req/s; served "
                                              f"{res.request_throughput_per_s:,.2f} req/s.")
    return (f"Overloaded: {res.arrived:,} requests arrived but only {res.completed:,} finished — the offered load "
            f"is {f:.2f}× what this replica served ({(f - 1):.0%} too much), and the queue was still growing "
            f"(max {res.max_queue_depth:,} waiting) when the clock stopped at {res.elapsed_s:,.1f} s.{rate} "
            "Lower the rate, add replicas, or raise max_num_seqs if the KV cache allows.")


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


def compare_table(a: SimulationResult, b: SimulationResult, *, names: tuple[str, str] = ("A", "B")) -> pd.DataFrame:
    """Policy A beside policy B on the same workload: throughputs, goodput, p99s and A ÷ B."""
    rows = [("requests/s", a.request_throughput_per_s, b.request_throughput_per_s),
            ("output tokens/s", a.output_tokens_per_s, b.output_tokens_per_s),
            ("goodput requests/s", a.goodput_requests_per_s, b.goodput_requests_per_s),
            ("SLO attainment [%]", 100 * a.slo_attainment, 100 * b.slo_attainment)]
    rows += [(f"{label} p99 [ms]", a.latency[m]["p99"] * 1e3, b.latency[m]["p99"] * 1e3) for m, label in METRICS]
    rows += [("mean batch size", a.mean_batch_size, b.mean_batch_size), ("preemptions", a.preemptions, b.preemptions)]
    with np.errstate(divide="ignore", invalid="ignore"):
        return pd.DataFrame([{"quantity": q, names[0]: float(x), names[1]: float(y),
                              f"{names[0]} ÷ {names[1]}": float(np.float64(x) / np.float64(y)) if y else math.nan}
                             for q, x, y in rows])


def throughput_ratio(a: SimulationResult, b: SimulationResult) -> float:
    """Requests per second of A ÷ B (``inf`` when B finished nothing)."""
    return a.request_throughput_per_s / b.request_throughput_per_s if b.request_throughput_per_s else math.inf


# --------------------------------------------------------------------------- Little's law


def little_check(res: SimulationResult) -> dict:
    """Little's law on the run: ``L`` (time-average requests in the system, from the time line) against
    ``λ·W`` over the same window.

    On a run cut off by its time limit the finite-horizon form holds exactly: ``λ`` = arrivals ÷ T and
    ``W`` = mean time each arrival spent in the system up to T (Stidham 1974); on a drained run that is
    the classic ``L = λW`` with completed requests. Returns the figures, the relative gap and the
    show-the-math dict (``formula``, ``substituted``, ``sources``).
    """
    r = res.requests
    T = max(res.elapsed_s, 1e-300)
    a = r["arrival_s"].to_numpy(dtype=float)
    fin = r["finish_s"].to_numpy(dtype=float)
    inside = np.isfinite(a) & (a <= T) & ~r["rejected"].to_numpy(dtype=bool)
    sojourn = np.minimum(np.where(np.isfinite(fin), fin, T), T)[inside] - a[inside]
    n = int(inside.sum())
    lam = n / T
    w = float(sojourn.mean()) if n else 0.0
    big_l = res.time_avg_in_system
    gap = abs(big_l - lam * w) / big_l if big_l > 0 else (0.0 if lam * w == 0 else math.inf)
    window = "drained run: every arrival finished" if res.stop_reason == "completed" else \
        f"run cut off at T = {T:,.2f} s: time in system counted up to T"
    return {"L": big_l, "lambda_per_s": lam, "W_s": w, "lambda_W": lam * w, "relative_gap": gap, "ok": gap < 0.02,
            "formula": "L = λ·W   (L: time-average requests queued or running; λ = arrivals / T; "
                       "W = mean time in the system)",
            "substituted": f"L = {big_l:,.3f}  vs  λ·W = ({n:,} / {T:,.2f} s) × {w:,.3f} s = {lam:,.3f}/s × "
                           f"{w:,.3f} s = {lam * w:,.3f}   → gap {gap:.2%} ({window})",
            "sources": [LITTLE, "L and W measured independently: L from the simulator's step time line, "
                                "W from the per-request records"]}


# --------------------------------------------------------------------------- closed-form queues


def service_figures(res: SimulationResult) -> dict:
    """The run as a queue: ``λ`` offered [1/s], mean in-service time ``S`` [s] (first scheduled → finished),
    the capacity of the batched server ``μ = mean batch / S`` [1/s], and the measured mean queue wait [s]."""
    r = res.requests.loc[res.requests["finished"]]
    s = float((r["e2e_s"] - r["queue_wait_s"]).mean()) if len(r) else math.nan
    lam = res.arrived / res.elapsed_s if res.elapsed_s > 0 else math.nan
    mu = res.mean_batch_size / s if s and math.isfinite(s) and s > 0 else math.nan
    return {"lambda_per_s": lam, "service_s": s, "mu_per_s": mu, "rho": lam / mu if mu else math.nan,
            "measured_wait_s": res.latency["queue_wait"]["mean"]}


def _one_server(res: SimulationResult) -> dict | None:
    """:func:`service_figures` when the batched replica has a finite, positive capacity ``μ`` [1/s]."""
    f = service_figures(res)
    return f if math.isfinite(f["mu_per_s"]) and f["mu_per_s"] > 0 else None


def _wait_text(w: float) -> str:
    return "∞ (ρ ≥ 1: the queue grows without bound)" if not math.isfinite(w) else _ms(w)


def math_md1(res: SimulationResult) -> dict | None:
    """M/D/1 mean wait ``W_q = ρ / (2μ(1 − ρ))`` with the replica as one server of rate ``μ = B̄ / S``."""
    f = _one_server(res)
    if f is None:
        return None
    lam, mu, rho = f["lambda_per_s"], f["mu_per_s"], f["rho"]
    w = float(md1_mean_wait_s(lam, 1 / mu))
    return {"formula": "W_q = ρ / (2μ(1 − ρ)),  ρ = λ/μ,  μ = mean batch size / mean in-service time",
            "substituted": f"μ = {res.mean_batch_size:,.2f} / {f['service_s']:,.3f} s = {mu:,.3f}/s; "
                           f"ρ = {lam:,.3f} / {mu:,.3f} = {rho:,.3f}; W_q = {_wait_text(w)}  "
                           f"(simulated mean queue wait {_ms(f['measured_wait_s'])})",
            "sources": [f"{KLEINROCK} §5.6 (Pollaczek–Khinchine with deterministic service)",
                        "the batched replica seen as one server of its measured capacity: an approximation"],
            "wait_s": w}


def math_mm1(res: SimulationResult) -> dict | None:
    """M/M/1 mean wait ``W_q = ρ / (μ − λ)``, same server as :func:`math_md1`."""
    f = _one_server(res)
    if f is None:
        return None
    lam, mu, rho = f["lambda_per_s"], f["mu_per_s"], f["rho"]
    w = float(mm1_mean_wait_s(lam, 1 / mu))
    return {"formula": "W_q = ρ / (μ − λ)  (exponential service; twice the M/D/1 wait)",
            "substituted": f"ρ = {rho:,.3f}; W_q = {rho:,.3f} / ({mu:,.3f} − {lam:,.3f})/s = {_wait_text(w)}  "
                           f"(simulated {_ms(f['measured_wait_s'])})",
            "sources": [f"{KLEINROCK} §3.2"], "wait_s": w}


def math_erlang_c(res: SimulationResult, servers: int) -> dict | None:
    """M/M/c (Erlang C) with ``c = max_num_seqs`` slots, each serving one request in the mean in-service time."""
    f = service_figures(res)
    if not (math.isfinite(f["service_s"]) and f["service_s"] > 0) or servers < 1:
        return None
    q = mmc_wait(f["lambda_per_s"], f["service_s"], int(servers))
    w, rho, c = float(q.mean_wait_s), float(q.utilisation), float(q.probability_of_wait)
    return {"formula": "W_q = C(c, λS) / (c/S − λ),  ρ = λS/c  (C: Erlang C, probability of waiting)",
            "substituted": f"c = {servers}, S = {f['service_s']:,.3f} s, λ = {f['lambda_per_s']:,.3f}/s → "
                           f"ρ = {rho:,.3f}, C = {c:,.3f}, W_q = {_wait_text(w)}  "
                           f"(simulated {_ms(f['measured_wait_s'])})",
            "sources": [f"{KLEINROCK} §3.5 eq. 3.43", "each running slot as a server; ignores that steps slow down "
                                                       "as the batch grows"], "wait_s": w}


def math_throughput(res: SimulationResult, slo: SLO | None = None) -> dict:
    """Throughput and goodput as counted on the run."""
    good = res.goodput_requests_per_s * res.elapsed_s
    targets = []
    if slo is not None and slo.ttft_s is not None:
        targets.append(f"TTFT ≤ {slo.ttft_s * 1e3:,.0f} ms")
    if slo is not None and slo.tpot_s is not None:
        targets.append(f"TPOT ≤ {slo.tpot_s * 1e3:,.0f} ms")
    return {"formula": "throughput = completed / T;  goodput = completed within the SLO / T",
            "substituted": f"{res.completed:,} / {res.elapsed_s:,.2f} s = {res.request_throughput_per_s:,.3f} req/s; "
                           f"{good:,.0f} / {res.elapsed_s:,.2f} s = {res.goodput_requests_per_s:,.3f} req/s "
                           f"({' and '.join(targets) or 'no SLO set'}, per request)",
            "sources": ["counted on the simulated requests (calculators.sim.engine)"]}


# --------------------------------------------------------------------------- sweeps


def sweep_knee_and_slo(frame: pd.DataFrame, slo: SLO | None = None) -> tuple[float | None, float | None]:
    """Knee (:func:`calculators.perf.curves.knee_batch` on requests/s over ``max_num_seqs``) and the largest
    ``max_num_seqs`` meeting the p99 targets without overload, as
    :func:`calculators.sim.engine.sweep_max_num_seqs` defines them."""
    if frame.empty:
        return None, None
    f = frame.sort_values("max_num_seqs")
    knee = knee_batch(f["max_num_seqs"], f["request_throughput_per_s"]) if len(f) >= 2 else None
    ok = ~f["overloaded"].to_numpy(dtype=bool)
    if slo is not None and slo.ttft_s is not None:
        ok &= f["ttft_p99_s"].to_numpy(dtype=float) <= slo.ttft_s
    if slo is not None and slo.tpot_s is not None:
        ok &= ~(f["tpot_p99_s"].to_numpy(dtype=float) > slo.tpot_s)
    return knee, (float(f["max_num_seqs"][ok].max()) if ok.any() else None)


def sweep_grid(top: int) -> list[int]:
    """Powers of two from 1 up to ``top`` and ``top`` itself (the knee needs B and 2B pairs)."""
    top = max(1, int(top))
    return sorted({*(2 ** k for k in range(int(math.log2(top)) + 1)), top})
