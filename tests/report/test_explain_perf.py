"""'Show the math' of the performance pages formats a perf document's own figures (no recomputation)."""
from __future__ import annotations

from calculators.report.explain_perf import math_throughput


def _doc(**over):
    doc = {"concurrency": 24.0, "batch_size": 8, "output_len": 500, "input_len": 2000, "e2e_latency_s": 120.0,
           "ttft_s": 80.1, "tpot_s": 0.08, "output_tokens_per_s": 100.0, "output_tokens_per_s_per_gpu": 50.0,
           "request_overhead_s": 0.06, "queue_wait_s": 80.0}
    return {**doc, **over}


def test_throughput_is_littles_law_over_the_requests_in_flight():
    sub = math_throughput(_doc())["substituted"]
    # 24 in flight × 500 tokens ÷ 120 s = 100 tokens/s, the document's own figure
    assert sub.startswith("24 × 500 ÷ 120,000.00 ms = 100 tokens/s; per GPU 50")
    assert "60.00 ms outside the engine's steps and 80,000.00 ms waiting for one of 8 slots" in sub


def test_no_wait_is_mentioned_when_every_request_runs():
    sub = math_throughput(_doc(queue_wait_s=0.0))["substituted"]
    assert "waiting" not in sub and "60.00 ms outside the engine's steps" in sub
