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
    free_at = durations[:, :slots].copy()  # the first requests start together, one per slot
    rows = np.arange(draws)
    for j in range(slots, p):
        first = np.argmin(free_at, axis=1)
        free_at[rows, first] += durations[:, j]
    wall = free_at.max(axis=1)
    return float(np.mean(durations.sum(axis=1) / (slots * wall)))


__all__ = ["SLOT_DRAWS", "busy_share"]
