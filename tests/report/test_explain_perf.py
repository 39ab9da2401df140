"""'Show the math' of the performance pages formats a perf document's own figures (no recomputation), and its
printed arithmetic reproduces the result it prints."""
from __future__ import annotations

import re

import pytest

from calculators.perf.roofline import Roofline, crossover_batch_size
from calculators.report.explain_perf import math_crossover, math_step_time, math_throughput
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


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def test_the_decode_steps_printed_arithmetic_adds_up_to_its_result():
    # A reader redoing the printed sums gets each printed term and the printed step: the experts' compute share,
    # the FP8 share, the expert slowdown and the MLA attention's bandwidth share are shown, not folded in silently
    # (DeepSeek-R1 FP8, 8 × H200, 32 sequences at 4,096 tokens).
    r = Roofline(get_model("deepseek-ai/DeepSeek-R1"), get_gpu("H200"), tensor_parallel_size=8)
    sub = math_step_time(r, 32, 4096)["substituted"]
    n = r"([\d.,]+)"
    lin = re.search(rf"linear = 32 × \({n} GFLOP \+ {n} GFLOP of experts × \(1 ÷ {n} − 1\)\) ÷ \({n} TFLOP/s × "
                    rf"{n} × {n}\) = {n} ms", sub)
    wts = re.search(rf"weights = \({n} GB \+ {n} GB × {n} touched × {n} slower\) ÷ \({n} GB/s × {n}\) = {n} ms", sub)
    att = re.search(rf"attention = 32 × {n} GFLOP ÷ \({n} TFLOP/s × {n} × {n}\) = {n} ms", sub)
    kv = re.search(rf"KV = 32 × {n} MB ÷ \({n} GB/s × {n}\) = {n} ms", sub)
    tot = re.search(rf"= {n} ms; all-reduce {n} ms; overhead \(per step, sequence and layer\) {n} ms → "
                    rf"step = TPOT = {n} ms", sub)
    assert lin and wts and att and kv and tot, sub
    f, fx, s_moe, peak, eff_c, s_dtype, shown = (_num(g) for g in lin.groups())
    assert abs(32 * (f + fx * (1 / s_moe - 1)) / (peak * eff_c * s_dtype) - shown) / shown < 0.02
    dense, experts, touched, slow, bw, eff_m, shown_w = (_num(g) for g in wts.groups())
    assert abs((dense + experts * touched * slow) / (bw * eff_m) * 1e3 - shown_w) / shown_w < 0.01
    fa, peak16, eff_a, s_attn, shown_a = (_num(g) for g in att.groups())
    assert eff_a == eff_c                                     # attention multiplies in 16 bits: no FP8 share
    assert abs(32 * fa / (peak16 * eff_a * s_attn) - shown_a) / shown_a < 0.02
    kvb, bw2, eff_kv, shown_kv = (_num(g) for g in kv.groups())
    assert abs(32 * kvb / (bw2 * eff_kv) - shown_kv) / shown_kv < 0.01
    kernels, allreduce, overhead, step = (_num(g) for g in tot.groups())
    assert kernels == pytest.approx(max(shown, shown_w) + max(shown_a, shown_kv), abs=0.02)
    assert step == pytest.approx(kernels + allreduce + overhead, abs=0.02)


def test_the_crossovers_printed_arithmetic_gives_the_crossover():
    # DeepSeek-R1 on 8 × H200 at 1,024 tokens: the printed t_F, redone from its printed FLOP, peaks and shares, and
    # B* = t_W ÷ (t_F − t_KV) from the printed terms give the printed crossover (the bisection's, experts included).
    r = Roofline(get_model("deepseek-ai/DeepSeek-R1"), get_gpu("H200"), tensor_parallel_size=8)
    b_star = float(crossover_batch_size(r, 1024))
    sub = math_crossover(r, 1024, b_star)["substituted"]
    n = r"([\d.,]+)"
    tf = re.search(rf"t_F = \({n} GFLOP \+ {n} GFLOP × \(1 ÷ {n} − 1\)\) ÷ \({n} T × {n} × {n}\) \+ {n} GFLOP ÷ "
                   rf"\({n} T × {n} × {n}\) = {n} µs", sub)
    tail = re.search(rf"t_KV = {n} MB .* = {n} µs at C = 1,024; t_W = {n} ms .*; B\* = {n} ms ÷ {n} µs = {n} "
                     "sequences", sub)
    assert tf and tail, sub
    f, fx, s_moe, peak, eff_c, s_dtype, fa, peak16, eff_a, s_attn, t_f = (_num(g) for g in tf.groups())
    redone = (f + fx * (1 / s_moe - 1)) / (peak * eff_c * s_dtype) + fa / (peak16 * eff_a * s_attn)
    assert redone * 1e3 == pytest.approx(t_f, rel=0.02)                  # GFLOP ÷ TFLOP/s = ms; shown in µs
    _, t_kv, t_w, _, gap, shown = (_num(g) for g in tail.groups())
    assert gap == pytest.approx(t_f - t_kv, abs=0.02)
    assert t_w * 1e3 / gap == pytest.approx(shown, rel=0.01) and shown == pytest.approx(b_star, abs=1)


def test_a_divisor_is_printed_to_four_significant_digits():
    from calculators.report.explain_perf import _significant
    assert [_significant(x) for x in (0.30662, 12.3456, 1234.4, 0.0012345, 0.0)] == [
        "0.3066", "12.35", "1,234", "0.001234", "0"]


@pytest.mark.parametrize("workload", [
    dict(request_rate_per_s=10, input_len=1000, output_len=200, ttft_p99_s=1.0, tpot_p99_s=0.05),  # slots bind
    dict(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0),  # the token budget binds
])
def test_the_latency_budget_at_the_plans_batch_and_replicas_gives_the_plans_p99_ttft_and_tpot(workload):
    """One truth: the Latency budget page's TTFT (queue + prefill) and p99 TPOT at a fleet plan's batch and
    replicas are that plan's, whichever queue binds."""
    from calculators.planning.fleet import Layout, Workload, plan_layout
    from calculators.report.explain_perf import budget_at_batch
    w = Workload(**workload)
    big = w.input_len == 2000
    m = get_model("meta-llama/Llama-3.1-70B-Instruct" if big else "meta-llama/Llama-3.1-8B")
    g, tp = get_gpu("H100"), 4 if big else 1
    plan = plan_layout(m, Layout(g, tp), w, max_model_len=8192)
    r = Roofline(m, g, tensor_parallel_size=tp, max_num_batched_tokens=8192)
    view = budget_at_batch(r, batch=plan.batch_size, input_len=w.input_len, output_len=w.output_len,
                           request_rate_per_s=w.request_rate_per_s, replicas=plan.replicas, target_s=60.0)
    assert view["budget"]["ttft_s"] == pytest.approx(plan.ttft_p99_s, rel=1e-9)
    assert view["tpot_p99_s"] == pytest.approx(plan.tpot_p99_s, rel=1e-9)
    assert view["budget"]["decode_s"] == pytest.approx((w.output_len - 1) * plan.tpot_p99_s, rel=1e-9)
    binding = view["prompt_wait_p99_s"] if big else view["wait_p99_s"]
    assert binding > max(view["wait_p99_s"], view["prompt_wait_p99_s"]) / 2


def test_a_budget_the_prompts_overload_is_unstable_though_the_slots_are_not():
    """Llama-3.1-8B on one H100, 8,000-token prompts and 20-token outputs at 4 requests/s over 256 slots: the
    slots are 86 % busy, but the prompts need more than the steps' 8,192-token budget can prefill (ρ_p > 1), so
    the queue before the first token grows without bound and no budget is stated."""
    from calculators.report.explain_perf import budget_at_batch
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100"), max_num_batched_tokens=8192)
    view = budget_at_batch(r, batch=256, input_len=8000, output_len=20, request_rate_per_s=4, replicas=1,
                           target_s=10.0)
    assert view["utilisation"] < 1 <= view["prompt_utilisation"]
    assert not view["stable"] and view["budget"] is None


def test_the_step_arithmetic_says_when_a_layer_all_reduces_three_times():
    # MiniMax-M2.5 normalises q and k over all heads, so at TP 8 its printed all-reduce says three a layer, and the
    # figure is 62 × (2 hidden-state all-reduces + one of 8 bytes a token) at the fitted latency over 900 GB/s
    r = Roofline(get_model("MiniMaxAI/MiniMax-M2.5"), get_gpu("B200"), tensor_parallel_size=8)
    sub = math_step_time(r, 16, 1000)["substituted"]
    hit = re.search(r"all-reduce ([\d.,]+) ms \(three a layer: q and k are normalised over all heads\); overhead", sub)
    assert hit, sub
    lat = r.efficiencies.allreduce_latency_s
    by_hand_ms = 62 * (2 * (1.75 * 16 * 3072 * 2 / 900e9 + lat) + 1.75 * 16 * 8 / 900e9 + lat) * 1e3
    assert _num(hit.group(1)) == pytest.approx(by_hand_ms, rel=0.01)
    qwen = math_step_time(Roofline(get_model("Qwen/Qwen3-8B"), get_gpu("H100"), tensor_parallel_size=2), 16,
                          1000)["substituted"]
    assert "three a layer" not in qwen


def test_an_all_reduce_over_pcie_shows_what_it_is_priced_at():
    # Llama-3.1-70B at TP 4 on L40S (no NVLink): the printed all-reduce names NCCL over PCIe with the latency and
    # link share it was priced at, and redone by hand from them (2 × 80 all-reduces of 2·3/4 · 16 · 8,192 · 2 B over
    # that share of 32 GB/s, plus the latency each) gives the printed figure; on H100s (NVLink) no such clause.
    m = get_model("meta-llama/Llama-3.1-70B")
    r = Roofline(m, get_gpu("L40S"), tensor_parallel_size=4)
    sub = math_step_time(r, 16, 1000)["substituted"]
    n = r"([\d.,]+)"
    hit = re.search(rf"all-reduce {n} ms \(NCCL over PCIe: {n} µs each, {n} of {n} GB/s\); overhead", sub)
    assert hit, sub
    shown_ms, latency_us, share, link_gb = (_num(g) for g in hit.groups())
    assert link_gb == 32
    by_hand_ms = 160 * (1.5 * 16 * 8192 * 2 / (share * link_gb * 1e9) + latency_us * 1e-6) * 1e3
    assert shown_ms == pytest.approx(by_hand_ms, rel=0.01)
    nvlink = math_step_time(Roofline(m, get_gpu("H100"), tensor_parallel_size=4), 16, 1000)["substituted"]
    assert "NCCL over PCIe" not in nvlink and re.search(rf"all-reduce {n} ms; overhead", nvlink)
