"""Browser test of Measured profiles: drop the vLLM sweep, see the curve and the knee, calibrate, use it."""
from __future__ import annotations

import pytest

from tests.e2e.helpers import ROOT, shot, wait_for_app

pytestmark = pytest.mark.e2e
SWEEP = sorted((ROOT / "tests" / "fixtures" / "profiles").glob("vllm-benchmark_serving-v0.8.3_*_qps-*.trimmed.json"))


def metric(pg, label: str) -> str:
    box = pg.locator("[data-testid=stMetric]", has_text=label).first
    return box.locator("[data-testid=stMetricValue]").inner_text().strip()


def test_upload_sweep_calibrate_and_use(page, server_url):
    assert len(SWEEP) == 4
    page.goto(server_url + "/profiles?gpu=A100-40GB-SXM&tp=8")
    wait_for_app(page)
    page.get_by_text("No profile loaded yet").wait_for(timeout=15_000)
    page.locator(".st-key-prof_files input[type=file]").set_input_files([str(p) for p in SWEEP])
    page.get_by_text("Measured curves").wait_for(timeout=30_000)
    wait_for_app(page)

    chart = page.locator(".st-key-prof_throughput_chart")
    chart.locator(".main-svg").first.wait_for(timeout=15_000)
    assert chart.get_by_text("output tokens/s").count() >= 1
    assert chart.get_by_text("knee not reached (≥)").count() >= 1  # the knee marker's legend entry
    assert metric(page, "Measured knee") == "≥ 69.5 (not reached)"
    assert metric(page, "SLO point") == "rate 16/s"
    assert page.locator("[data-testid=stDataFrame]").count() >= 1

    page.get_by_role("button", name="Calibrate", exact=True).click()
    page.get_by_text("median |error|").first.wait_for(timeout=30_000)
    wait_for_app(page)
    page.locator(".st-key-prof_overlay_chart .main-svg").first.wait_for(timeout=15_000)
    err = metric(page, "median |error|")
    assert err.endswith("%") and float(err[:-1]) < 5

    page.get_by_role("button", name="Use this calibration").click()
    wait_for_app(page)
    page.get_by_text("Every timed page uses: calibrated on").wait_for(timeout=15_000)
    link = page.get_by_role("link", name="Permalink").get_attribute("href")
    assert "cal=c" in link
    page.locator(".st-key-prof_throughput_chart").scroll_into_view_if_needed()
    shot(page, "profiles")
    page.locator(".st-key-prof_overlay_chart").scroll_into_view_if_needed()
    shot(page, "profiles_calibration")
