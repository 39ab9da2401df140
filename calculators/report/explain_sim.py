"""What the app shows beside a simulation run: the percentile table, the overload sentence, the policy
comparison, and "show the math" texts for Little's law and the closed-form queues with the run's numbers
substituted. Formats only: the figures come from :mod:`calculators.sim.analysis`.

Inputs are SI (seconds); tables show milliseconds where they say so.

Sources: L. Kleinrock, *Queueing Systems, Vol. 1* (1975), §3.2 (M/M/1), §3.5 (M/M/c, Erlang C) and
§5.6 (Pollaczek–Khinchine, M/D/1); J. D. C. Little, "A proof for the queuing formula L = λW",
*Operations Research* 9 (1961); S. Stidham, "A last word on L = λW", *Operations Research* 22 (1974)
(the finite-horizon form used on runs cut off by their time limit).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from calculators.sim.analysis import ClosedForms, LittleCheck
from calculators.sim.policies import SLO
from calculators.sim.results import SimulationResult

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


# --------------------------------------------------------------------------- Little's law


def math_little(chk: LittleCheck) -> dict:
    """Little's law on the run (:func:`calculators.sim.analysis.little_check`) with its numbers substituted."""
    window = "drained run: every arrival finished" if chk.drained else \
        f"run cut off at T = {chk.window_s:,.2f} s: time in system counted up to T"
    return {"formula": "L = λ·W   (L: time-average requests queued or running; λ = arrivals / T; "
                       "W = mean time in the system)",
            "substituted": f"L = {chk.L:,.3f}  vs  λ·W = ({chk.arrivals:,} / {chk.window_s:,.2f} s) × {chk.W_s:,.3f} s"
                           f" = {chk.lambda_per_s:,.3f}/s × {chk.W_s:,.3f} s = {chk.lambda_W:,.3f}   → gap "
                           f"{chk.relative_gap:.2%} ({window})",
            "sources": [LITTLE, "L and W measured independently: L from the simulator's step time line, "
                                "W from the per-request records"]}


# --------------------------------------------------------------------------- closed-form queues


def _wait_text(w: float) -> str:
    return "∞ (ρ ≥ 1: the queue grows without bound)" if not math.isfinite(w) else _ms(w)


def math_md1(cf: ClosedForms, mean_batch_size: float) -> dict | None:
    """M/D/1 mean wait ``W_q = ρ / (2μ(1 − ρ))`` with the replica as one server of rate ``μ = B̄ / S``."""
    if cf.md1_wait_s is None:
        return None
    f = cf.figures
    lam, mu, rho = f["lambda_per_s"], f["mu_per_s"], f["rho"]
    return {"formula": "W_q = ρ / (2μ(1 − ρ)),  ρ = λ/μ,  μ = mean batch size / mean in-service time",
            "substituted": f"μ = {mean_batch_size:,.2f} / {f['service_s']:,.3f} s = {mu:,.3f}/s; "
                           f"ρ = {lam:,.3f} / {mu:,.3f} = {rho:,.3f}; W_q = {_wait_text(cf.md1_wait_s)}  "
                           f"(simulated mean queue wait {_ms(f['measured_wait_s'])})",
            "sources": [f"{KLEINROCK} §5.6 (Pollaczek–Khinchine with deterministic service)",
                        "the batched replica seen as one server of its measured capacity: an approximation"]}


def math_mm1(cf: ClosedForms) -> dict | None:
    """M/M/1 mean wait ``W_q = ρ / (μ − λ)``, same server as :func:`math_md1`."""
    if cf.mm1_wait_s is None:
        return None
    f = cf.figures
    lam, mu, rho = f["lambda_per_s"], f["mu_per_s"], f["rho"]
    return {"formula": "W_q = ρ / (μ − λ)  (exponential service; twice the M/D/1 wait)",
            "substituted": f"ρ = {rho:,.3f}; W_q = {rho:,.3f} / ({mu:,.3f} − {lam:,.3f})/s = "
                           f"{_wait_text(cf.mm1_wait_s)}  (simulated {_ms(f['measured_wait_s'])})",
            "sources": [f"{KLEINROCK} §3.2"]}


def math_erlang_c(cf: ClosedForms) -> dict | None:
    """M/M/c (Erlang C) with ``c = max_num_seqs`` slots, each serving one request in the mean in-service time."""
    q = cf.erlang_c
    if q is None:  # Erlang C is not defined for this run
        return None
    f = cf.figures
    w, rho, c = float(q.mean_wait_s), float(q.utilisation), float(q.probability_of_wait)
    return {"formula": "W_q = C(c, λS) / (c/S − λ),  ρ = λS/c  (C: Erlang C, probability of waiting)",
            "substituted": f"c = {cf.servers}, S = {f['service_s']:,.3f} s, λ = {f['lambda_per_s']:,.3f}/s → "
                           f"ρ = {rho:,.3f}, C = {c:,.3f}, W_q = {_wait_text(w)}  "
                           f"(simulated {_ms(f['measured_wait_s'])})",
            "sources": [f"{KLEINROCK} §3.5 eq. 3.43", "each running slot as a server; ignores that steps slow down "
                                                       "as the batch grows"]}


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
