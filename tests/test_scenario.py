"""The workload and SLO part of the shared scenario travels in the URL like the rest."""
from __future__ import annotations

from calculators.scenario import Scenario, scenario_from_query, scenario_to_query


def test_workload_round_trip():
    s = Scenario(input_len=1500, output_len=200, request_rate_per_s=40, ttft_p99_ms=800, tpot_p99_ms=None,
                 calibration="c0.5_m0.8_o0.002")
    q = scenario_to_query(s)
    assert (q["in"], q["out"], q["rate"], q["ttft_ms"], q["tpot_ms"], q["cal"]) == (
        "1500", "200", "40", "800", "0", "c0.5_m0.8_o0.002")
    back, messages = scenario_from_query(q)
    assert back == s and messages == []


def test_bad_workload_values_are_reported_not_raised():
    back, messages = scenario_from_query({"in": "-5", "rate": "lots", "cal": ""})
    assert back.input_len == 2000 and back.request_rate_per_s == 10 and back.calibration is None
    assert len(messages) == 2 and all("ignored" in m for m in messages)
