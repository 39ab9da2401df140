"""Queueing formulas against hand-worked textbook values, an exact-fraction Erlang sum and small simulations.

References: Kleinrock, *Queueing Systems Vol. 1* (1975) §3.2 (M/M/1), §3.5 (M/M/m, Erlang C),
§5.6 (Pollaczek–Khinchine); Gross & Harris, *Fundamentals of Queueing Theory* (1998) §2.3;
Halfin & Whitt, "Heavy-traffic limits for queues with many exponential servers", Oper. Res. 29 (1981).
"""
from __future__ import annotations

import heapq
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.errors import InvalidInputError
from calculators.planning.queueing import (
    batched_server_wait,
    erlang_c,
    max_arrival_rate_for_wait,
    md1_mean_wait_s,
    mg1_mean_wait_s,
    mg1_wait_quantile_s,
    mm1_mean_wait_s,
    mmc_wait,
    mmc_wait_quantile_s,
    poisson_quantile,
    prompts_during_decode_quantile,
    replica_ttft_wait_p99_s,
    users_per_gpu,
)

FIELDS = ("utilisation", "stable", "probability_of_wait", "mean_wait_s", "p95_wait_s", "p99_wait_s",
          "mean_response_s", "mean_in_system")


def erlang_c_exact(c: int, a: Fraction) -> float:
    """Kleinrock eq. 3.40 as printed, in exact rationals: (a^c/c!)·c/(c−a) / (Σ_{k<c} a^k/k! + same)."""
    tail = a**c / math.factorial(c) * c / (c - a)
    return float(tail / (sum(a**k / math.factorial(k) for k in range(c)) + tail))


# --------------------------------------------------------------------------- Erlang C values


def test_erlang_c_two_servers_one_erlang():
    # c=2, a=1: Σ_{k<2} a^k/k! = 1 + 1 = 2; tail = (1/2)·2/(2−1) = 1; C = 1/(2+1) = 1/3.
    assert float(erlang_c(2, 1.0)) == pytest.approx(1 / 3, rel=1e-12)


def test_erlang_c_ten_servers_eight_erlangs():
    # c=10, a=8: Σ_{k<10} 8^k/k! = 2136.2268; tail = 8^10/10! · 10/2 = 295.8945 · 5 = 1479.4723;
    # C = 1479.4723 / (2136.2268 + 1479.4723) = 0.40918.
    assert float(erlang_c(10, 8.0)) == pytest.approx(0.40918, abs=5e-5)


def test_erlang_c_one_server_is_utilisation():
    # M/M/1: C = ρ (Kleinrock §3.2: an arrival waits iff the server is busy, P = ρ).
    rho = np.array([0.0, 0.1, 0.5, 0.9, 0.999])
    np.testing.assert_allclose(erlang_c(1, rho), rho, rtol=1e-12)


def test_call_centre_example():
    # Call centre: 100 calls per 30 min with 180 s handling → λ = 1/18 per s, a = 10 Erlangs, 14 agents.
    # Σ_{k<14} 10^k/k! = 19,041.10; tail = 10^14/14! · 14/(14 − 10) = 1,147.075 · 3.5 = 4,014.761;
    # C = 4,014.761 / (19,041.10 + 4,014.761) = 0.17413.
    # ASA = C·S/(c − a) = 0.17413·180/4 = 7.836 s; service level P(W ≤ 20 s) = 1 − C·e^{−4·20/180} = 0.8884.
    r = mmc_wait(100 / 1800, 180.0, 14)
    assert float(r.probability_of_wait) == pytest.approx(0.17413, abs=5e-5)
    assert float(r.mean_wait_s) == pytest.approx(7.836, abs=1e-3)
    assert float(r.utilisation) == pytest.approx(10 / 14)
    service_level = 1 - float(r.probability_of_wait) * math.exp(-4 * 20 / 180)
    assert service_level == pytest.approx(0.8884, abs=1e-4)


def test_four_servers_at_three_quarters_load():
    # M/M/4, a = 3: Σ_{k<4} 3^k/k! = 1 + 3 + 4.5 + 4.5 = 13; tail = 81/24 · 4/1 = 13.5; C = 13.5/26.5 = 0.509434.
    r = mmc_wait(3.0, 1.0, 4)
    assert float(r.probability_of_wait) == pytest.approx(27 / 53, rel=1e-12)
    assert float(r.mean_wait_s) == pytest.approx(27 / 53, rel=1e-12)  # W_q = C/(cμ − λ) = C/1


@settings(max_examples=200, deadline=None)
@given(c=st.integers(1, 60), load=st.fractions(Fraction(0), Fraction(999, 1000), max_denominator=1000))
def test_erlang_c_matches_the_exact_textbook_sum(c, load):
    a = load * c
    assert float(erlang_c(c, float(a))) == pytest.approx(erlang_c_exact(c, a), rel=1e-9, abs=1e-300)


def test_erlang_c_large_c_matches_halfin_whitt():
    # Halfin & Whitt (1981): with β = (1 − ρ)√c, C → [1 + β·Φ(β)/φ(β)]^{-1}. c = 10,000, a = 9,900 → β = 1;
    # Φ(1) = 0.841345, φ(1) = 0.241971 → C ≈ 1/(1 + 3.47705) = 0.22336; the error is O(1/√c) = O(1 %).
    c = np.array([10_000, 10_000, 10_000])
    a = np.array([9_900.0, 5_000.0, 9_999.0])
    got = erlang_c(c, a)
    assert np.all(np.isfinite(got)) and np.all((got >= 0) & (got <= 1))
    assert got[0] == pytest.approx(0.22336, rel=0.03)
    assert got[1] < 1e-100 and got[2] > got[0]


def test_erlang_c_large_c_same_by_either_internal_method():
    # Many configurations take the recurrence path, few the log-space sum; both must give Halfin–Whitt's value.
    many = erlang_c(np.full(200, 10_000), np.full(200, 9_900.0))
    assert np.allclose(many, float(erlang_c(10_000, 9_900.0)), rtol=1e-9)


# --------------------------------------------------------------------------- M/M/1, M/D/1, M/G/1


def test_mm1_worked_example():
    # λ = 0.5/s, S = 1 s: ρ = 0.5, C = ρ = 0.5, W_q = ρ/(μ − λ) = 0.5/0.5 = 1 s, W = 2 s, L = λW = 1.
    # p95: P(W_q > t) = 0.5·e^{−0.5 t} = 0.05 → t = ln(0.5/0.05)/0.5 = 2 ln 10 = 4.60517 s; p99 = 2 ln 50 = 7.82405 s.
    r = mmc_wait(0.5, 1.0, 1)
    assert float(r.utilisation) == 0.5 and bool(r.stable)
    assert float(r.probability_of_wait) == pytest.approx(0.5)
    assert float(r.mean_wait_s) == pytest.approx(1.0)
    assert float(r.p95_wait_s) == pytest.approx(4.60517, abs=1e-5)
    assert float(r.p99_wait_s) == pytest.approx(7.82405, abs=1e-5)
    assert float(r.mean_response_s) == pytest.approx(2.0)
    assert float(r.mean_in_system) == pytest.approx(1.0)
    assert float(mm1_mean_wait_s(0.5, 1.0)) == pytest.approx(1.0)


def test_quantile_zero_when_most_requests_do_not_wait():
    # M/M/1 at ρ = 0.04: C = 0.04 < 1 − 0.95, so more than 95 % start at once: p95 wait = 0.
    assert float(mmc_wait(0.04, 1.0, 1).p95_wait_s) == 0.0
    # ρ = 0.1: C = 0.1 > 0.05 → p95 = ln(0.1/0.05)/(1 − 0.1) = 0.693147/0.9 = 0.770164 s.
    assert float(mmc_wait_quantile_s(0.1, 1.0, 1, quantile=0.95)) == pytest.approx(0.770164, abs=1e-6)


def test_md1_and_pollaczek_khinchine():
    # M/D/1, λ = 0.5, S = 1: W_q = ρ/(2μ(1 − ρ)) = 0.5/(2·1·0.5) = 0.5 s.  λ = 0.7: 0.7/(2·0.3) = 7/6 s.
    assert float(md1_mean_wait_s(0.5, 1.0)) == pytest.approx(0.5)
    # λ = 0.35/s, S = 2 s: ρ = 0.7, W_q = ρS/(2(1 − ρ)) = 0.7·2/0.6 = 2.33333 s.
    assert float(md1_mean_wait_s(0.35, 2.0)) == pytest.approx(7 / 3)
    # P-K: λ(1 + cv²)S²/(2(1 − ρ)); cv = 0 → M/D/1 = 0.5 s; cv = 1 → M/M/1 = 1 s; cv = 2 → 5/2 · 1 = 2.5 s.
    assert float(mg1_mean_wait_s(0.5, 1.0, 0.0)) == pytest.approx(0.5)
    assert float(mg1_mean_wait_s(0.5, 1.0, 1.0)) == pytest.approx(1.0)
    assert float(mg1_mean_wait_s(0.5, 1.0, 2.0)) == pytest.approx(2.5)


# --------------------------------------------------------------------------- batched server


def test_batched_server_allen_cunneen():
    # c = 1 and cv = 0: (1 + 0)/2 · W_q(M/M/1) = 0.5 · 1 s = 0.5 s, exactly the M/D/1 value above.
    r = batched_server_wait(0.5, 1.0, 1, service_cv=0.0)
    assert float(r.mean_wait_s) == pytest.approx(0.5)
    assert float(r.p95_wait_s) == pytest.approx(4.60517 / 2, abs=1e-5)  # quantiles scaled by the same factor
    assert float(r.probability_of_wait) == pytest.approx(0.5)  # Erlang C itself is not scaled
    assert float(r.mean_response_s) == pytest.approx(1.5)
    # c = 4, a = 3 (C = 27/53 above), cv = 2: W_q = 27/53 · (1 + 4)/2 = 1.273585 s.
    assert float(batched_server_wait(3.0, 1.0, 4, service_cv=2.0).mean_wait_s) == pytest.approx(27 / 53 * 2.5)


# --------------------------------------------------------------------------- simulations


def simulate_mmc_mean_wait(lam: float, service_s: float, c: int, n: int, seed: int) -> float:
    """FIFO c-server queue: each arrival takes the earliest-free server (Kiefer–Wolfowitz recursion)."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / lam, n)).tolist()
    services = rng.exponential(service_s, n).tolist()
    free = [0.0] * c
    waits = []
    for t, s in zip(arrivals, services, strict=True):
        start = max(t, free[0])
        heapq.heapreplace(free, start + s)
        waits.append(start - t)
    return float(np.mean(waits[n // 20:]))  # drop the first 5 % as warm-up


def test_simulated_mmc_matches_erlang_c():
    # c = 4, ρ = 0.7 (λ = 2.8/s, S = 1 s): analytic W_q = C(4, 2.8)/(4 − 2.8) = 0.42865/1.2 = 0.35721 s.
    # 10^6 arrivals (≈0.8 s): across seeds the simulated mean falls within about ±2 % of the formula.
    sim = simulate_mmc_mean_wait(2.8, 1.0, 4, 1_000_000, seed=7)
    assert float(mmc_wait(2.8, 1.0, 4).mean_wait_s) == pytest.approx(0.35721, abs=1e-5)
    assert sim == pytest.approx(float(mmc_wait(2.8, 1.0, 4).mean_wait_s), rel=0.05)


def test_simulated_md1_matches_formula():
    # Lindley: W_{n+1} = max(0, W_n + S − A_{n+1}); with X_n = Σ_{j<n}(S − A_{j+1}), W_n = X_n − min_{k≤n} X_k.
    rng = np.random.default_rng(11)
    lam, service_s, n = 0.7, 1.0, 200_000
    x = np.concatenate(([0.0], np.cumsum(service_s - rng.exponential(1 / lam, n - 1))))
    waits = x - np.minimum.accumulate(x)
    # ρ = 0.7: W_q = 0.7/(2·1·0.3) = 1.16667 s.
    assert float(md1_mean_wait_s(lam, service_s)) == pytest.approx(7 / 6)
    assert float(np.mean(waits[n // 20:])) == pytest.approx(7 / 6, rel=0.05)


# --------------------------------------------------------------------------- shapes, instability, errors


def test_vectorised_equals_scalar_loop():
    rng = np.random.default_rng(3)
    n = 300
    c = rng.integers(1, 200, n)
    s = rng.uniform(0.05, 20.0, n)
    lam = rng.uniform(0.0, 1.2, n) * c / s  # about 1 in 6 unstable
    cv = rng.uniform(0.0, 2.0, n)
    vec = mmc_wait(lam, s, c)
    batched = batched_server_wait(lam, s, c, service_cv=cv)
    for i in range(n):
        one = mmc_wait(lam[i], s[i], c[i])
        one_b = batched_server_wait(lam[i], s[i], c[i], service_cv=cv[i])
        for f in FIELDS:
            np.testing.assert_allclose(getattr(vec, f)[i], getattr(one, f), rtol=1e-9)
            np.testing.assert_allclose(getattr(batched, f)[i], getattr(one_b, f), rtol=1e-9)
    assert np.count_nonzero(~vec.stable) > 10


def test_broadcast_shapes():
    r = mmc_wait(np.array([[1.0], [2.0]]), 0.5, np.array([1, 2, 3]))
    assert all(getattr(r, f).shape == (2, 3) for f in FIELDS)
    assert erlang_c(3, 1.0).shape == ()
    assert max_arrival_rate_for_wait(np.array([1.0, 2.0]), np.array([[1], [4], [8]]), target_wait_s=0.1).shape == (3, 2)
    assert users_per_gpu(np.ones((2, 1)), np.ones(3), active_fraction=0.5, gpus=1).shape == (2, 3)


@pytest.mark.parametrize("lam", [1.0, 2.0, 1e9])
def test_unstable_is_a_result(lam):
    # ρ = λ·S/c ≥ 1: waits grow without bound → inf, every arrival waits, no NaN, no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = mmc_wait(lam, 1.0, 1)
        b = batched_server_wait(lam, 1.0, 1, service_cv=0.0)
        w = [mm1_mean_wait_s(lam, 1.0), md1_mean_wait_s(lam, 1.0), mg1_mean_wait_s(lam, 1.0, 0.5)]
    for q in (r, b):
        assert float(q.utilisation) == lam and not bool(q.stable)
        assert float(q.probability_of_wait) == 1.0
        for f in ("mean_wait_s", "p95_wait_s", "p99_wait_s", "mean_response_s", "mean_in_system"):
            assert getattr(q, f) == np.inf
    assert all(x == np.inf for x in w)


def test_mg1_wait_quantile_by_hand():
    """λ = 5/s, S = 0.1 s (ρ = 0.5). M/M/1 (cv 1) exactly: P(W > t) = ρ·e^{−(μ−λ)t}, μ − λ = 5/s, so
    t_0.99 = ln(0.5/0.01)/5 = 0.7824 s. M/D/1 (cv 0): the wait given one has the Pollaczek–Khinchine mean
    S/(2(1 − ρ)) = 0.1 s, t_0.99 = 0.1 × ln 50 = 0.3912 s. Below ρ = 1 − p nobody in p waits; at ρ ≥ 1 it is
    unbounded."""
    assert float(mg1_wait_quantile_s(5, 0.1, 1.0)) == pytest.approx(math.log(50) / 5, rel=1e-12)
    assert float(mg1_wait_quantile_s(5, 0.1, 0.0)) == pytest.approx(0.1 * math.log(50), rel=1e-12)
    assert float(mg1_wait_quantile_s(5, 0.1, 0.0, 0.4)) == 0.0            # ρ = 0.5 ≤ 1 − 0.4: p of them never wait
    assert float(mg1_wait_quantile_s(0.05, 0.1, 0.0)) == 0.0              # ρ = 0.005 < 0.01
    assert math.isinf(float(mg1_wait_quantile_s(10, 0.1, 0.0)))
    np.testing.assert_allclose(mg1_wait_quantile_s(np.array([5.0, 8.0]), 0.1, 0.0),
                               [0.1 * math.log(50), 0.1 / (2 * 0.2) * math.log(80)])


def test_a_replicas_ttft_wait_adds_the_slot_and_the_token_budget_p99s():
    """4 slots of 2 s at 1.5 requests/s (M/M/c) and prompts of 0.1 s for the budget (M/D/1, ρ = 0.15): the p99s
    of the two waits, one after the other, add."""
    slot = float(batched_server_wait(1.5, 2.0, 4, service_cv=1.0).p99_wait_s)
    budget = 0.1 / (2 * 0.85) * math.log(15)
    assert slot > 0 and float(replica_ttft_wait_p99_s(1.5, 2.0, 4, 0.1, slot_cv=1.0)) == pytest.approx(slot + budget)
    with pytest.raises(InvalidInputError, match="prompt|service_time_s"):
        replica_ttft_wait_p99_s(1.5, 2.0, 4, 0.0)


def test_zero_arrivals_never_wait():
    r = mmc_wait(0.0, 2.0, 3)
    assert float(r.mean_wait_s) == 0 and float(r.p99_wait_s) == 0 and float(r.mean_in_system) == 0
    assert float(r.mean_response_s) == 2.0


@pytest.mark.parametrize(("call", "field"), [
    (lambda: mmc_wait(-1.0, 1.0, 1), "arrival_rate_per_s"),
    (lambda: mmc_wait(1.0, 1.0, 0), "servers"),
    (lambda: mmc_wait(1.0, 1.0, 2.5), "servers"),
    (lambda: mmc_wait(1.0, float("nan"), 1), "service_time_s"),
    (lambda: mmc_wait(np.array([1.0, np.nan]), 1.0, 1), "arrival_rate_per_s"),
    (lambda: erlang_c(0, 1.0), "servers"),
    (lambda: erlang_c(2, -1.0), "offered_load"),
    (lambda: erlang_c(2, "a lot"), "offered_load"),
    (lambda: md1_mean_wait_s(1.0, 0.0), "service_time_s"),
    (lambda: mg1_mean_wait_s(1.0, 1.0, -0.1), "service_cv"),
    (lambda: batched_server_wait(1.0, 1.0, 0), "max_batch"),
    (lambda: batched_server_wait(1.0, 1.0, 8, service_cv=np.inf), "service_cv"),
    (lambda: users_per_gpu(1.0, 1.0, active_fraction=0.0, gpus=1), "active_fraction"),
    (lambda: users_per_gpu(1.0, 1.0, active_fraction=0.5, gpus=0), "gpus"),
    (lambda: max_arrival_rate_for_wait(1.0, 1, target_wait_s=-1.0), "target_wait_s"),
    (lambda: max_arrival_rate_for_wait(1.0, 1, target_wait_s=1.0, quantile=1.0), "quantile"),
    (lambda: mmc_wait_quantile_s(1.0, 1.0, 2, quantile=0.0), "quantile"),
])
def test_invalid_input_names_the_field(call, field):
    with pytest.raises(InvalidInputError) as err:
        call()
    assert err.value.field == field


# --------------------------------------------------------------------------- sizing


def test_users_per_gpu_littles_law():
    # 10 req/s × 2 s = 20 requests in flight (L = λW); users active 10 % of the time → 200 users; 4 GPUs → 50.
    assert float(users_per_gpu(10.0, 2.0, active_fraction=0.1, gpus=4)) == pytest.approx(50.0)


def test_max_arrival_rate_hand_values():
    # M/M/1, S = 1 s: W_q = ρ/(1 − ρ) = 1 s ⇔ ρ = 0.5 ⇔ λ = 0.5/s.
    assert float(max_arrival_rate_for_wait(1.0, 1, target_wait_s=1.0)) == pytest.approx(0.5, rel=1e-9)
    # M/M/1, S = 1 s, p95 = ln(ρ/0.05)/(1 − ρ) = 2 ln 10 at ρ = 0.5 (worked example above) → λ = 0.5/s.
    got = max_arrival_rate_for_wait(1.0, 1, target_wait_s=2 * math.log(10), quantile=0.95)
    assert float(got) == pytest.approx(0.5, rel=1e-9)
    # Target 0 for the p95: largest ρ with C = ρ ≤ 0.05 → λ = 0.05/s; for the mean: only λ = 0.
    assert float(max_arrival_rate_for_wait(1.0, 1, target_wait_s=0.0, quantile=0.95)) == pytest.approx(0.05)
    assert float(max_arrival_rate_for_wait(1.0, 1, target_wait_s=0.0)) == 0.0


@settings(max_examples=60, deadline=None)
@given(s=st.floats(0.01, 30.0), c=st.integers(1, 300), target=st.floats(1e-3, 100.0),
       q=st.sampled_from([None, 0.5, 0.95, 0.99]))
def test_max_arrival_rate_inverts_the_wait(s, c, target, q):
    lam = max_arrival_rate_for_wait(s, c, target_wait_s=target, quantile=q)
    assert 0 <= lam < c / s
    wait = mmc_wait(lam, s, c).mean_wait_s if q is None else mmc_wait_quantile_s(lam, s, c, quantile=q)
    assert wait <= target * (1 + 1e-12)  # errs on the safe side
    # The wait is continuous and increasing in λ and unbounded as λ → c/S, so at the root it meets the target.
    assert float(wait) == pytest.approx(target, rel=1e-6)


def _exact_poisson_quantile(mu: float, q: float) -> int:
    """The smallest k with P(K ≤ k) ≥ q for a Poisson count of mean mu, by summing its probabilities."""
    k, cdf = 0, 0.0
    while True:
        cdf += math.exp(k * math.log(mu) - mu - math.lgamma(k + 1))
        if cdf >= q:
            return k
        k += 1


@pytest.mark.parametrize("q", [0.9, 0.99])
@pytest.mark.parametrize("mu", [1, 2, 5, 10, 20, 50, 100, 400])
def test_poisson_quantile_lies_within_one_of_the_exact_integer_quantile(mu, q):
    assert abs(float(poisson_quantile(mu, q)) - _exact_poisson_quantile(mu, q)) <= 1


def test_poisson_quantile_by_hand_and_at_no_arrivals():
    # μ = 20, p = 0.99: z = 2.32635, 20 + 2.32635 × √20 + (2.32635² − 1)/6 = 20 + 10.4038 + 0.7353 = 31.139
    assert float(poisson_quantile(20, 0.99)) == pytest.approx(31.139, abs=1e-3)
    assert float(poisson_quantile(0, 0.99)) == 0.0


def _simulated_prompts_p99(lam: float, wait_s: float, decode_s: float, prompt_s: float, trials: int) -> float:
    """Monte Carlo: Poisson arrivals at lam, each one that lands before the decode ends extends it by prompt_s."""
    rng = np.random.default_rng(7)
    t, end, k = np.zeros(trials), np.full(trials, wait_s + decode_s), np.zeros(trials)
    open_ = np.ones(trials, dtype=bool)
    while open_.any():
        t[open_] += rng.exponential(1 / lam, open_.sum())
        open_ &= t <= end
        k[open_] += 1
        end[open_] += prompt_s
    return float(np.quantile(k, 0.99))


def test_prompts_during_decode_by_hand_and_against_a_simulation():
    # λ = 2/s, W = 0.1 s, D = 6 s, p = 0.1 s: ρ = 0.2, λ(W + D) = 12.2, z = 2.32635, c = 0.73532;
    # √μ = (0.2z + √((0.2z)² + 4 × 0.8 × (12.2 + 0.2c))) / 1.6 = (0.46527 + 6.30295) / 1.6 = 4.23014, μ = 17.894;
    # K = 17.894 + 2.32635 × 4.23014 + 0.73532 = 28.470 (and μ = 12.2 + 0.2 K: the fixed point)
    assert float(prompts_during_decode_quantile(2, 0.1, 6, 0.1)) == pytest.approx(28.470, abs=2e-3)
    for args in ((2, 0.1, 6, 0.1), (13.5, 0.0, 0.5, 0.01), (5, 0.5, 3, 0.08)):
        assert float(prompts_during_decode_quantile(*args)) == pytest.approx(
            _simulated_prompts_p99(*args, trials=20_000), abs=1.5), args


def test_prompts_during_decode_without_arrivals_or_beyond_saturation():
    assert float(prompts_during_decode_quantile(0, 0.0, 6, 0.1)) == 0.0
    assert np.isinf(prompts_during_decode_quantile(10, 0.0, 6, 0.1))  # ρ = 1: prompts alone fill the replica
    assert np.isinf(prompts_during_decode_quantile(2, np.inf, 6, 0.1))  # an unstable queue before it
    with pytest.raises(InvalidInputError, match="wait_s"):
        prompts_during_decode_quantile(2, -1.0, 6, 0.1)
