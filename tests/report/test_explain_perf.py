"""'Show the math' of the performance pages formats a perf document's own figures (no recomputation), and its
printed arithmetic reproduces the result it prints."""
from __future__ import annotations

import re

from calculators.perf.roofline import Roofline
from calculators.report.explain_perf import math_step_time, math_throughput
from calculators.specs.catalog import get_gpu, get_model


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


def test_the_decode_steps_memory_arithmetic_adds_up_to_its_result():
    # A reader redoing the printed sums gets the printed memory time: the expert slowdown and the MLA attention's
    # bandwidth share are shown, not folded in silently (DeepSeek-R1 FP8, 8 × H200, 32 sequences at 4,096 tokens).
    r = Roofline(get_model("deepseek-ai/DeepSeek-R1"), get_gpu("H200"), tensor_parallel_size=8)
    sub = math_step_time(r, 32, 4096)["substituted"]
    m = re.search(r"memory = \(([\d.,]+) GB \+ ([\d.,]+) GB × ([\d.]+) touched × ([\d.]+) slower\) ÷ \(([\d,]+) GB/s × "
                  r"([\d.]+)\) \+ 32 × ([\d.,]+) MB KV ÷ \(([\d,]+) GB/s × ([\d.]+)\) = ([\d.,]+) ms", sub)
    assert m, sub
    dense, experts, touched, slow, bw, eff_m, kv, bw2, eff_kv, shown = (float(g.replace(",", "")) for g in m.groups())
    redone = (dense + experts * touched * slow) / (bw * eff_m) * 1e3 + 32 * kv / (bw2 * eff_kv)
    assert abs(redone - shown) / shown < 0.01
