"""The Measured profiles page through AppTest.

The four-file vLLM sweep is put where the page keeps a loaded profile (``st.session_state[keys.PROFILE]``);
single-file uploads (a bad one, a good one) go through AppTest's uploader; the browser test
(tests/e2e/test_e2e_profiles.py) drops the real sweep on the page.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.ui import keys
from calculators.perf.calibration import Calibration
from calculators.profiles import load_many
from tests.app import helpers
from tests.app.helpers import metrics, permalink

make_app = helpers.make_app
_clear_caches = helpers._clear_caches

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"
VLLM_SWEEP = sorted(FIXTURES.glob("vllm-benchmark_serving-v0.8.3_*_qps-*.trimmed.json"))
PAGE = "views/profiles.py"


@pytest.fixture(scope="module")
def sweep():
    return load_many([(p.name, p.read_bytes()) for p in VLLM_SWEEP])


def open_page(make_app, profile=None, **params) -> AppTest:
    at = make_app(**params)
    at.switch_page(PAGE).run()
    if profile is not None:
        at.session_state[keys.PROFILE] = profile
        at.run()
    assert not at.exception
    return at


def specs(at: AppTest) -> dict[str, dict]:
    return {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def names(spec: dict) -> list[str]:
    return [t.get("name") for t in spec["data"]]


def test_renders_with_nothing_uploaded(make_app):
    at = open_page(make_app)
    assert at.title[0].value == "Measured profiles"
    assert any("No profile loaded yet" in i.value for i in at.info)
    assert not at.error and not at.get("plotly_chart")
    assert at.button(key="prof_back").disabled  # nothing in force yet


def test_loaded_profile_curves_knee_and_slo(make_app, sweep):
    at = open_page(make_app, sweep)
    assert not at.error
    m = metrics(at)
    # knee: every measured doubling still gained ≥ 15 % (see tests/test_profile_analysis.py)
    assert m["Measured knee [batch B]"] == "≥ 69.5 (not reached)"
    # default targets p99 TTFT 1 s, p99 TPOT 50 ms: qps-inf's p99 TPOT is 75.8 ms → qps-16 at 1,354 tok/s
    assert m["SLO point (largest load meeting p99 targets)"] == "rate 16/s"
    assert m["Output at the SLO point [tok/s]"] == "1,354"
    table = at.dataframe[0].value
    assert len(table) == 4 and table["TTFT p99 [ms]"].iloc[2] == pytest.approx(120.34, abs=0.01)
    charts = list(specs(at).values())
    assert names(charts[0]) == ["output tokens/s", "knee not reached (≥)", "SLO point (p99 targets)"]
    assert names(charts[1]) == ["TTFT p50", "TTFT p90", "TTFT p99"]
    assert names(charts[2]) == ["TPOT p50", "TPOT p90", "TPOT p99"]
    assert at.radio(key="prof_axis").options == ["mean batch B", "load point (in order of load)"]
    maths = [e.label for e in at.expander]
    for title in ("Little's-law batch", "measured knee", "SLO point"):
        assert f"Show the math: {title}" in maths
    # selectors: the profile's model is in the catalog, its GPU and TP are not stated → the sidebar's
    assert at.selectbox(key="prof_model").value == "meta-llama/Llama-3.3-70B-Instruct"
    assert at.selectbox(key="prof_gpu").value == at.selectbox(key="gpu").value
    assert at.number_input(key="prof_tp").value == 1


def test_slo_targets_from_the_sidebar(make_app, sweep):
    at = open_page(make_app, sweep, tpot_ms="30")
    # p99 TPOT 28.03, 27.91, 36.51, 75.77 ms → the largest load within 30 ms is qps-4
    assert metrics(at)["SLO point (largest load meeting p99 targets)"] == "rate 4/s"


def calibrated(make_app, sweep) -> AppTest:
    at = open_page(make_app, sweep)
    at.selectbox(key="prof_gpu").set_value("A100-40GB-SXM")
    at.number_input(key="prof_tp").set_value(8)
    at.button(key="prof_calibrate").click().run()
    assert not at.exception and not at.error
    return at


def test_calibrate_then_use_then_back(make_app, sweep):
    at = calibrated(make_app, sweep)
    cal = at.session_state[keys.CANDIDATE]
    m = metrics(at)
    assert m["compute efficiency"] == f"{cal.compute_efficiency:.3f}"
    assert m["median |error|"] == f"{cal.median_abs_error:.1%}"
    assert cal.median_abs_error < 0.05 and cal.tensor_parallel_size == 8 and cal.gpu == "A100-40GB-SXM"
    overlay = [s for s in specs(at).values() if "measured" in names(s)][0]
    assert {"measured", "default roofline", "calibrated roofline"} <= set(names(overlay))
    assert "Show the math: fitted TPOT" in [e.label for e in at.expander]
    assert "cal=c" not in permalink(at)  # fitted, not yet in force (an empty cal= is the default)

    at.button(key="prof_use_cal").click().run()
    assert not at.exception
    assert at.session_state[keys.CALIBRATION] == cal
    assert f"cal={cal.to_param()}" in permalink(at)
    assert any("calibrated on" in md.value for md in at.markdown)

    at.button(key="prof_back").click().run()
    assert at.session_state[keys.CALIBRATION] is None
    assert "cal=c" not in permalink(at)
    assert any("datasheet roofline" in md.value for md in at.markdown)


def test_set_sidebar_to_the_calibration(make_app, sweep):
    at = calibrated(make_app, sweep)
    at.button(key="prof_set_sidebar").click().run()
    assert not at.exception
    assert (at.selectbox(key="model").value, at.selectbox(key="gpu").value, at.number_input(key="tp").value) == (
        "meta-llama/Llama-3.3-70B-Instruct", "A100-40GB-SXM", 8)


def test_a_calibrated_model_shows_no_band_of_the_shipped_fit(make_app, sweep):
    # the 80 % bands were measured on the shipped fit: under a calibration the timed pages say there is none
    at = calibrated(make_app, sweep)
    at.button(key="prof_use_cal").click().run()
    at.button(key="prof_set_sidebar").click().run()
    at.switch_page("views/roofline.py").run()
    assert not at.exception
    assert any(c.value.startswith("No 80 % band: the model in force is a calibration") for c in at.caption)
    assert not any(c.value.startswith("80 % band from public measurements") for c in at.caption)
    at.switch_page("views/compare_gpus.py").run(timeout=120)
    assert not at.exception
    assert any(c.value.startswith("No 80 % band") for c in at.caption)
    assert not any(c.value.startswith("How sure the timed figures are") for c in at.caption)


def test_calibration_error_is_a_message(make_app, sweep):
    at = open_page(make_app, sweep)
    at.number_input(key="prof_tp").set_value(3)  # 64 heads do not divide by 3
    at.button(key="prof_calibrate").click().run()
    assert not at.exception
    assert any("Cannot calibrate" in e.value and "tensor_parallel_size" in e.value for e in at.error)
    assert metrics(at)["SLO point (largest load meeting p99 targets)"] == "rate 16/s"  # the rest is kept


def test_saved_calibration_upload(make_app):
    at = open_page(make_app)
    cal = Calibration("meta-llama/Llama-3.1-70B", "H100-SXM", 4, 0.55, 0.75, 0.003, 0.02, 5, "saved.json")
    at.file_uploader(key="prof_cal_upload").upload("cal.json", cal.to_json().encode(), "application/json").run()
    assert not at.exception and at.success
    at.button(key="prof_use_saved").click().run()
    assert at.session_state[keys.CALIBRATION] == cal
    assert "cal=c0.55_m0.75_o0.003" in permalink(at)
    at.file_uploader(key="prof_cal_upload").upload("bad.json", b'{"model": 1}', "application/json").run()
    assert not at.exception and any("bad.json" in e.value and "calibration" in e.value for e in at.error)


def test_use_calibration_switches_the_performance_model():
    """app.ui.perf: every timed page's efficiencies follow use_calibration (and back)."""
    def script():
        import streamlit as st

        from app.ui import keys, perf
        from app.ui.state import Computed
        from calculators.perf.calibration import Calibration
        from calculators.scenario import Scenario
        ctx = Computed(Scenario())
        cal = Calibration("m", "g", 1, 0.42, 0.66, 0.004, 0.01, 3, "f.json")
        before, _ = perf.efficiencies(ctx)
        perf.use_calibration(cal)
        during, source = perf.efficiencies(ctx)
        perf.use_calibration(None)
        after, _ = perf.efficiencies(ctx)
        st.write(repr((before.compute, during.compute, during.memory, during.step_overhead_s, after.compute,
                       "calibrated on f.json" in source, st.session_state[keys.CALIBRATION_PARAM])))

    at = AppTest.from_function(script, default_timeout=30).run()
    assert not at.exception
    from calculators.perf.roofline import COMPUTE_EFFICIENCY
    assert at.markdown[0].value == repr((COMPUTE_EFFICIENCY, 0.42, 0.66, 0.004, COMPUTE_EFFICIENCY, True, None))


def test_bad_upload_names_file_and_field_and_keeps_the_profile(make_app, sweep):
    at = open_page(make_app, sweep)
    bad = b"concurrency,output_tokens_per_s,ttft_ms_p50,ttft_ms_p99\n1,100,50,20\n"  # p99 < p50
    at.file_uploader(key="prof_files").upload("mine.csv", bad, "text/csv").run()
    assert not at.exception
    err = " ".join(e.value for e in at.error)
    assert "mine.csv" in err and "ttft_s" in err and "still shown" in err
    assert metrics(at)["SLO point (largest load meeting p99 targets)"] == "rate 16/s"


def test_good_upload_replaces_the_profile(make_app, sweep):
    at = open_page(make_app, sweep)
    good = (b"model,gpu,tensor_parallel_size,concurrency,output_tokens_per_s,tpot_s_mean,ttft_ms_p99,tpot_ms_p99\n"
            b"meta-llama/Llama-3.1-8B,H100,1,1,100,0.01,30,11\nmeta-llama/Llama-3.1-8B,H100,1,4,340,0.0117647,60,14\n")
    at.file_uploader(key="prof_files").upload("mine.csv", good, "text/csv").run()
    assert not at.exception and not at.error
    assert at.session_state[keys.PROFILE].source_files == ("mine.csv",)
    assert (at.selectbox(key="prof_model").value, at.selectbox(key="prof_gpu").value) == (
        "meta-llama/Llama-3.1-8B", "H100-SXM")
    assert at.radio(key="prof_axis").value == "concurrency"
