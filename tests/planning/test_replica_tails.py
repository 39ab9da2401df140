"""The tail latencies of one replica at its share of the load: the waits before a prefill, the replicas a p99
TTFT target needs."""
from __future__ import annotations

import numpy as np

from calculators.planning.fleet import Workload
from calculators.planning.queueing import replica_ttft_wait_p99_s
from calculators.planning.replica_tails import TtftQueue, replicas_for_ttft


def test_replicas_for_ttft_is_the_fewest_that_meets_the_target():
    """Against a brute-force scan of replica counts: the search finds the first count whose p99 wait for a slot
    and for the token budget fits the budget, whether that is the throughput bound, a few above it, or far above
    (the doubling, then the bisection)."""
    w = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0)
    b = np.array([1.0, 4.0, 32.0, 256.0, 8.0])
    e2e_s = np.array([2.0, 4.0, 6.0, 12.0, 5.0])
    prompt_s = np.array([0.05, 0.1, 0.2, 0.01, 0.1])
    prefill_s = np.array([0.2, 0.3, 0.5, 0.6, 1.2])  # the last misses on its prefill alone
    start = np.ceil(40 / (0.8 * b / e2e_s))
    queue = TtftQueue(e2e_s, b.astype(np.int64), prompt_s, slot_cv=1.0, prompt_cv=0.0)
    got = replicas_for_ttft(w, start, prefill_s, queue, np.ones(5, dtype=bool))
    for i in range(4):
        n = np.arange(start[i], start[i] + 20_000)
        fits = replica_ttft_wait_p99_s(40 / n, e2e_s[i], b[i], prompt_s[i], slot_cv=1.0) <= 1.0 - prefill_s[i]
        assert fits.any() and got[i] == n[np.argmax(fits)], i
    assert got[4] == np.inf
    assert got[3] == start[3] and start[2] < got[2] < 4 * start[2] and got[0] > 32 * start[0]  # every path
