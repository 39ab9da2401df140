"""calculators.sim.analysis and calculators.report.explain_sim against hand-worked values.

Closed forms: Kleinrock, *Queueing Systems Vol. 1* (1975) §3.2 (M/M/1 W_q = ρ/(μ − λ)) and §5.6
(M/D/1 W_q = ρ/(2μ(1 − ρ))); Little (1961) L = λW, finite-horizon form (Stidham 1974).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from calculators.planning.queueing import md1_mean_wait_s, mm1_mean_wait_s
from calculators.report import explain_sim as ex
from calculators.sim import analysis as an
from calculators.sim.engine import simulate
from calculators.sim.policies import SLO, ContinuousBatching, StaticBatching
from calculators.sim.step_table import ConstantStepModel
from calculators.sim.sweeps import summarise_max_num_seqs
from calculators.sim.workload import Constant, Fixed, LogNormal, Poisson, make_workload

ONE_SERVER = ContinuousBatching(max_num_seqs=1, max_num_batched_tokens=100_000)
PM = ConstantStepModel(decode_s=0.01, prefill_s_per_token=1e-4)


@pytest.fixture(scope="module")
def md1_run():
    # batch 1, every request one prefill of 100 tokens at 0.1 ms/token: deterministic S = 10 ms; λ = 50/s (ρ = 0.5)
    wl = make_workload(Poisson(50), 100, 1, num_requests=8000, seed=1)
    return simulate(ConstantStepModel(prefill_s_per_token=1e-4), wl, ONE_SERVER)


@pytest.fixture(scope="module")
def busy_run():
    wl = make_workload(Poisson(8), LogNormal(300, 800), LogNormal(60, 150), duration_s=30, seed=2)
    return simulate(PM, wl, ContinuousBatching(max_num_seqs=16, num_blocks=2000), duration_s=30,
                    slo=SLO(0.5, 0.02))


@pytest.fixture(scope="module")
def overloaded_run():
    wl = make_workload(Constant(50), Fixed(200), Fixed(100), duration_s=20, seed=0)
    return simulate(PM, wl, StaticBatching(max_batch_size=4, max_wait_ms=10), duration_s=20)


def test_percentile_table_is_the_run_in_ms(busy_run):
    t = ex.percentile_table(busy_run)
    assert list(t["metric"]) == ["TTFT", "TPOT", "ITL", "end-to-end", "queue wait"]
    assert t.loc[0, "p99 [ms]"] == pytest.approx(busy_run.latency["ttft"]["p99"] * 1e3)
    assert t.loc[3, "p50 [ms]"] == pytest.approx(busy_run.latency["e2e"]["p50"] * 1e3)
    assert (t["p99 [ms]"] >= t["p95 [ms]"]).all() and (t["p95 [ms]"] >= t["p50 [ms]"]).all()


@pytest.mark.parametrize("run", ["md1_run", "busy_run", "overloaded_run"])
def test_little_law_holds_on_drained_and_cut_off_runs(run, request):
    res = request.getfixturevalue(run)
    chk = an.little_check(res)
    assert chk.ok and chk.relative_gap < 1e-9
    assert chk.L == pytest.approx(chk.lambda_per_s * chk.W_s)
    m = ex.math_little(chk)
    assert "L = λ·W" in m["formula"] and f"{chk.L:,.3f}" in m["substituted"] and m["sources"]


def test_little_on_a_drained_run_is_the_classic_form(md1_run):
    assert md1_run.stop_reason == "completed"
    chk = an.little_check(md1_run)
    r = md1_run.requests
    classic = md1_run.completed / md1_run.elapsed_s * r.loc[r.finished, "e2e_s"].mean()
    assert chk.lambda_W == pytest.approx(classic, rel=1e-12)


def test_md1_and_mm1_substitute_the_run(md1_run):
    f = an.service_figures(md1_run)
    assert f["service_s"] == pytest.approx(0.01)           # 100 tokens × 0.1 ms
    assert f["mu_per_s"] == pytest.approx(100.0)           # mean batch 1 / 10 ms
    assert f["lambda_per_s"] == pytest.approx(50, rel=0.05)
    cf = an.closed_forms(md1_run, 1)
    md1 = ex.math_md1(cf, md1_run.mean_batch_size)
    # W_q = ρ/(2μ(1−ρ)) ≈ 0.5 / (2·100·0.5) = 5 ms; M/M/1 twice that
    assert cf.md1_wait_s == pytest.approx(float(md1_mean_wait_s(f["lambda_per_s"], 0.01)))
    assert cf.mm1_wait_s == pytest.approx(2 * cf.md1_wait_s)
    assert cf.md1_wait_s == pytest.approx(0.005, rel=0.15)
    assert md1_run.latency["queue_wait"]["mean"] == pytest.approx(cf.md1_wait_s, rel=0.1)  # the run agrees
    assert "ρ = " in ex.math_mm1(cf)["substituted"]
    assert "ρ / (2μ(1 − ρ))" in md1["formula"] and "μ = 1.00 / 0.010 s = 100.000/s" in md1["substituted"]


def test_erlang_c_with_one_server_is_mm1(md1_run):
    cf = an.closed_forms(md1_run, 1)
    f = cf.figures
    assert float(cf.erlang_c.mean_wait_s) == pytest.approx(float(mm1_mean_wait_s(f["lambda_per_s"], f["service_s"])))
    assert "c = 1" in ex.math_erlang_c(cf)["substituted"]


def test_unstable_queue_says_so(overloaded_run):
    cf = an.closed_forms(overloaded_run, 4)
    assert math.isinf(cf.md1_wait_s) and "ρ ≥ 1" in ex.math_md1(cf, overloaded_run.mean_batch_size)["substituted"]


def test_overload_text(busy_run, overloaded_run):
    assert not busy_run.overloaded and ex.overload_text(busy_run, 8) is None
    assert overloaded_run.overloaded
    text = ex.overload_text(overloaded_run, 50.0)
    f = overloaded_run.overload_factor
    assert f"{f:.2f}×" in text and f"{f - 1:.0%} too much" in text and "Offered 50.00 req/s" in text


def test_timeline_frame_bins_time_weighted(busy_run):
    ts = busy_run.timeseries
    f = an.timeline_frame(busy_run, max_points=100)
    assert len(f) <= 100 < len(ts)
    assert list(f.columns) == ["time_s", "queue_depth", "batch_size", "kv_usage"]
    assert f["batch_size"].max() <= ts["batch_size"].max() and f["batch_size"].min() >= 0
    assert f["time_s"].is_monotonic_increasing
    small = an.timeline_frame(busy_run, max_points=10**9)
    assert len(small) == len(ts)


def test_latency_cdf(busy_run):
    for m in ("ttft", "tpot", "itl", "e2e", "queue_wait"):
        c = an.latency_cdf(busy_run, m, max_points=50)
        assert 0 < len(c) <= 50
        assert c["fraction"].iloc[-1] == pytest.approx(1.0)
        assert np.all(np.diff(c["latency_ms"]) >= 0) and np.all(np.diff(c["fraction"]) >= 0)
    c = an.latency_cdf(busy_run, "e2e", max_points=10**6)
    assert c["latency_ms"].max() == pytest.approx(busy_run.requests["e2e_s"].max() * 1e3)


def test_compare_table_and_ratio(busy_run, overloaded_run):
    t = ex.compare_table(busy_run, overloaded_run)
    row = t[t["quantity"] == "requests/s"].iloc[0]
    assert row["A ÷ B"] == pytest.approx(busy_run.request_throughput_per_s / overloaded_run.request_throughput_per_s)
    assert an.throughput_ratio(busy_run, overloaded_run) == pytest.approx(row["A ÷ B"])
    assert "TTFT p99 [ms]" in set(t["quantity"])


def test_math_throughput(busy_run):
    m = ex.math_throughput(busy_run, SLO(0.5, 0.02))
    assert f"{busy_run.completed:,} / {busy_run.elapsed_s:,.2f} s" in m["substituted"]
    assert "TTFT ≤ 500 ms and TPOT ≤ 20 ms" in m["substituted"]


def test_sweep_knee_and_slo():
    # gains per doubling: 1→2 +90 %, 2→4 +84 %, 4→8 +8.6 % (< 15 %): knee 4
    f = pd.DataFrame({"max_num_seqs": [16, 1, 2, 4, 8], "request_throughput_per_s": [3.9, 1.0, 1.9, 3.5, 3.8],
                      "ttft_p99_s": [3.0, 0.1, 0.2, 0.5, 2.0], "tpot_p99_s": [0.01] * 5,
                      "overloaded": [True, False, False, False, False]})
    def points(frame, slo=None):
        s = summarise_max_num_seqs(frame, slo)
        return s.knee, s.slo_point
    assert points(f, SLO(ttft_s=1.0)) == (4.0, 4.0)
    assert points(f, None) == (4.0, 8.0)  # 16 is overloaded
    assert points(f, SLO(tpot_s=0.001))[1] is None
    assert points(f.iloc[:0]) == (None, None)


def test_sweep_grid():
    assert an.sweep_grid(16) == [1, 2, 4, 8, 16]
    assert an.sweep_grid(24) == [1, 2, 4, 8, 16, 24]
    assert an.sweep_grid(1) == [1]
