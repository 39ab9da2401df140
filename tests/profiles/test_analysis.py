"""Measured knee, SLO point, goodput and the overlay of a measured profile (calculators/profile_analysis.py).

Expected numbers are read by hand from the four vLLM v0.8.3 request-rate sweep files in
tests/fixtures/profiles/ (Llama-3.3-70B-Instruct, 8x A100-40GB, TP8, ShareGPT, 200 prompts each).
"""
from __future__ import annotations

import numpy as np
import pytest

from calculators.errors import InvalidInputError
from calculators.perf.calibration import calibrate, profile_points
from calculators.perf.roofline import Roofline
from calculators.profiles import analysis as pa
from calculators.profiles import detect_and_load, load_many
from calculators.report import explain_profiles as ex
from calculators.specs.catalog import get_gpu, get_model
from tests.conftest import FIXTURES

VLLM_SWEEP = sorted((FIXTURES / "profiles").glob("vllm-benchmark_serving-v0.8.3_*_qps-*.trimmed.json"))

# A hand-made generic CSV: B = concurrency exactly (TPOT mean = concurrency / output tok/s), goodput given,
# no p99 TPOT (only p90). Throughput 100, 190, 340, 380, 400 tok/s at concurrency 1, 2, 4, 8, 16.
GENERIC = """concurrency,output_tokens_per_s,request_throughput_per_s,request_goodput_per_s,tpot_s_mean,tpot_s_p90,\
ttft_ms_p50,ttft_ms_p99
1,100,0.5,0.5,0.01,0.011,20,30
2,190,0.95,0.95,0.0105263157894737,0.012,22,35
4,340,1.7,1.6,0.0117647058823529,0.014,25,60
8,380,1.9,1.2,0.0210526315789474,0.025,40,300
16,400,2.0,0.4,0.04,0.05,90,1500
"""


@pytest.fixture(scope="module")
def sweep():
    assert len(VLLM_SWEEP) == 4
    return load_many([(p.name, p.read_bytes()) for p in VLLM_SWEEP])


@pytest.fixture(scope="module")
def frame(sweep):
    return pa.profile_frame(sweep)


@pytest.fixture(scope="module")
def generic():
    return pa.profile_frame(detect_and_load("sweep.csv", GENERIC.encode()))


def test_frame_in_load_order_with_littles_law_batch(frame):
    assert list(frame["request_rate_per_s"]) == [1.0, 4.0, 16.0, np.inf]
    assert list(frame["label"]) == ["rate 1/s", "rate 4/s", "rate 16/s", "rate inf (all at once)"]
    # qps-01: output_throughput 208.177 tok/s × mean_tpot_ms 24.564 ms = 5.114 sequences
    assert frame["batch_size"].iloc[0] == pytest.approx(208.17717816867716 * 0.024564414268982128)
    # qps-inf: 1,780.36 tok/s × 39.063 ms = 69.55 sequences
    assert frame["batch_size"].iloc[3] == pytest.approx(69.5455, rel=1e-4)
    # qps-16: p99_ttft_ms 120.34, p99_tpot_ms 36.51 (seconds inside)
    assert frame["ttft_p99_s"].iloc[2] == pytest.approx(0.1203358004201981)
    assert frame["tpot_p99_s"].iloc[2] == pytest.approx(0.03651095572711906)
    assert not pa.has_goodput(frame)  # the v0.8.3 files have "request_goodput:": null


def test_same_batch_as_the_calibration_points(sweep, frame):
    assert frame["batch_size"].to_numpy() == pytest.approx(profile_points(sweep)["batch_size"].to_numpy())


def test_load_axes(frame, generic):
    # a rate of inf cannot be placed on a rate axis; no concurrency in these files
    assert pa.load_axes(frame) == ["batch_size", "point"]
    assert pa.load_axes(generic) == ["concurrency", "batch_size", "point"]


def test_measured_knee_of_the_vllm_sweep_is_beyond_the_run(frame):
    knee = pa.measured_knee(frame)
    # doubling B = 5.11 → 10.23: T interpolated in log2 B between 208.2 (B 5.11) and 673.9 (B 18.25):
    # 208.18 + 465.74 × log2(10.23/5.11) / log2(18.25/5.11) = 208.18 + 465.74 × 1 / 1.8356 = 461.9 → +122 %
    b = [5.11375, 18.25195, 42.76427, 69.54547]
    t = [208.17718, 673.91849, 1354.36550, 1780.35663]
    first = (t[0] + (t[1] - t[0]) * 1 / np.log2(b[1] / b[0])) / t[0] - 1
    assert knee.gains[0] == pytest.approx(first, rel=1e-4) == pytest.approx(1.219, abs=1e-3)
    # doubling 18.25 → 36.50: 673.92 + 680.45 × log2(36.50/18.25) / log2(42.76/18.25) = 1,228.3 → +82 %
    assert knee.gains[1] == pytest.approx(0.822, abs=1e-3)
    assert np.isnan(knee.gains[2:]).all()  # 2 × 42.8 and 2 × 69.5 lie beyond the largest batch measured
    assert not knee.reached and knee.point == 3 and knee.batch_size == pytest.approx(69.5455, rel=1e-4)
    # with a 90 % rule the knee is at the second point (gain 82 % < 90 %)
    knee90 = pa.measured_knee(frame, threshold=0.9)
    assert knee90.reached and knee90.point == 1 and knee90.output_tokens_per_s == pytest.approx(673.9185, rel=1e-6)


def test_measured_knee_reached(generic):
    # gains: 1→2 +90 %, 2→4 +79 %, 4→8 +11.8 % (< 15 %) → knee at B = 4 (340 tok/s)
    knee = pa.measured_knee(generic)
    assert knee.gains[:3] == pytest.approx([190 / 100 - 1, 340 / 190 - 1, 380 / 340 - 1], rel=1e-9)
    assert knee.reached and knee.point == 2 and knee.batch_size == pytest.approx(4.0)


def test_slo_point_of_the_vllm_sweep(frame):
    # default sidebar targets p99 TTFT 1 s, p99 TPOT 50 ms: qps-inf fails on TPOT (p99 75.77 ms) → qps-16
    slo = pa.slo_point(frame, ttft_target_s=1.0, tpot_target_s=0.05)
    assert slo.point == 2 and (slo.ttft_stat, slo.tpot_stat) == ("p99", "p99")
    assert list(slo.meets) == [True, True, True, False]
    # TPOT ≤ 30 ms: qps-01 28.03 ✓, qps-04 27.91 ✓, qps-16 36.51 ✗ → qps-04
    assert pa.slo_point(frame, ttft_target_s=None, tpot_target_s=0.030).point == 1
    # TTFT ≤ 100 ms: qps-01 143.8 ✗, qps-04 67.6 ✓, qps-16 120.3 ✗ → the largest load meeting it is qps-04
    assert pa.slo_point(frame, ttft_target_s=0.1, tpot_target_s=None).point == 1
    assert pa.slo_point(frame, ttft_target_s=0.01, tpot_target_s=None).point is None
    assert pa.slo_point(frame, ttft_target_s=None, tpot_target_s=None).point is None


def test_slo_point_falls_back_to_the_highest_percentile(generic):
    slo = pa.slo_point(generic, ttft_target_s=0.5, tpot_target_s=0.03)
    # no p99 TPOT in the file: checked on p90 (11, 12, 14, 25, 50 ms); TTFT p99 30..1500 ms
    assert (slo.ttft_stat, slo.tpot_stat) == ("p99", "p90")
    assert list(slo.meets) == [True, True, True, True, False] and slo.point == 3
    assert pa.has_goodput(generic)
    assert generic["request_goodput_per_s"].iloc[slo.point] == pytest.approx(1.2)


def test_display_table_in_ms(frame):
    t = pa.display_table(frame)
    assert t["TTFT p99 [ms]"].iloc[2] == pytest.approx(120.3358, rel=1e-6)
    assert t["TPOT p50 [ms]"].iloc[0] == pytest.approx(24.5413, rel=1e-5)
    assert "goodput [req/s]" not in t and "concurrency" not in t
    assert "rate [req/s]" in t


def test_overlay_and_explanations(sweep, frame):
    r = Roofline(get_model(sweep.model), get_gpu("A100-40GB"), tensor_parallel_size=8)
    pts = profile_points(sweep)
    cal = calibrate(r, pts, source="sweep")
    overlay = pa.prediction_overlay(r, pts, cal)
    assert list(overlay["batch_size"]) == sorted(overlay["batch_size"])
    assert float(np.median(np.abs(overlay["calibrated_error"]))) == pytest.approx(cal.median_abs_error)
    assert np.median(np.abs(overlay["default_error"])) > cal.median_abs_error
    fitted = ex.math_fitted_tpot(cal, overlay, r)
    assert f"eff_c = {cal.compute_efficiency:.3f}" in fitted["substituted"]
    assert "at inf: B = 69.5, I = 213, O = 212" in fitted["substituted"]  # the heaviest load is written in
    little = ex.math_littles_law(frame, 0)
    assert "208.2 tok/s × 24.56 ms = 5.11 sequences" in little["substituted"]
    knee = ex.math_knee(pa.measured_knee(frame))
    assert "+122%" in knee["substituted"] and "no knee up to B = 69.5" in knee["substituted"]
    slo = ex.math_slo(frame, pa.slo_point(frame, ttft_target_s=1.0, tpot_target_s=0.05))
    assert slo["substituted"].endswith("→ rate 16/s") and "TPOT p99 75.8 ms ✗" in slo["substituted"]


def test_catalog_match():
    assert pa.catalog_match("meta-llama/Llama-3.3-70B-Instruct", get_model) == "meta-llama/Llama-3.3-70B-Instruct"
    assert pa.catalog_match("h200", get_gpu) == "H200-SXM"
    assert pa.catalog_match("1xStandard_ND96asr_v4 x 1", get_gpu) is None
    assert pa.catalog_match(None, get_gpu) is None


def test_knee_needs_two_points():
    one = pa.profile_frame(detect_and_load("one.csv", b"concurrency,output_tokens_per_s,tpot_s_mean\n4,100,0.04\n"))
    assert pa.measured_knee(one) is None
    assert pa.load_axes(one) == ["concurrency", "batch_size", "point"]
    with pytest.raises(InvalidInputError):
        detect_and_load("bad.csv", b"concurrency,output_tokens_per_s\n4,-1\n")
