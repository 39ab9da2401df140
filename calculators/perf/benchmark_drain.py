"""How much of a finite closed-loop benchmark's wall time its slots are busy: the run's drain.

A closed-loop benchmark (``vllm bench serve --max-concurrency C --num-prompts P``, SGLang's ``bench_serving``,
InferenceX's and ATOM's clients) sends ``P`` requests through ``C`` slots: each slot takes the next waiting
request as soon as its own completes, and the run ends when the last request does. Its output throughput is the
tokens of all ``P`` requests over that wall time, so it counts the drain at the end, when the queue is empty and
slots fall idle one by one while the longest requests finish. The steady state the model prices (``C`` always in
flight, docs/performance-model.md §2) has no drain: a run of ``P`` requests reaches ``busy_share`` of its
throughput, where

    busy_share = Σ durations / (C × wall time)

Requests whose lengths are drawn uniformly from ``r·L`` to ``L`` (a random dataset's range ratio ``r``) take
times in proportion to their lengths, so slots drift out of step and the last ones finish late: 64 requests in
flight and 640 sent (InferenceX's ``10 × concurrency``) with ``r`` = 0.8 keep the slots busy 95.6 % of the run;
with ``r`` = 0, and 5 requests per slot (the SGLang cookbook's), 82–84 %. Requests of one length (``r`` = 1) finish
together: no drain. One slot is never idle until the end: 1.

The wall time is list scheduling at constant speed, averaged over draws (:data:`SLOT_DRAWS`) of the lengths (a fixed
seed, so the same arguments give the same number). Real engines run the drain faster, as fewer requests share
each step, so this overstates its cost slightly: InferenceX's runs were busy 96–98 % of their wall time by
Little's law on their own published figures, where this gives 95–98 % (docs/performance-model.md §11).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from calculators.errors import InvalidInputError
from calculators.validation import positive_int

SLOT_DRAWS = 4096
"""Slot-runs the busy share is averaged over: ``SLOT_DRAWS / concurrency`` draws of the request lengths (at most
256, at least 4), as a run of many slots already averages over them."""


@lru_cache(maxsize=256)
def busy_share(concurrency: int, num_prompts: int, lengths_from: float) -> float:
    """Share of a closed-loop run's wall time its ``concurrency`` slots are busy [fraction, ≤ 1].

    ``num_prompts`` requests go through ``concurrency`` slots, the next waiting one into the first slot that
    frees; each takes a time in proportion to a length drawn uniformly from ``lengths_from × L`` to ``L``
    (``lengths_from`` 1: every request alike). Σ durations / (the slots used, ``min(concurrency, num_prompts)``,
    × the time the last one ends), the mean over draws (:data:`SLOT_DRAWS`). Two requests on two slots with
    ``lengths_from`` 0: ``E[(a + b) / (2 max(a, b))]`` = 1/2 + E[min/max]/2 = 0.75, as min/max of two uniforms is
    itself uniform.
    """
    c = int(positive_int("concurrency", concurrency, scalar=True))
    p = int(positive_int("num_prompts", num_prompts, scalar=True))
    if not 0.0 <= lengths_from <= 1.0:
        raise InvalidInputError("lengths_from", lengths_from, "a fraction from 0 to 1 of the stated length")
    if c == 1 or lengths_from == 1.0:
        return 1.0
    draws = int(np.clip(SLOT_DRAWS // c, 4, 256))
    rng = np.random.default_rng(0)
    durations = rng.uniform(lengths_from, 1.0, size=(draws, p))
    slots = min(c, p)
    wall = _last_end(durations, slots)
    return float(np.mean(durations.sum(axis=1) / (slots * wall)))


def _last_end(durations: np.ndarray, slots: int) -> np.ndarray:
    """When the last request ends [in units of the longest length], per draw (a row of ``durations``): the first
    ``slots`` requests start together, each later one in the slot that frees first (greedy list scheduling).

    The requests are placed a batch at a time, exactly as one at a time would place them: with the slots' free
    times sorted ``f₁ ≤ f₂ ≤ …``, the next requests ``d₁, d₂, …`` take slots 1, 2, … as long as each ``f_m`` comes
    no later than the earliest end ``min_{i<m}(f_i + d_i)`` of the batch's earlier requests (else one of those
    slots would free first and take request ``m``). With lengths from 0.8 L to L most slots free within 0.8 L of
    the first, so 8,192 slots and 81,920 requests take 10 batches, not 73,728 single steps (7 ms, not 0.55 s);
    lengths from 0 make short batches (951 for the same run, 0.29 s; 299 for 64 slots and 640 requests, 14 ms
    where one at a time takes 4 ms)."""
    free = np.sort(durations[:, :slots], axis=1)
    done = slots
    while done < durations.shape[1]:
        n = min(slots, durations.shape[1] - done)
        ends = free[:, :n] + durations[:, done:done + n]
        earliest = np.minimum.accumulate(ends, axis=1)
        in_order = np.concatenate([np.full((len(free), 1), True), free[:, 1:n] <= earliest[:, :-1]], axis=1)
        taken = int(np.min(np.where(in_order.all(axis=1), n, in_order.argmin(axis=1))))
        free = np.sort(np.concatenate([ends[:, :taken], free[:, taken:]], axis=1), axis=1)
        done += taken
    return free[:, -1]


__all__ = ["SLOT_DRAWS", "busy_share"]
