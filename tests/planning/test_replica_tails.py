"""The tail latencies of one replica at its share of the load: the waits before a prefill, the p99 TPOT as the load
rises, and the replicas each target needs."""
from __future__ import annotations

import numpy as np
import pytest

from calculators.perf.roofline import Roofline
from calculators.perf.serving import request_tpot_quantile_s, serving_metrics, slot_time_s
from calculators.planning.fleet import Workload
from calculators.planning.queueing import mg1_wait_quantile_s, replica_ttft_wait_p99_s
from calculators.planning.replica_tails import (
    TpotCurve,
    TtftQueue,
    replicas_for_tpot,
    replicas_for_ttft,
    tpot_curve,
    ttft_queue,
)
from calculators.specs.catalog import get_gpu, get_model


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


def test_tpot_curve_max_rate_interpolates_between_its_points():
    # p99 TPOT 10, 20, 30 ms at 1, 2, 3 requests/s: 25 ms is met up to 2.5/s; 5 ms nowhere; 40 ms at the full batch
    curve = TpotCurve(np.array([[1.0, 2.0, 3.0]] * 3), np.array([[0.010, 0.020, 0.030]] * 3))
    assert curve.max_rate_per_s(0.025).tolist() == pytest.approx([2.5] * 3)
    assert curve.max_rate_per_s(0.005).tolist() == [0.0] * 3
    assert curve.max_rate_per_s(0.040).tolist() == [3.0] * 3
    assert TpotCurve(curve.rate_per_s[1:2], curve.p99_s[1:2]).p99_at_s(2.5) == pytest.approx(0.025)
    # 10 requests/s at 2.5 per replica: 4 replicas; a target no load meets: none
    assert replicas_for_tpot(Workload(10, 100, 50, tpot_p99_s=0.025), curve).tolist() == [4.0] * 3
    assert np.isinf(replicas_for_tpot(Workload(10, 100, 50, tpot_p99_s=0.005), curve)).all()


def test_tpot_curve_prices_each_point_at_the_rate_its_in_flight_count_serves():
    """Llama-3.1-8B on an H100, 2,000 in / 300 out: each column is ``n`` in flight at ``n / slot time``
    requests/s (Little), with that rate's waits; the p99 rises with the load up to the full batch's mean TPOT."""
    w = Workload(request_rate_per_s=10, input_len=2000, output_len=300)
    pm = Roofline(get_model("meta-llama/Llama-3.1-8B-Instruct"), get_gpu("H100"))
    b = np.array([16.0, 64.0])
    m = serving_metrics(pm, b, 2000, 300)
    queue = ttft_queue(pm, w, b, slot_time_s(pm, m["e2e_latency_s"]))
    curve = tpot_curve(pm, w, b, queue)
    assert (np.diff(curve.rate_per_s, axis=1) > 0).all() and (np.diff(curve.p99_s, axis=1) >= 0).all()
    assert curve.p99_s[:, -1] == pytest.approx(m["tpot_s"], rel=1e-9)  # the full batch caps it
    n = 64.0 * np.geomspace(1e-3, 1.0, curve.rate_per_s.shape[1])[10]
    rate = curve.rate_per_s[1, 10]
    assert rate == pytest.approx(n / float(slot_time_s(pm, serving_metrics(pm, n, 2000, 300)["e2e_latency_s"])))
    wait = mg1_wait_quantile_s(rate, queue.prompt_s[1], 0.0, 0.99)  # the wait for the token budget (fixed lengths)
    alone = request_tpot_quantile_s(pm, n, 2000, 300, arrival_rate_per_s=rate, wait_s=float(wait), max_running=64)
    assert curve.p99_s[1, 10] == pytest.approx(float(alone), rel=1e-9)
