"""The accuracy harness: its error arithmetic against hand-worked numbers, hand-made rows predicted at their
load, a leave-one-source-out fit that never looks at the held-out source, and the real corpus end to end (no
accuracy thresholds are asserted: the harness reports them, it does not pass or fail on them)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from calculators.perf.accuracy import (
    ALL,
    METRICS,
    AccuracyReport,
    accuracy_report,
    error_table,
    fit_correction,
    loso_rows,
    per_source_view,
    predict,
    residual_band,
    signed_error,
)
from calculators.perf.bands import fit_band
from calculators.perf.benchmark_drain import busy_share
from calculators.perf.coefficients import load_fit
from calculators.perf.comparable import comparable_rows, screen
from calculators.perf.measurements import load_measurements
from calculators.perf.roofline import Roofline
from calculators.perf.serving import serving_metrics, static_batch_metrics
from calculators.report.accuracy_text import skipped_lines, target_lines
from calculators.specs.catalog import get_gpu, get_model
from tests.perf.corpus_rows import hand_rows

# ---------------------------------------------------------------- error arithmetic, worked by hand

def test_signed_error_is_predicted_over_measured_minus_one():
    assert signed_error(0.030, 0.040) == pytest.approx(-0.25)   # 30 ms against 40 ms: 25 % low
    assert signed_error(50.0, 40.0) == pytest.approx(0.25)
    assert signed_error(1200.0, 1000.0) == pytest.approx(0.20)


def test_error_table_by_hand():
    # errors −0.25, +0.10, +0.50 (one family, one source): |e| = 0.25, 0.10, 0.50
    pred = pd.DataFrame({"metric": "tpot", "gpu_family": "NVIDIA Hopper", "source_id": "a",
                         "predicted": [0.030, 0.044, 0.060], "measured": [0.040, 0.040, 0.040]})
    pred["error"] = signed_error(pred["predicted"], pred["measured"])
    table = error_table(pred)
    overall = table[(table["gpu_family"] == ALL) & (table["source_id"] == ALL)].iloc[0]
    assert overall["n"] == 3
    assert overall["median_abs_error"] == pytest.approx(0.25)
    assert overall["bias"] == pytest.approx(0.10)                 # median of −0.25, 0.10, 0.50
    assert overall["p90_abs_error"] == pytest.approx(0.25 + 0.8 * (0.50 - 0.25))  # linear, position 1.8
    levels = set(zip(table["gpu_family"], table["source_id"], strict=True))
    assert levels == {(ALL, ALL), ("NVIDIA Hopper", ALL), (ALL, "a"), ("NVIDIA Hopper", "a")}


def test_per_source_view_counts_each_source_once():
    # source a: 9 rows, median |e| 0.50; b: 1 row, 0.10; c: 1 row, 0.20 → median over sources 0.20 (rows: 0.50)
    pred = pd.DataFrame({"metric": "tpot", "gpu_family": "NVIDIA Hopper",
                         "source_id": ["a"] * 9 + ["b", "c"], "measured": 1.0,
                         "predicted": [1.5] * 9 + [0.9, 1.2]})
    pred["error"] = signed_error(pred["predicted"], pred["measured"])
    view = per_source_view(error_table(pred)).set_index("gpu_family")
    assert view.loc[ALL, "sources"] == 3 and view.loc[ALL, "rows"] == 11
    assert view.loc[ALL, "median_abs_error"] == pytest.approx(0.20)
    assert view.loc[ALL, "bias"] == pytest.approx(0.20)                  # median of +0.5, −0.1, +0.2


def test_residual_band_is_the_shipped_band_mechanism():
    # two sources, residuals 0 … 4 and 5 … 10: the band is bands.fit_band's, per metric
    loso = pd.DataFrame({"metric": "ttft", "loso_log_ratio": np.arange(11.0), "source_id": ["a"] * 5 + ["b"] * 6})
    band = residual_band(loso).iloc[0]
    e = fit_band(loso["loso_log_ratio"], loso["source_id"])
    assert (band["tail"], band["low_factor"], band["high_factor"]) == (e.tail, e.low_factor, e.high_factor)
    assert band["low_factor"] == 1.0  # every residual ≥ 0: the estimate itself is the low edge


# ---------------------------------------------------------------- hand-made rows predicted at their load


def test_predict_compares_like_with_like():
    frame = hand_rows({"ttft_median_ms": 80.0},
                      {"load_mode": "static_batch", "concurrency": None, "batch_size": 8, "tpot_median_ms": None,
                       "ttft_ms": 500.0})
    pred = predict(comparable_rows(frame)).set_index(["row_id", "metric"])
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"))
    assert pred.loc[(1, "ttft"), "predicted"] == pytest.approx(float(r.prefill_time_s(1000, 8)))  # all 8 prompts
    assert set(pred.index) == {(0, "tpot"), (0, "ttft"), (1, "ttft")}
    row = pred.loc[(0, "tpot")]
    assert (row["measured"], row["unit"]) == (pytest.approx(0.020), "s")
    assert row["error"] == pytest.approx(row["predicted"] / 0.020 - 1)
    assert row["log_ratio"] == pytest.approx(math.log(0.020 / row["predicted"]))


def test_a_row_is_predicted_with_the_engine_settings_it_ran_with():
    """A row that states its engine's token budget and recv interval is predicted by a roofline with those
    settings; a row that states neither, by the defaults (8,192 tokens, every step)."""
    frame = hand_rows({"ttft_median_ms": 80.0}, {"ttft_median_ms": 80.0, "max_num_batched_tokens": 2048,
                                                 "scheduler_recv_interval": 30})
    pred = predict(comparable_rows(frame)).set_index(["row_id", "metric"])
    for row, settings in ((0, {}), (1, {"max_num_batched_tokens": 2048, "scheduler_recv_interval": 30})):
        r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"), engine="vllm-v1", **settings)
        expected = serving_metrics(r, 16, 1000, 200)
        assert pred.loc[(row, "ttft"), "predicted"] == pytest.approx(float(expected["ttft_s"]))
        assert pred.loc[(row, "tpot"), "predicted"] == pytest.approx(float(expected["tpot_s"]))


def test_open_loop_rows_compare_what_the_load_can_state():
    # offered 4 req/s; served 3.7 (< 0.95 × 4 = 3.8: saturated) or 3.9 (not); unknown: neither TTFT nor throughput
    rate = {"load_mode": "request_rate", "concurrency": None, "request_rate": 4.0, "ttft_median_ms": 90.0,
            "output_tok_s": 700.0}
    rows = comparable_rows(hand_rows(rate | {"request_throughput_req_s": 3.7}, rate | {"request_throughput_req_s": 3.9},
                                     rate | {"output_tok_s": None})).set_index("row_id")
    assert rows.loc[0, "measured_throughput"] == 700.0 and math.isnan(rows.loc[0, "measured_ttft_s"])
    assert rows.loc[1, "measured_ttft_s"] == pytest.approx(0.090) and math.isnan(rows.loc[1, "measured_throughput"])
    assert math.isnan(rows.loc[2, "measured_ttft_s"]) and math.isnan(rows.loc[2, "measured_throughput"])
    assert len(rows) == 3 and rows["measured_tpot_s"].tolist() == pytest.approx([0.020] * 3)   # TPOT always


def test_an_open_loop_under_a_client_cap_runs_at_most_that_many(monkeypatch):
    # 200 req/s offered with --max-concurrency 8: far beyond what 8 in flight serve, so the engine runs a closed
    # loop of 8 (the client holds the rest); without a client cap it runs the 256 its pool admits
    monkeypatch.setattr("calculators.perf.corpus_engine.kv_limit", lambda *a: 256)
    rate = {"load_mode": "request_rate", "request_rate": 200.0, "request_throughput_req_s": 4.0}
    p = predict(comparable_rows(hand_rows(rate | {"concurrency": 8}, rate | {"concurrency": None})))
    batch = p[p["metric"] == "tpot"].set_index("row_id")["predicted_batch"]
    assert batch.tolist() == pytest.approx([8.0, 256.0])


def test_an_open_loop_runs_at_most_its_own_pool_and_the_prompts_it_sends(monkeypatch):
    """One server, two overloaded runs: the pool holds 20 sequences of 30,100 tokens and 200 of 3,000 (a stand-in
    for vLLM's accounting), so the short run is not held to the long one's 20; a run of 50 prompts has at most 50
    in flight however fast they arrive."""
    monkeypatch.setattr("calculators.perf.corpus_engine.kv_limit", lambda *a: 20 if a[6] > 10_000 else 200)
    rate = {"load_mode": "request_rate", "request_rate": 200.0, "request_throughput_req_s": 4.0, "concurrency": None}
    p = predict(comparable_rows(hand_rows(rate | {"input_len": 30_000, "output_len": 100},
                                          rate | {"input_len": 1_000, "output_len": 2_000},
                                          rate | {"input_len": 1_000, "output_len": 2_000, "num_prompts": 50})))
    batch = p[p["metric"] == "tpot"].set_index("row_id")["predicted_batch"]
    assert batch.tolist() == pytest.approx([20.0, 200.0, 50.0])


def test_a_median_itl_is_compared_with_the_median_step():
    # the same closed loop measured as median TPOT (over requests) and as median ITL (over every gap)
    rows = comparable_rows(hand_rows({}, {"tpot_median_ms": None, "itl_median_ms": 20.0}))
    p = predict(rows)
    p = p[p["metric"] == "tpot"].set_index("row_id")["predicted"]
    m = serving_metrics(Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM")), 16, 1000, 200)
    assert p[0] == pytest.approx(float(m["tpot_s"]), rel=1e-9)
    assert p[1] == pytest.approx(float(m["itl_median_s"]), rel=1e-9)
    assert p[1] < p[0]  # 16 × 1,000 / 200 = 80 prompt tokens a step on average: the median step carries none


def test_a_mean_itl_is_preferred_to_the_median_and_compared_with_tpot():
    # Runpod's vLLM bench at 80 req/s under a cap of 256: mean ITL 27.75 ms, median 18.91 ms (bunched prompts)
    rows = comparable_rows(hand_rows({"tpot_median_ms": None, "itl_mean_ms": 27.75, "itl_median_ms": 18.91},
                                     {"tpot_median_ms": None, "itl_median_ms": 18.91}))
    assert rows.set_index("row_id")["tpot_key"].tolist() == ["itl_mean_ms", "itl_median_ms"]
    p = predict(rows)
    p = p[p["metric"] == "tpot"].set_index("row_id")
    assert p.loc[0, "measured"] == pytest.approx(0.02775)
    m = serving_metrics(Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM")), 16, 1000, 200)
    assert p.loc[0, "predicted"] == pytest.approx(float(m["tpot_s"]), rel=1e-9)       # the mean step
    assert p.loc[1, "predicted"] == pytest.approx(float(m["itl_median_s"]), rel=1e-9)  # the median step


def test_a_vllm_closed_loop_beyond_its_kv_pool_waits_for_slots(monkeypatch):
    # 16 in flight, a pool of 4 sequences: each waits 16 (R − r)/4 − R before its first token (R: the closed loop
    # of 4's cycle, r: the request overhead, which holds no slot)
    monkeypatch.setattr("calculators.perf.corpus_engine.kv_limit", lambda *a: 4)
    rows = comparable_rows(hand_rows({"ttft_median_ms": 900.0}, {"ttft_median_ms": 900.0, "engine": "sglang"}))
    p = predict(rows).set_index(["row_id", "metric"])["predicted"]
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"))
    four = serving_metrics(r, 4, 1000, 200)
    cycle, over = float(four["e2e_latency_s"]), r.request_overhead_s
    assert p[(0, "ttft")] == pytest.approx(float(four["ttft_s"]) + 16 * (cycle - over) / 4 - cycle, rel=1e-9)
    assert p[(0, "tpot")] == pytest.approx(float(four["tpot_s"]), rel=1e-9)
    sglang = serving_metrics(Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"), engine="sglang"),
                             16, 1000, 200)  # no cap: SGLang's pool is not vLLM's
    assert p[(1, "ttft")] == pytest.approx(float(sglang["ttft_s"]), rel=1e-9)


def test_a_vllm_static_batch_beyond_its_kv_pool_runs_in_waves(monkeypatch):
    # a batch of 10 prompts, a pool of 4 sequences: waves of 4, 4 and 2 (serving.static_batch_metrics); SGLang's
    # pool is not vLLM's, so its batch runs whole
    monkeypatch.setattr("calculators.perf.corpus_engine.kv_limit", lambda *a: 4)
    static = {"load_mode": "static_batch", "concurrency": None, "batch_size": 10, "ttft_median_ms": 900.0}
    rows = comparable_rows(hand_rows(static, static | {"engine": "sglang"}))
    p = predict(rows).set_index(["row_id", "metric"])["predicted"]
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"))
    waves = static_batch_metrics(r, 10, 1000, 200, max_running=4)
    assert float(waves["queue_wait_s"]) > 0
    assert p[(0, "ttft")] == pytest.approx(float(waves["ttft_s"]), rel=1e-9)
    whole = static_batch_metrics(Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"), engine="sglang"),
                                 10, 1000, 200)
    assert p[(1, "ttft")] == pytest.approx(float(whole["ttft_s"]), rel=1e-9)


# ---------------------------------------------------------------- leave one source out

def _pred(source: str, ratios: list[float], family: str = "NVIDIA Hopper", engine: str = "vllm") -> pd.DataFrame:
    """Rows of one source whose measured / predicted ratios are ``ratios`` (predicted 1.0)."""
    return pd.DataFrame({"metric": "tpot", "source_id": source, "gpu_family": family, "engine": engine,
                         "predicted": 1.0, "measured": ratios, "log_ratio": np.log(ratios)})


def test_loso_never_uses_the_held_out_source():
    # "big" would pull a pooled median to ln 2 (5 of 7 rows); each source must be corrected by the other alone
    pred = pd.concat([_pred("big", [2.0] * 5), _pred("small", [0.5, 0.8])], ignore_index=True)
    out = loso_rows(pred)
    big, small = out[out["source_id"] == "big"], out[out["source_id"] == "small"]
    # big: median of ln 0.5 and ln 0.8 = (ln 0.5 + ln 0.8) / 2 → factor √0.4 = 0.6325
    assert np.allclose(big["log_correction"], (math.log(0.5) + math.log(0.8)) / 2)
    assert np.allclose(big["corrected"], math.sqrt(0.4))
    assert np.allclose(small["corrected"], 2.0)                  # small: big's median ratio, 2
    assert set(out["correction_level"]) == {"GPU family and engine"}
    assert np.allclose(big["loso_error"], math.sqrt(0.4) / 2.0 - 1)


def test_loso_falls_back_to_family_then_to_all_other_sources():
    train = pd.concat([_pred("a", [2.0, 2.0]), _pred("b", [4.0], engine="sglang")], ignore_index=True)
    rows = pd.concat([_pred("c", [1.0], engine="trtllm"), _pred("c", [1.0], family="AMD CDNA3")],
                     ignore_index=True)
    fit = fit_correction(train, rows)
    # Hopper/trtllm: no such cell → Hopper's median of ln 2, ln 2, ln 4 = ln 2; AMD: no family → all rows, ln 2
    assert list(fit["correction_level"]) == ["GPU family", "all other sources"]
    assert np.allclose(fit["log_correction"], math.log(2.0))
    none = fit_correction(train.iloc[:0], rows)
    assert list(none["correction_level"]) == ["none", "none"] and np.allclose(none["log_correction"], 0.0)


# ---------------------------------------------------------------- the real corpus

@pytest.fixture(scope="module")
def report() -> AccuracyReport:
    return accuracy_report()


def test_corpus_rows_are_either_compared_or_skipped_with_a_reason(report):
    s = screen()
    assert len(s.rows) > 0 and len(s.rows) == report.comparable_rows
    assert s.skipped["reason"].notna().all() and (s.skipped["reason"].str.len() > 0).all()
    assert set(s.rows["row_id"]).isdisjoint(s.skipped["row_id"])
    assert len(s.rows) + len(s.skipped) == len(load_measurements())


def test_a_target_line_prints_the_median_to_a_decimal_beside_its_verdict(report):
    # 15.5 % against a 15 % target is missed; printed as "15 %" it would read as met.
    t = report.targets.set_index(["metric", "check", "stage"])
    for metric in ("tpot", "ttft", "throughput"):
        line = target_lines(report, metric)[0]
        for stage in ("uncorrected", "LOSO"):
            row = t.loc[(metric, "median |error|", stage)]
            verdict = "met" if row["met"] else "missed"
            assert f"{stage} {100 * row['value']:.1f}% {verdict}" in line
            assert bool(row["met"]) == (row["value"] <= row["target"])


def test_report_json_has_every_part(report):
    doc = report.to_json()
    for key in ("comparable_rows", "compared_points", "skipped_rows", "skipped_by_reason", "measured_keys",
                "uncorrected", "leave_one_source_out", "target_checks", "band_80", "band_coverage", "worst",
                "per_source"):
        assert key in doc, key
    assert doc["skipped_rows"] == sum(doc["skipped_by_reason"].values())
    json.dumps(doc, allow_nan=False)
    assert {r["metric"] for r in doc["uncorrected"]} <= {"tpot", "ttft", "throughput"}
    assert all(0 <= r["coverage"] <= 1 for r in doc["band_coverage"])


def test_the_report_names_the_catalog_gpus_no_row_judges(report):
    # No compared run is on Turing (T4), CDNA2 (MI250X), Gaudi or a TPU; an L4 or RTX 4090 (Ada) is priced with
    # the family fitted on L40S runs, so it is not listed, nor is an H100.
    unjudged = report.gpus_without_family_runs()
    assert {"T4", "MI250X", "Gaudi2", "TPU-v5e"} <= set(unjudged)
    # the fit's family entries (which the list reads) are the families of the compared rows
    assert set(load_fit().shipped.family) == set(report.predictions["gpu_family"])
    assert not {"L4", "RTX-4090", "H100-SXM", "MI355X"} & set(unjudged)
    assert report.to_json()["gpus_without_family_runs"] == unjudged
    assert any(line.endswith(", ".join(unjudged)) for line in skipped_lines(report))


def test_each_family_left_out_is_predicted_with_the_reference_set_of_the_fit_without_it(report):
    # The fit file stores one refit per GPU family with compared rows, none with an entry for its own family;
    # the report's table comes from them: every family, every metric it has rows of.
    fit = load_fit()
    families = set(report.predictions["gpu_family"])
    assert {h.family for h in fit.held_out_family} == families
    t = report.family_held_out
    assert set(t["gpu_family"]) == families and set(t["metric"]) == set(METRICS)
    assert report.to_json()["leave_one_family_out"]["rows"][0].keys() >= {"gpu_family", "metric", "bias"}
    # the same as predicting Ada's TPOT rows with the refit without Ada directly (it has no Ada entry)
    ada = report.predictions[(report.predictions["gpu_family"] == "NVIDIA Ada")
                             & (report.predictions["metric"] == "tpot")]
    again = predict(comparable_rows().loc[lambda f: f["row_id"].isin(ada["row_id"])],
                    profile=fit.without_family("NVIDIA Ada"))
    again = again[again["metric"] == "tpot"]
    row = t[(t["gpu_family"] == "NVIDIA Ada") & (t["metric"] == "tpot")].iloc[0]
    assert row["n"] == len(again) and row["median_abs_error"] == pytest.approx(again["error"].abs().median())


def test_loso_with_refits_predicts_each_source_by_the_profile_fitted_without_it():
    rows = comparable_rows()
    some = rows[rows["source_id"].isin(["lmdeploy", "trtllm_perf_overview"])]
    pred = predict(some)
    other = load_fit().shipped.model_copy(update={"reference": load_fit().shipped.reference.model_copy(
        update={"step_overhead_s": 0.05})})                         # every step 50 ms slower than shipped
    out = loso_rows(pred, {"lmdeploy": other, "trtllm_perf_overview": None})
    lm, tr = out[out["source_id"] == "lmdeploy"], out[out["source_id"] != "lmdeploy"]
    assert set(lm["correction_level"]) == {"refit without the source"}
    assert (lm[lm["metric"] == "tpot"]["corrected"] > lm[lm["metric"] == "tpot"]["predicted"] + 0.04).all()
    assert set(tr["correction_level"]) == {"no refit stored (in-sample)"}
    assert np.allclose(tr["corrected"], tr["predicted"])
    assert {"inferencex", "dstack", "lmdeploy"} <= {h.source for h in load_fit().held_out}


def test_a_family_left_out_takes_the_reference_set_of_its_refit():
    # Ada's rows (L40S) by a profile without an Ada entry whose reference memory efficiency is half the shipped
    # Ada one: every Ada TPOT at one request in flight (memory-bound: weights and cache read each step) comes out
    # slower, by up to the 2x of its memory time; the Ampere rows, with no refit given, stay as predicted.
    rows = comparable_rows()
    some = rows[rows["gpu_family"].isin(["NVIDIA Ada", "NVIDIA Ampere"])]
    pred = predict(some)
    shipped = load_fit().shipped
    half = shipped.family["NVIDIA Ada"].memory / 2
    unseen = shipped.model_copy(update={
        "family": {f: e for f, e in shipped.family.items() if f != "NVIDIA Ada"},
        "reference": shipped.reference.model_copy(update={"memory": half})})
    out = loso_rows(pred, {"NVIDIA Ada": unseen}, by="gpu_family")
    ada = out[(out["gpu_family"] == "NVIDIA Ada") & (out["metric"] == "tpot") & (out["concurrency"] == 1)]
    assert len(ada) and set(ada["correction_level"]) == {"refit without the family"}
    ratio = ada["corrected"] / ada["predicted"]
    assert ((ratio > 1.3) & (ratio <= 2.0 + 1e-9)).all()
    amp = out[out["gpu_family"] == "NVIDIA Ampere"]
    assert set(amp["correction_level"]) == {"no refit stored (in-sample)"}
    assert np.allclose(amp["corrected"], amp["predicted"])


def test_a_closed_loop_run_of_few_prompts_per_slot_is_charged_its_drain():
    """Throughput is compared as the run measured it, over its wall time: 80 prompts through 16 slots, lengths
    drawn from 0 to L, keep the slots busy :func:`busy_share` of it; a row that does not state its prompts or its
    length draw is charged nothing, and its TPOT and TTFT are the steady state's either way."""
    loop = {"output_tok_s": 500.0, "num_prompts": 80, "total_input_tokens": 80_000.0, "total_output_tokens": 16_000.0}
    rows = comparable_rows(hand_rows(loop | {"lengths_uniform_from": 0.0}, loop,
                                     {"output_tok_s": 500.0, "lengths_uniform_from": 0.0}))
    assert rows["busy_share"].tolist() == [busy_share(16, 80, 0.0), 1.0, 1.0]
    assert busy_share(16, 80, 0.0) < 0.9
    pred = predict(rows).set_index(["row_id", "metric"])
    steady = pred.loc[(1, "throughput"), "predicted"]
    assert pred.loc[(0, "throughput"), "predicted"] == pytest.approx(steady * busy_share(16, 80, 0.0))
    assert pred.loc[(0, "tpot"), "predicted"] == pytest.approx(pred.loc[(1, "tpot"), "predicted"])
