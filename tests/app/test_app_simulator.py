"""The batching simulator page through AppTest: small workloads (seconds of simulated time), Run, results."""
from __future__ import annotations

import json

from app.ui import keys
from tests.app import helpers

make_app = helpers.make_app
_clear_caches = helpers._clear_caches

DEEP = {"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "tp": "4"}
PAGE = "views/simulator.py"


def _page(make_app, **params):
    at = make_app(**{**DEEP, **params})
    at.switch_page(PAGE).run()
    assert not at.exception
    return at


def _small(at, *, rate=0.5, duration=10.0, lengths="Fixed"):
    at.number_input(key="sim_rate").set_value(rate)
    at.number_input(key="sim_duration").set_value(duration)
    at.selectbox(key="sim_lengths").set_value(lengths)
    at.run()
    at.number_input(key="sim_in").set_value(500)
    at.number_input(key="sim_out").set_value(50)
    return at.run()


def _tables(at):
    return [d.value for d in at.dataframe]


def test_renders_with_scenario_defaults(make_app):
    at = _page(make_app)
    assert at.title[0].value == "Batching simulator"
    assert at.button(key="sim_run")
    assert at.number_input(key="sim_rate").value == 10.0  # the scenario's request rate
    assert not at.error


def test_model_that_does_not_fit_is_a_message(make_app):
    at = make_app(model="meta-llama/Llama-3.1-70B", gpu="H100", tp="1")
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("does not fit" in e.value for e in at.error)


def test_run_shows_percentiles_and_little(make_app):
    at = _small(_page(make_app))
    at.button(key="sim_run").click().run()
    assert not at.exception
    table = _tables(at)[0]
    assert list(table["metric"]) == ["TTFT", "TPOT", "ITL", "end-to-end", "queue wait"]
    assert (table["p99 [ms]"] >= table["p50 [ms]"]).all()
    m = helpers.metrics(at)
    assert float(m["Throughput [req/s]"]) > 0
    assert any(s.value.startswith("A: continuous") and "Little's law" in s.value for s in at.success)
    assert any(e.label.startswith("Show the math: Little's law") for e in at.expander)
    assert any(e.label.startswith("Show the math: M/D/1") for e in at.expander)
    assert not any("Overloaded" in w.value for w in at.warning)
    charts = at.get("plotly_chart")
    assert len(charts) == 2
    names = {t["name"] for t in json.loads(charts[0].proto.spec)["data"]}
    assert len(names) == 1 and next(iter(names)).startswith("A: continuous")
    # the results survive a rerun, and a changed input marks them stale
    at.number_input(key="sim_seed").set_value(3).run()
    assert _tables(at) and any("inputs changed" in i.value for i in at.info)


def test_overload_warning(make_app):
    at = _small(_page(make_app), rate=200.0, duration=5.0)
    at.number_input(key="sim_in").set_value(4000)
    at.number_input(key="sim_out").set_value(400).run()
    at.button(key="sim_run").click().run()
    assert not at.exception
    w = [x.value for x in at.warning if "Overloaded" in x.value]
    assert w and "× what this replica served" in w[0]


def test_compare_two_policies(make_app):
    at = _small(_page(make_app), rate=2.0, duration=10.0, lengths="Log-normal")
    at.number_input(key="sim_in_p95").set_value(800)
    at.number_input(key="sim_out_p95").set_value(120)
    at.toggle(key="sim_compare").set_value(True).run()
    assert at.radio(key="sim_b_kind").value == "static"
    at.number_input(key="sim_a_mns").set_value(32)
    at.number_input(key="sim_b_bmax").set_value(8)
    at.button(key="sim_run").click().run()
    assert not at.exception
    assert any(m.label == "Throughput ratio A ÷ B (requests/s)" and m.value.endswith("×") for m in at.metric)
    compare = next(t for t in _tables(at) if "quantity" in t.columns)
    assert {"A", "B", "A ÷ B"} <= set(compare.columns)
    assert "TTFT p99 [ms]" in set(compare["quantity"])
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert len({t["name"] for t in spec["data"]}) == 2


def test_trace_upload_good_and_bad(make_app):
    at = _page(make_app)
    at.selectbox(key="sim_lengths").set_value("Trace (CSV)").run()
    bad = b"arrival_time_s,input_tokens,output_tokens\n0.0,100,20\n0.5,abc,20\n"
    at.file_uploader(key="sim_upload_0").upload("t.csv", bad, "text/csv").run()
    assert not at.exception
    assert any("line 3" in e.value and "input_tokens" in e.value for e in at.error)
    assert at.button(key="sim_run")  # the rest of the page is still there
    good = b"arrival_time_s,input_tokens,output_tokens\n" + b"".join(
        f"{i * 0.5},{300 + i},{30}\n".encode() for i in range(10))
    at.file_uploader(key="sim_upload_0").upload("t.csv", good, "text/csv").run()
    assert not at.error
    assert at.session_state[keys.SIM_TRACE]["name"] == "t.csv"
    at.button(key="sim_run").click().run()
    assert not at.exception
    assert helpers.metrics(at)["Finished / arrived"] == "10 / 10"


def test_bad_lognormal_p95_names_the_input(make_app):
    at = _small(_page(make_app), lengths="Log-normal")  # input mean 500, p95 still 4,000 (over 3.87 × the mean)
    at.button(key="sim_run").click().run()
    assert not at.exception
    assert any("input_tokens_p95" in e.value for e in at.error)
    assert not at.dataframe  # nothing ran


def test_seed_experiment_button(make_app):
    at = _page(make_app)
    at.number_input(key="sim_seed_n").set_value(200)
    at.button(key="sim_seed_run").click().run()
    assert not at.exception
    ratio = helpers.metrics(at)["Continuous ÷ static throughput"]
    assert float(ratio.rstrip("×")) > 1


def test_sweep_section(make_app):
    at = _small(_page(make_app), rate=20.0, duration=5.0)
    at.toggle(key="sim_sweep_on").set_value(True).run()
    at.number_input(key="sim_sweep_top").set_value(16)
    at.button(key="sim_sweep_run").click().run()
    assert not at.exception
    m = helpers.metrics(at)
    assert "Simulated knee (max_num_seqs)" in m and m["Analytic knee (roofline batch)"] != ""
    frame = next(t for t in _tables(at) if "max_num_seqs" in t.columns)
    assert list(frame["max_num_seqs"]) == [1, 2, 4, 8, 16]
