"""The tail latencies of one LLM replica at its share of a fleet's load: what an arrival waits for before its
prefill (a batch slot, then the steps' token budget) and how many replicas a p99 TTFT target needs
(docs/queueing.md §4)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from calculators.perf.model import PerformanceModel
from calculators.perf.serving import prompt_service_time_s
from calculators.planning.queueing import replica_ttft_wait_p99_s

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

    def at(self, i: int) -> TtftQueue:
        """The queues of candidate ``i`` alone."""
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
