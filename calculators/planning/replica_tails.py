"""The tail latencies of one LLM replica at its share of a fleet's load: what an arrival waits for before its
prefill (a batch slot, then the steps' token budget), its p99 TPOT as the load rises (other requests' prompts
mixed into its steps), and how many replicas a p99 TTFT or TPOT target needs (docs/queueing.md §4)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from calculators.perf.model import PerformanceModel
from calculators.perf.serving import (
    prompt_service_time_s,
    request_tpot_quantile_s,
    serving_metrics,
    slot_time_s,
    slot_view,
)
from calculators.planning.queueing import mg1_wait_quantile_s, replica_ttft_wait_p99_s

if TYPE_CHECKING:
    from calculators.planning.fleet import Workload


def lognormal_cv(mean: float, p95: float | None) -> float:
    """Coefficient of variation of a length: 0 for fixed lengths; from the log-normal through the mean and p95
    otherwise (docs/queueing.md §4)."""
    if not p95 or p95 <= mean:
        return 0.0
    c = math.log(p95 / mean)
    disc = 1.6448536269514722**2 - 2 * c
    sigma = 1.6448536269514722 - math.sqrt(disc) if disc >= 0 else 1.6448536269514722
    return math.sqrt(math.expm1(sigma**2))


@dataclass(frozen=True)
class TtftQueue:
    """What an arrival at one replica waits for before its prefill, per batch candidate: a slot (``slots`` of
    ``slot_s``, cv ``slot_cv``) and the steps' token budget (prompts of ``prompt_s``, cv ``prompt_cv``)."""

    slot_s: np.ndarray
    slots: np.ndarray
    prompt_s: np.ndarray
    slot_cv: float
    prompt_cv: float

    def at(self, i: int | np.ndarray) -> TtftQueue:
        """The queues of candidate ``i`` alone (or of the candidates of an index array)."""
        return replace(self, slot_s=self.slot_s[i], slots=self.slots[i], prompt_s=self.prompt_s[i])

    def p99_wait_s(self, w: Workload, replicas: ArrayLike, rows: np.ndarray | None = None) -> np.ndarray:
        """The p99 wait [s] at ``replicas`` replicas, for the candidates ``rows`` (all of them by default)."""
        pick = (lambda x: x) if rows is None else (lambda x: x[rows])
        return replica_ttft_wait_p99_s(w.request_rate_per_s / np.asarray(replicas, dtype=np.float64),
                                       pick(self.slot_s), pick(self.slots), pick(self.prompt_s),
                                       slot_cv=self.slot_cv, prompt_cv=self.prompt_cv)


def ttft_queue(pm: PerformanceModel, w: Workload, batch: ArrayLike, slot_s: ArrayLike) -> TtftQueue:
    """The queues before a prefill at each batch candidate ``batch`` (slot times ``slot_s``) with ``pm``'s steps:
    the slot time varies as the output length does, the prompt service as the prompt length does."""
    b = np.asarray(batch, dtype=np.float64)
    return TtftQueue(np.asarray(slot_s, dtype=np.float64), b.astype(np.int64),
                     prompt_service_time_s(pm, b, w.input_len, w.output_len),
                     lognormal_cv(w.output_len, w.output_len_p95), lognormal_cv(w.input_len, w.input_len_p95))


def replicas_for_ttft(w: Workload, start: np.ndarray, ttft_s: np.ndarray, queue: TtftQueue,
                      needed: np.ndarray) -> np.ndarray:
    """Fewest replicas (from ``start`` up) whose p99 TTFT = TTFT + the p99 wait for a slot and for the token
    budget (:func:`~calculators.planning.queueing.replica_ttft_wait_p99_s`) meets the target; ``inf`` where the
    TTFT alone misses it. For the batches that meet the TPOT target (``needed``; the others cannot be chosen),
    the replicas double from ``start`` until the target is met, then bisect between the last two counts: the
    wait falls as replicas grow."""
    assert w.ttft_p99_s is not None  # the caller sizes for a TTFT target
    budget = w.ttft_p99_s - ttft_s
    rows = np.flatnonzero((budget > 0) & needed)
    found = np.full(len(start), np.inf)
    if rows.size == 0:
        return found
    lo, hi = start[rows] - 1, start[rows].astype(np.float64)
    short = np.ones(len(rows), dtype=bool)  # each pass evaluates only the candidates still open
    for _ in range(64):  # λ / replicas halves each time: the waits vanish well within 2⁶⁴ replicas
        short[short] = queue.p99_wait_s(w, hi[short], rows[short]) > budget[rows[short]]
        if not short.any():
            break
        lo, hi = np.where(short, hi, lo), np.where(short, 2 * hi, hi)
    while np.any(open_ := hi - lo > 1):  # invariant: lo misses the target (or is below start), hi meets it
        mid = np.floor((lo[open_] + hi[open_]) / 2)
        ok = queue.p99_wait_s(w, mid, rows[open_]) <= budget[rows[open_]]
        lo[open_], hi[open_] = np.where(ok, lo[open_], mid), np.where(ok, mid, hi[open_])
    found[rows] = hi
    return found


TPOT_GRID_POINTS = 24
"""In-flight counts per batch candidate at which the p99 TPOT is priced: geometric from 1/1,000 of the batch to the
full batch (each 35 % above the last; the p99 between two is interpolated)."""


@dataclass(frozen=True)
class TpotCurve:
    """Per batch candidate (rows), the p99 TPOT [s] at rising per-replica arrival rates [1/s] (columns): the rates
    at which a grid of in-flight counts runs (Little's law), each with its p99 TPOT
    (:func:`~calculators.perf.serving.request_tpot_quantile_s`)."""

    rate_per_s: np.ndarray
    p99_s: np.ndarray

    def p99_at_s(self, rate_per_s: float) -> float:
        """A one-row curve's p99 TPOT at ``rate_per_s`` requests/s per replica [s], interpolated."""
        return float(np.interp(rate_per_s, self.rate_per_s[0], self.p99_s[0]))

    def max_rate_per_s(self, target_s: float) -> np.ndarray:
        """Per candidate, the highest rate per replica [1/s] whose p99 TPOT meets ``target_s``, interpolated between
        the grid's points: the full batch's rate where every point meets it, 0 where none does."""
        r, p = self.rate_per_s, self.p99_s
        met = (p <= target_s).sum(axis=1)  # p rises along each row: the points that meet it come first
        rows, last = np.arange(len(met)), r.shape[1] - 1
        lo, hi = np.clip(met - 1, 0, last), np.clip(met, 0, last)
        gap = p[rows, hi] - p[rows, lo]
        share = np.where(gap > 0, (target_s - p[rows, lo]) / np.where(gap > 0, gap, 1.0), 0.0)
        between = r[rows, lo] + np.clip(share, 0.0, 1.0) * (r[rows, hi] - r[rows, lo])
        return np.where(met == 0, 0.0, np.where(met > last, r[:, last], between))


def tpot_curve(pm: PerformanceModel, w: Workload, batch: ArrayLike, queue: TtftQueue) -> TpotCurve:
    """The p99 TPOT of each batch candidate ``batch`` as its replica's load rises, with ``pm``'s steps: at ``n`` in
    flight the replica serves ``n / slot time`` requests/s, and a request meets the prompts that arrive while it
    waits for the token budget (``queue``'s prompt queue, at its p99) and while it decodes (docs/queueing.md §4).
    The wait for a slot is left out: it grows only near a full batch, whose mean TPOT caps the quantile, and
    pricing it on this grid (an Erlang sum per point) would add half again to the planner's time. Both columns
    are made non-decreasing, as they are in theory, against rounding."""
    b = np.asarray(batch, dtype=np.float64)[:, None]
    n = b * np.geomspace(1e-3, 1.0, TPOT_GRID_POINTS)
    m = serving_metrics(pm, n, w.input_len, w.output_len)
    rate = n / slot_time_s(pm, m["e2e_latency_s"])
    wait = mg1_wait_quantile_s(rate, np.reshape(queue.prompt_s, (-1, 1)), queue.prompt_cv, 0.99)
    p99 = request_tpot_quantile_s(pm, n, w.input_len, w.output_len, arrival_rate_per_s=rate, wait_s=wait,
                                  max_running=b, mean_tpot_s=m["tpot_s"])
    return TpotCurve(np.maximum.accumulate(rate, axis=1), np.maximum.accumulate(p99, axis=1))


def replicas_for_tpot(w: Workload, curve: TpotCurve) -> np.ndarray:
    """Fewest replicas per batch candidate whose p99 TPOT at their share of the load meets the target; ``inf``
    where even a trickle of load misses it."""
    assert w.tpot_p99_s is not None  # the caller sizes for a TPOT target
    rate = curve.max_rate_per_s(w.tpot_p99_s)
    with np.errstate(divide="ignore"):
        return np.where(rate > 0, np.ceil(w.request_rate_per_s / np.where(rate > 0, rate, 1.0)), np.inf)


def replica_p99s_s(pm: PerformanceModel, w: Workload, batch: int, replicas: int = 1) -> tuple[float, float]:
    """p99 TTFT and p99 TPOT [s] of one of ``replicas`` replicas that run up to ``batch`` requests at once (vLLM's
    ``max_num_seqs``) at its share of ``w``'s rate, as the fleet planner prices its chosen layout: the TTFT of a
    full batch plus the p99 waits for a slot and for the token budget (:class:`TtftQueue`), and the p99 TPOT at
    that rate (:func:`tpot_curve`). ``inf`` TTFT where a queue is unstable."""
    b = np.array([float(batch)])
    m = slot_view(pm, serving_metrics(pm, b, w.input_len, w.output_len), b, w.output_len)
    queue = ttft_queue(pm, w, b, m["slot_time_s"])
    ttft = float(m["ttft_s"][0] + queue.at(0).p99_wait_s(w, replicas))
    return ttft, tpot_curve(pm, w, b, queue).p99_at_s(w.request_rate_per_s / replicas)
