"""Serving metrics under the three kinds of load, worked by hand on a constant-step model.

Model: a decode step takes 10 ms whatever the batch; a prompt token 0.1 ms (docs/performance-model.md §2).
"""
from __future__ import annotations

import numpy as np
import pytest

from calculators.errors import InvalidInputError
from calculators.perf.roofline import Roofline, decode_terms, mixed_terms
from calculators.perf.serving import (
    budget_running_cap,
    closed_loop_tpot_s,
    open_loop_metrics,
    prompt_service_time_s,
    request_tpot_quantile_s,
    serving_metrics,
    static_batch_metrics,
)
from calculators.sim.step_table import ConstantStepModel
from calculators.specs.catalog import get_gpu, get_model

PM = ConstantStepModel(decode_s=0.010, prefill_s_per_token=1e-4)


class Budgeted(ConstantStepModel):
    max_num_batched_tokens = 40  # tokens per step


class DecodesFirst(Budgeted):
    decodes_first = True  # vLLM's chunked prefill: the running decodes first, prompts in what the budget leaves


def test_static_batch_includes_the_whole_batch_prefill():
    m = static_batch_metrics(PM, 8, 100, 50)
    # prefill of 8 × 100 tokens = 80 ms; end-to-end = 80 + 49 × 10 = 570 ms; 8 × 50 tokens / 0.57 s
    assert float(m["ttft_s"]) == pytest.approx(0.080)
    assert float(m["e2e_latency_s"]) == pytest.approx(0.570)
    assert float(m["output_tokens_per_s"]) == pytest.approx(400 / 0.570)


def test_static_batch_beyond_the_running_cap_runs_in_waves():
    # 20 prompts, at most 8 run: waves of 8, 8 and 4. A full wave: prefill 8 × 100 tokens = 80 ms, then
    # 49 steps of 10 ms = 570 ms; the last: 40 + 490 = 530 ms. The 8 of wave 2 wait 570 ms, the 4 of wave 3
    # wait 1,140 ms: mean wait (8 × 570 + 4 × 1,140) / 20 = 456 ms; mean TTFT 456 + (16 × 80 + 4 × 40) / 20 =
    # 456 + 72 = 528 ms; mean end-to-end 456 + (16 × 570 + 4 × 530) / 20 = 456 + 562 = 1,018 ms; all done at
    # 570 + 570 + 530 = 1,670 ms: 20 × 50 tokens / 1.67 s.
    m = static_batch_metrics(PM, 20, 100, 50, max_running=8)
    assert float(m["queue_wait_s"]) == pytest.approx(0.456)
    assert float(m["ttft_s"]) == pytest.approx(0.528)
    assert float(m["e2e_latency_s"]) == pytest.approx(1.018)
    assert float(m["output_tokens_per_s"]) == pytest.approx(1000 / 1.670)
    # within the cap nothing waits: the same as no cap
    assert float(static_batch_metrics(PM, 8, 100, 50, max_running=8)["ttft_s"]) == pytest.approx(0.080)


def test_closed_loop_mixes_the_arriving_prompts_into_each_step():
    m = serving_metrics(PM, 8, 100, 50)
    # 8 × 100 / 50 = 16 prompt tokens join each step: 10 + 1.6 = 11.6 ms per output token
    assert float(m["tpot_s"]) == pytest.approx(0.0116)
    # the other 7 keep it busy: half a step (5.8 ms), then the 100-token prompt fused with 7 decodes (10 + 10 ms)
    assert float(m["ttft_s"]) == pytest.approx(0.0058 + 0.020)
    e2e = 0.0258 + 49 * 0.0116
    assert float(m["e2e_latency_s"]) == pytest.approx(e2e)
    assert float(m["requests_per_s"]) == pytest.approx(8 / e2e)  # Little's law


def test_closed_loop_runs_what_the_budget_cannot_mix_as_prefill_steps():
    # 8 × 1000 / 50 = 160 tokens a step wanted, 40 − 8 = 32 fit: 10 + 3.2 ms; the other
    # (160 − 32) × 50 = 6,400 tokens a cycle take 0.64 s of prefill: + 12.8 ms per output token
    assert float(closed_loop_tpot_s(Budgeted(0.010, 1e-4), 8, 1000, 50)) == pytest.approx(0.0132 + 0.0128)


def test_the_arriving_prompts_last_chunk_carries_only_the_remainder():
    """2 in flight, 80-token prompts, 1,000 output tokens, a budget of 40 tokens: beside the other's decode 39
    prompt tokens fit a step, so the prompt runs as chunks of 39, 39 and 2 tokens: 13.9 + 13.9 + 10.2 = 38.0 ms,
    not three full chunks (41.7 ms). Prompts are rare (λ = 0.002 a step), so TPOT is 10 ms and a bit: a step
    with a prompt is full (38 tokens beside 2 decodes, 13.8 ms, P = 1 − e^−0.002), and the 0.084 tokens a step
    that do not fit run as prefill (1.051 prompts of 80 tokens a cycle, 8.41 ms ÷ 1,000 steps): 10.016 ms.
    TTFT: half a step in flight, then the three chunks."""
    m = serving_metrics(Budgeted(0.010, 1e-4), 2, 80, 1000)
    assert float(m["tpot_s"]) == pytest.approx(0.010016, rel=1e-4)
    assert float(m["ttft_s"]) == pytest.approx(float(m["tpot_s"]) / 2 + 0.0380)


def test_an_arrival_waits_half_the_steps_between_the_schedulers_polls():
    """SGLang takes new requests in once every 30 decode steps: an arrival at a busy replica waits 15 steps on
    average (30 × 11.6 ms / 2 = 174 ms) instead of half a step (5.8 ms), then its prefill (20 ms). One user finds
    the replica idle, and an idle scheduler polls at once."""
    m = serving_metrics(ConstantStepModel(0.010, 1e-4, scheduler_recv_interval=30), 8, 100, 50)
    assert float(m["tpot_s"]) == pytest.approx(0.0116)
    assert float(m["ttft_s"]) == pytest.approx(0.174 + 0.020)
    one_user = serving_metrics(ConstantStepModel(0.010, 1e-4, scheduler_recv_interval=30), 1, 100, 50)
    assert float(one_user["ttft_s"]) == pytest.approx(0.0102)


def test_closed_loop_at_any_load_is_each_element_on_its_own_and_quick():
    """A step costs 10 ms + 0.1 ms per prompt token, with 40 − 1 = 39 budget tokens free beside one decode. At 1
    request in flight a 1,000-token prompt arrives every 50 steps (λ = 0.02): a step that gets one is full (13.9 ms)
    and P(K ≥ 1) = 1 − e^−0.02 = 0.019801, so the mean step is 10.07722 ms; the 20 − 39 × 0.019801 = 19.2278
    tokens a step beyond the budget are 0.96139 prompts a cycle of prefill, 96.139 ms / 50 = 1.92278 ms: 12.000 ms,
    every prompt token costing its 0.1 ms once. Evaluated beside a load of 10⁷ in flight, that element is unchanged
    (the Poisson sum is not shared), and the 10⁷-request element (λ = 2·10⁵) still returns at once: the sum stops
    where the budget is full."""
    pm = Budgeted(0.010, 1e-4)
    one = closed_loop_tpot_s(pm, np.array([1.0, 1e7]), 1000, 50)
    assert one[0] == pytest.approx(0.012) == float(closed_loop_tpot_s(pm, 1.0, 1000, 50))
    assert np.isfinite(one[1]) and one[1] > one[0]


def test_the_sum_over_prompts_per_step_is_the_same_in_blocks(monkeypatch):
    """The Poisson sum runs in blocks of ``k`` to bound its memory; blocks of one ``k`` (the loop it replaced) give
    the same mean and median steps to the last bit, at loads whose sums span tens of terms (λ = 64/20 … 1,024/20),
    and for a model that carries an array of its own (a calibration's grid of compute efficiencies)."""
    from dataclasses import replace

    from calculators.perf import serving
    from calculators.perf.roofline import Efficiencies
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"))
    grid = replace(r, efficiencies=Efficiencies(compute=np.linspace(0.3, 0.9, 7)[:, None]))
    n, i = np.array([1.0, 64.0, 256.0, 1024.0]), np.array([500.0, 2000.0, 2000.0, 6000.0])
    whole = [serving.closed_loop_steps_s(m, n, i, 20) for m in (r, grid)]
    monkeypatch.setattr(serving, "SUM_BLOCK_ELEMENTS", 1)
    for m, (mean, median) in zip((r, grid), whole, strict=True):
        one_by_one = serving.closed_loop_steps_s(m, n, i, 20)
        assert mean.shape == one_by_one[0].shape == median.shape
        assert np.array_equal(mean, one_by_one[0]) and np.array_equal(median, one_by_one[1])
    assert whole[1][0].shape == (7, 4)


def test_closed_loop_beyond_the_running_cap_waits_for_a_slot():
    m = serving_metrics(PM, 24, 100, 50, max_running=8)
    # 8 run as in the closed loop of 8 above (R = 25.8 + 49 × 11.6 = 594.2 ms, 8/R requests/s); the other 16
    # wait W = (24 − 8)/8 × R = 1,188.4 ms, which Little's law needs: 24 = (8/R) · (W + R)
    r = 0.0258 + 49 * 0.0116
    assert float(m["queue_wait_s"]) == pytest.approx(2 * r)
    assert float(m["ttft_s"]) == pytest.approx(2 * r + 0.0258)
    assert float(m["tpot_s"]) == pytest.approx(0.0116)
    assert float(m["requests_per_s"]) == pytest.approx(8 / r)
    assert float(serving_metrics(PM, 8, 100, 50, max_running=8)["queue_wait_s"]) == 0.0


def test_the_request_overhead_holds_no_slot_while_requests_wait_for_one():
    pm = ConstantStepModel(decode_s=0.010, prefill_s_per_token=1e-4, request_overhead_s=0.05)
    # R = 75.8 + 49 × 11.6 = 644.2 ms, of which 594.2 ms hold a slot: 8 slots serve 8/0.5942 requests/s, so
    # 24 users wait W = 24 × 0.5942/8 − 0.6442 = 1.1384 s, and 9 users 24.3 ms; 8.5 users never wait
    m = serving_metrics(pm, [24, 9, 8.5], 100, 50, max_running=8)
    np.testing.assert_allclose(m["queue_wait_s"], [1.1384, 0.024275, 0.0], atol=1e-9)
    np.testing.assert_allclose(m["requests_per_s"][:2], 8 / 0.5942, rtol=1e-9)


def test_the_request_overhead_adds_to_ttft_and_end_to_end_of_served_requests():
    pm = ConstantStepModel(decode_s=0.010, prefill_s_per_token=1e-4, request_overhead_s=0.05)
    closed = serving_metrics(pm, 8, 100, 50)
    assert float(closed["ttft_s"]) == pytest.approx(0.0258 + 0.05)  # the closed loop above, + 50 ms
    assert float(closed["tpot_s"]) == pytest.approx(0.0116)  # no GPU time
    assert float(closed["requests_per_s"]) == pytest.approx(8 / (0.0758 + 49 * 0.0116))
    ol = open_loop_metrics(pm, 5.0, 100, 50)  # in the engine: λ × (end-to-end − 50 ms), the rest holds no slot
    assert float(ol["concurrency"]) == pytest.approx(5.0 * (float(ol["e2e_latency_s"]) - 0.05), rel=1e-6)
    assert float(ol["requests_per_s"]) == pytest.approx(5.0, rel=1e-6) and float(ol["ttft_s"]) > 0.05
    static = static_batch_metrics(pm, 8, 100, 50)  # offline, in the engine: no API server
    assert float(static["ttft_s"]) == pytest.approx(0.080)


def test_one_user_finds_the_replica_idle():
    # Nobody decoding and no step in flight: the prefill alone (10 ms), but at least one TPOT, 10 + 100/50 × 0.1
    # = 10.2 ms: the replica completes its one request per cycle of 50 steps (510 ms, Little's law), of which
    # 49 steps follow the first token.
    m = serving_metrics(PM, 1, 100, 50)
    assert float(m["ttft_s"]) == pytest.approx(0.0102)
    assert float(m["e2e_latency_s"]) == pytest.approx(50 * float(m["tpot_s"]))


def test_a_closed_loop_of_prompts_waits_for_their_prefill():
    """Outputs of one token: every request in flight waits for prefill. 16 prompts of 1,000 tokens each cycle:
    16,000 prompt tokens, 8,192 − 16 = 8,176 of them in the one mixed step (10 + 817.6 ms) and the other 7,824
    in prefill-only steps (782.4 ms): a cycle of 1,610 ms, which is the TTFT (Little's law: 16 requests per
    cycle), not the half step and one chunk the decode view would give."""
    m = serving_metrics(PM, 16, 1000, 1)
    assert float(m["tpot_s"]) == pytest.approx(1.610)
    assert float(m["ttft_s"]) == pytest.approx(float(m["tpot_s"]))
    assert float(m["requests_per_s"]) == pytest.approx(16 / float(m["e2e_latency_s"]))


def test_the_median_inter_token_latency_is_the_median_step():
    # 8 in flight, 50 output tokens: λ = 0.16 prompts a step, P(no prompt) = e^−0.16 = 0.85, so the median gap
    # is the bare 10 ms step while TPOT (the mean) is 11.6 ms. 64 in flight: λ = 1.28, P(0) = 0.28 and
    # P(≤ 1) = 0.63, so the median step carries one 100-token prompt: 10 + 10 = 20 ms; TPOT 10 + 12.8 = 22.8 ms
    m = serving_metrics(PM, np.array([8.0, 64.0]), 100, 50)
    np.testing.assert_allclose(m["itl_median_s"], [0.010, 0.020])
    np.testing.assert_allclose(m["tpot_s"], [0.0116, 0.0228])
    # a static batch decodes without arriving prompts: every gap is the decode step
    assert float(static_batch_metrics(PM, 8, 100, 50)["itl_median_s"]) == pytest.approx(0.010)


def test_open_loop_solves_littles_law_and_says_when_overloaded():
    m = open_loop_metrics(PM, 5.0, 100, 50, max_num_seqs=64)
    n = float(m["concurrency"])
    assert n == pytest.approx(5.0 * float(m["e2e_latency_s"]), rel=1e-6) and not bool(m["overloaded"])
    assert float(m["requests_per_s"]) == pytest.approx(5.0, rel=1e-6)
    # 64 in flight: TPOT = 10 + 64 × 100/50 × 0.1 = 22.8 ms; ~1.2 s per request → ~55 requests/s at most
    over = open_loop_metrics(PM, 500.0, 100, 50, max_num_seqs=64)
    assert bool(over["overloaded"]) and np.isinf(float(over["ttft_s"]))
    assert float(over["concurrency"]) == pytest.approx(64)


def test_open_loop_caps_broadcast_and_bind_when_overloaded():
    # a client's --max-concurrency of 8 or 64 at 500 req/s: each a closed loop of its cap,
    # TPOT 10 + 8 × 100/50 × 0.1 = 11.6 ms and 10 + 64 × 2 × 0.1 = 22.8 ms
    m = open_loop_metrics(PM, 500.0, 100, 50, max_num_seqs=np.array([8, 64]))
    np.testing.assert_allclose(m["concurrency"], [8, 64])
    np.testing.assert_allclose(m["tpot_s"], [0.0116, 0.0228])
    with pytest.raises(InvalidInputError, match="max_num_seqs"):
        open_loop_metrics(PM, 5.0, 100, 50, max_num_seqs=np.array([8, 0]))


@pytest.mark.parametrize("field, lengths", [("input_len", (0.5, 50)), ("output_len", (100, 1e-300)),
                                             ("input_len", (float("nan"), 50)), ("output_len", (100, -3))])
def test_a_mean_length_below_one_token_is_refused_with_its_field(field, lengths):
    """A request has at least one prompt and one output token; a smaller mean (1e-300 tokens made the closed loop's
    arrivals per step overflow into NaN) is refused, naming the field, in every load mode."""
    for call in (lambda: serving_metrics(PM, 4, *lengths), lambda: open_loop_metrics(PM, 5.0, *lengths),
                 lambda: static_batch_metrics(PM, 4, *lengths)):
        with pytest.raises(InvalidInputError, match=field):
            call()


def test_a_prompts_service_is_its_share_of_a_step_that_fills_the_token_budget():
    """100 decodes beside prompt chunks fill vLLM's default budget of 8,192 tokens with 8,092 prompt tokens: a step
    of 10 ms + 8,092 × 0.1 ms = 819.2 ms, of which a 1,000-token prompt's share is 1,000/8,092 = 101.24 ms."""
    assert float(prompt_service_time_s(PM, 100, 1000, 100)) == pytest.approx(1000 * 0.8192 / 8092, rel=1e-12)
    # a batch beyond the budget leaves one token of room a step: the prompt takes 1,000 steps of 10.1 ms
    assert float(prompt_service_time_s(PM, 10_000, 1000, 100)) == pytest.approx(1000 * (0.010 + 1e-4), rel=1e-12)


def test_a_mixed_step_without_prompt_tokens_is_a_decode_step():
    r = Roofline(get_model("meta-llama/Llama-3.1-70B-Instruct"), get_gpu("H100"), tensor_parallel_size=4)
    b, ctx = np.array([1.0, 16, 256]), np.array([[512.0], [8192.0]])
    mixed = mixed_terms(r.coefficients, r.efficiencies, b, ctx, 0.0, 2048, 1)["step_s"]
    np.testing.assert_allclose(mixed, decode_terms(r.coefficients, r.efficiencies, b, ctx, 1)["step_s"])
    # prompt tokens only add time, and a fused step costs less than a decode step plus a separate prefill
    fused = r.mixed_step_time_s(16, 2048, 512, 2048)
    assert r.decode_step_time_s(16, 2048) < fused < r.decode_step_time_s(16, 2048) + r.prefill_time_s(512, 1)


def test_request_tpot_quantile_worked_by_hand():
    """8 in flight at 13.5 requests/s (100 in, 50 out): the bare step is 10 ms, a prompt adds 100 × 0.1 = 10 ms
    (the mean, 11.6 ms, is 10 + 8/50 × 10). The decode lasts 50 × 10 ms = 0.5 s; ρ = 13.5 × 0.01 = 0.135,
    λD = 6.75; √μ = (0.135z + √((0.135z)² + 4 × 0.865 × (6.75 + 0.135c))) / 1.73 = 3.00132, μ = 9.00792,
    K = 9.00792 + 2.32635 × 3.00132 + 0.73532 = 16.7254; p99 TPOT = 10 + 16.7254 × 10 / 50 = 13.345 ms. With at
    most 8 running the slots are full, and a full batch's mean, 11.6 ms, caps it."""
    free = request_tpot_quantile_s(PM, 8, 100, 50, arrival_rate_per_s=13.5, wait_s=0.0, max_running=np.inf)
    assert float(free) == pytest.approx(0.013345, abs=2e-7)
    full = request_tpot_quantile_s(PM, 8, 100, 50, arrival_rate_per_s=13.5, wait_s=0.0, max_running=8)
    assert float(full) == pytest.approx(0.0116)
    # a request that waited 0.2 s meets the 2.7 prompts more that arrived meanwhile, at the p99 too
    waited = request_tpot_quantile_s(PM, 8, 100, 50, arrival_rate_per_s=13.5, wait_s=0.2, max_running=np.inf)
    assert float(waited) > float(free) + 2.7 * 0.010 / 50


class Growing(ConstantStepModel):
    """A decode step of 10 ms + 0.5 ms per sequence; a prompt token 0.1 ms, fused into the step."""

    def decode_step_time_s(self, batch_size, context_tokens):
        return 0.010 + 0.0005 * np.asarray(batch_size, dtype=np.float64) + 0 * np.asarray(context_tokens)

    def mixed_step_time_s(self, batch_size, context_tokens, prefill_tokens, prompt_tokens):
        p = np.asarray(prefill_tokens, dtype=np.float64)
        decode = np.where(np.asarray(batch_size) > 0, self.decode_step_time_s(batch_size, context_tokens), 0.0)
        return decode + np.where(p > 0, self.per_token * p, 0.0)


def test_request_tpot_quantile_prices_the_step_with_the_requests_that_decode_beside_it():
    """8 in flight at 13.5 requests/s (100 in, 50 out) on a step that grows 0.5 ms a sequence: d(8) = 14 ms, the mean
    TPOT 14 + 8/50 × 10 = 15.6 ms, so a prompt adds p = 10 ms. The decode lasts 50 × 14 ms = 0.7 s: ρ = 0.135,
    λD = 9.45; √μ = (0.135z + √((0.135z)² + 3.46 × (9.45 + 0.135c))) / 1.73 = 3.509083, μ = 12.31366,
    K = 12.31366 + 2.326348 × 3.509083 + 0.735316 = 21.21232. Beside it decode 8 × (1 + 21.21232 / 12.31366) / 2 =
    10.89066 requests: d = 10 + 0.5 × 10.89066 = 15.44533 ms, and p99 TPOT = 15.44533 + 21.21232 × 10 / 50 =
    19.68779 ms."""
    model = Growing(prefill_s_per_token=1e-4)
    assert float(closed_loop_tpot_s(model, 8, 100, 50)) == pytest.approx(0.0156)
    got = request_tpot_quantile_s(model, 8, 100, 50, arrival_rate_per_s=13.5, wait_s=0.0, max_running=np.inf)
    assert float(got) == pytest.approx(0.01968779, abs=2e-8)
    # no more than the slots hold decode beside it: at most 9 of them, d = 14.5 ms
    capped = request_tpot_quantile_s(model, 8, 100, 50, arrival_rate_per_s=13.5, wait_s=0.0, max_running=9)
    assert float(capped) == pytest.approx(min(0.0145 + 21.21232 * 0.010 / 50, 0.0145 + 9 / 50 * 0.010), abs=2e-8)


def test_an_engine_that_runs_decodes_first_admits_what_its_budget_leaves_room_for():
    """A budget of 40 tokens, 20-token prompts and 20-token answers: each step gives the running requests a token
    each and prompts the rest, so the batch settles where prompts enter as fast as requests leave, 40 × 20 / 40 = 20
    running, every step full: 10 ms + 20 prompt tokens × 0.1 ms = 12 ms a token. At 30 in flight the other 10 wait
    for admission: a running request's TTFT is half a step (6 ms) and its prompt beside 19 decodes (12 ms), its
    end-to-end R = 18 + 19 × 12 = 246 ms, and Little's law makes the wait 30 × 246 / 20 − 246 = 123 ms. An engine
    that runs prompts first keeps all 30 and fits their 30 tokens a step into prefill-only steps: 13 ms a token."""
    first = DecodesFirst(0.010, 1e-4)
    assert float(budget_running_cap(first, 20, 20)) == 20
    assert float(budget_running_cap(Budgeted(0.010, 1e-4), 20, 20)) == np.inf
    m = serving_metrics(first, 30, 20, 20)
    assert float(m["tpot_s"]) == pytest.approx(0.012)
    assert float(m["queue_wait_s"]) == pytest.approx(0.123)
    assert float(m["ttft_s"]) == pytest.approx(0.123 + 0.018)
    assert float(m["requests_per_s"]) == pytest.approx(20 / 0.246)
    assert float(serving_metrics(first, 20, 20, 20)["queue_wait_s"]) == 0.0
    assert float(serving_metrics(Budgeted(0.010, 1e-4), 30, 20, 20)["tpot_s"]) == pytest.approx(0.013)
    # an open loop beyond what 20 running serve (20 / 0.246 = 81.3 requests/s) is overloaded
    assert bool(open_loop_metrics(first, 90.0, 20, 20)["overloaded"])
    assert not bool(open_loop_metrics(first, 70.0, 20, 20)["overloaded"])


def test_which_engines_run_decodes_first():
    m, g = get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM")
    assert Roofline(m, g).decodes_first and Roofline(m, g, engine="vllm-v1-piecewise").decodes_first
    assert not Roofline(m, g, engine="vllm-v0").decodes_first
    assert Roofline(m, g, engine="vllm-v0", enable_chunked_prefill=True).decodes_first
    assert not Roofline(m, g, engine="sglang", enable_chunked_prefill=True).decodes_first
