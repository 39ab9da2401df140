"""The simulator and the closed forms are one truth: on stable loads they agree within 15 %, the scheduler's
polling interval (SGLang) included.

Both use the performance model's fused step (a decode step with the arriving prompts' tokens, weights read
once). The closed form averages the step over a Poisson number of arriving prompts; the simulator draws
them. Warm-up is left out of the simulation's statistics.
"""
from __future__ import annotations

import pytest

from calculators.perf.roofline import Roofline
from calculators.perf.serving import open_loop_metrics, serving_metrics
from calculators.sim.engine import simulate
from calculators.sim.policies import ContinuousBatching, kv_blocks
from calculators.sim.workload import ClosedLoop, LogNormal, Poisson, make_workload
from calculators.specs.catalog import get_gpu, get_model

MODEL, GPU = get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100")
PM = Roofline(MODEL, GPU)
BLOCKS, BLOCK = kv_blocks(MODEL, GPU, max_model_len=16384)
POLICY = ContinuousBatching(num_blocks=BLOCKS, block_size=BLOCK)


def _lengths(i: float, o: float) -> tuple[LogNormal, LogNormal]:
    return LogNormal(i, 1.5 * i), LogNormal(o, 1.5 * o)


@pytest.mark.parametrize(("users", "input_len", "output_len"), [(8, 512, 128), (32, 2000, 300), (64, 1000, 200)])
def test_closed_loop_tpot_and_throughput(users, input_len, output_len):
    wl = make_workload(ClosedLoop(users), *_lengths(input_len, output_len), num_requests=users * 25, seed=1)
    whole = simulate(PM, wl, POLICY)
    sim = simulate(PM, wl, POLICY, warmup_s=0.2 * whole.elapsed_s)
    closed = serving_metrics(PM, users, input_len, output_len)
    assert sim.latency["tpot"]["mean"] == pytest.approx(float(closed["tpot_s"]), rel=0.15)
    assert sim.request_throughput_per_s == pytest.approx(float(closed["requests_per_s"]), rel=0.15)


def test_open_loop_tpot_and_concurrency():
    wl = make_workload(Poisson(8), *_lengths(2000, 300), duration_s=150, seed=2)
    sim = simulate(PM, wl, POLICY, duration_s=150, warmup_s=20)
    opened = open_loop_metrics(PM, 8, 2000, 300)
    assert not sim.overloaded and not bool(opened["overloaded"])
    assert sim.latency["tpot"]["mean"] == pytest.approx(float(opened["tpot_s"]), rel=0.15)
    assert sim.mean_batch_size == pytest.approx(float(opened["concurrency"]), rel=0.15)


@pytest.mark.parametrize("k", [1, 30])
def test_closed_loop_ttft_with_the_schedulers_polling_interval(k):
    # SGLang's --scheduler-recv-interval k: the closed form adds k · TPOT / 2 at a busy replica; the simulator
    # polls every k decode steps (at once after a prompt's step). At k = 30 the wait is most of the TTFT.
    pm = Roofline(MODEL, GPU, scheduler_recv_interval=k)
    wl = make_workload(ClosedLoop(32), *_lengths(1000, 300), num_requests=32 * 25, seed=1)
    whole = simulate(pm, wl, POLICY)
    sim = simulate(pm, wl, POLICY, warmup_s=0.2 * whole.elapsed_s)
    closed = serving_metrics(pm, 32, 1000, 300)
    assert sim.latency["ttft"]["mean"] == pytest.approx(float(closed["ttft_s"]), rel=0.15)


def test_closed_loop_beyond_what_the_token_budget_admits():
    """128 users of 2,000-token prompts and 100-token answers with a budget of 2,048 tokens a step: vLLM runs the
    decodes first, so prompts enter only as fast as the budget the decodes leave, and the running batch settles at
    2,048 × 100 / 2,100 = 97 (the simulator's mean: 98). The others wait for admission: TTFT near 2 s, TPOT one
    full step. Priced as if prompts went first, TPOT would be 76 ms and TTFT 0.14 s."""
    budget = 2048
    pm = Roofline(MODEL, GPU, max_num_batched_tokens=budget)
    policy = ContinuousBatching(num_blocks=BLOCKS, block_size=BLOCK, max_num_batched_tokens=budget)
    wl = make_workload(ClosedLoop(128), *_lengths(2000, 100), num_requests=128 * 25, seed=1)
    whole = simulate(pm, wl, policy)
    sim = simulate(pm, wl, policy, warmup_s=0.2 * whole.elapsed_s)
    closed = serving_metrics(pm, 128, 2000, 100)
    assert sim.mean_batch_size == pytest.approx(97, rel=0.05)
    assert sim.latency["tpot"]["mean"] == pytest.approx(float(closed["tpot_s"]), rel=0.15)
    assert sim.latency["ttft"]["mean"] == pytest.approx(float(closed["ttft_s"]), rel=0.15)
    assert sim.request_throughput_per_s == pytest.approx(float(closed["requests_per_s"]), rel=0.15)
