"""The accuracy harness: its error arithmetic against hand-worked numbers, the screening of hand-made rows,
a leave-one-source-out fit that never looks at the held-out source, and the real corpus end to end (no
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
from calculators.perf.coefficients import engine_generation, load_fit
from calculators.perf.comparable import comparable_rows, dp_attention, screen
from calculators.perf.measurements import load_measurements
from calculators.perf.roofline import Roofline
from calculators.perf.serving import serving_metrics, static_batch_metrics
from calculators.report.accuracy_text import skipped_lines, target_lines
from calculators.specs.catalog import get_gpu, get_model
from calculators.vllm.capacity import vllm_capacity

BASE = {"source_id": "a", "engine": "vllm", "gpu": "H100 SXM 80GB", "gpu_count": 1, "model": "meta-llama/Llama-3.1-8B",
        "precision": "bf16", "kv_cache_dtype": None, "tp": 1, "pp": 1, "ep": None, "dp": None, "input_len": 1000,
        "output_len": 200, "load_mode": "concurrency", "concurrency": 16, "request_rate": None, "batch_size": None,
        "disaggregated": False, "spec_decoding": None, "tpot_median_ms": 20.0}


def _frame(*rows: dict) -> pd.DataFrame:
    """Hand-made rows shaped like ``measurements_frame()`` (fields, then one column per metric key)."""
    return pd.DataFrame([BASE | r for r in rows])


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


# ---------------------------------------------------------------- screening hand-made rows

def test_screen_keeps_what_it_can_predict_and_says_why_not_otherwise():
    frame = _frame(
        {},                                                                          # 0 comparable
        {"load_mode": "offline_max", "concurrency": None},                           # 1 TPOT only: not stated
        {"load_mode": "request_rate", "concurrency": None, "request_rate": 2.0},     # 2 open loop: TPOT compared
        {"disaggregated": True},                                                     # 3
        {"spec_decoding": "mtp"},                                                    # 4
        {"model": "MiniMaxAI/MiniMax-M2.5"},                                         # 5
        {"gpu": "H100 80GB"},                                                        # 6 no catalog id
        {"output_len": None},                                                        # 7
        {"precision": "int4"},                                                       # 8 scheme not stated
        {"model": "nvidia/Llama-3.1-8B-Instruct-FP8", "precision": "fp8"},           # 9 re-quantised checkpoint
        {"gpu_count": 8},                                                            # 10 8 GPUs for TP1
    )
    s = screen(frame)
    assert sorted(s.rows["row_id"]) == [0, 2, 9]
    reasons = dict(zip(s.skipped["row_id"], s.skipped["reason"], strict=True))
    assert reasons[1] == "no TPOT, TTFT or output-throughput metric"      # a ceiling states its throughput only
    assert "disaggregated" in reasons[3] and "speculative" in reasons[4]
    assert reasons[5] == "model not in the catalog" and reasons[6] == "GPU has no catalog id"
    assert "output_len" in reasons[7] and "precision" in reasons[8] and "tp × pp" in reasons[10]
    fp8 = s.rows.set_index("row_id").loc[9]
    assert (fp8["model_id"], fp8["quantization"]) == ("meta-llama/Llama-3.1-8B", "fp8")


def test_measured_values_fall_back_in_the_stated_order():
    rows = comparable_rows(_frame(
        {"tpot_median_ms": None, "itl_median_ms": 25.0, "tpot_mean_ms": 99.0, "output_tok_s": 1000.0,
         "model": "meta-llama/Llama-3.1-70B", "tp": 4, "gpu_count": 4},
        {"tpot_median_ms": None, "itl_median_ms": None, "tpot_mean_ms": 30.0, "output_tok_s_per_gpu": 300.0,
         "output_tok_s": 9999.0, "ttft_median_ms": None, "ttft_mean_ms": 400.0,
         "load_mode": "static_batch", "batch_size": 16, "concurrency": None},   # a closed loop's mean TTFT: below
    )).set_index("row_id")
    assert (rows.loc[0, "measured_tpot_s"], rows.loc[0, "tpot_key"]) == (pytest.approx(0.025), "itl_median_ms")
    assert rows.loc[0, "measured_throughput"] == pytest.approx(250.0)      # 1000 tokens/s ÷ 4 GPUs
    assert rows.loc[0, "throughput_key"] == "output_tok_s / gpu_count"
    assert (rows.loc[1, "measured_tpot_s"], rows.loc[1, "tpot_key"]) == (pytest.approx(0.030), "tpot_mean_ms")
    assert (rows.loc[1, "measured_throughput"], rows.loc[1, "throughput_key"]) == (300.0, "output_tok_s_per_gpu")
    assert (rows.loc[1, "measured_ttft_s"], rows.loc[1, "ttft_key"]) == (pytest.approx(0.4), "ttft_mean_ms")


def test_a_closed_loop_of_two_waves_compares_no_ttft():
    """128 prompts at 64 in flight: the first 64 arrive at once, so the median request waits in that burst's
    prefill queue; 640 prompts (ten waves) state a steady state. TPOT and throughput are compared either way."""
    rows = comparable_rows(_frame({"num_prompts": 128, "concurrency": 64, "ttft_median_ms": 9000.0},
                                  {"num_prompts": 640, "concurrency": 64, "ttft_median_ms": 900.0})).set_index("row_id")
    assert np.isnan(rows.loc[0, "measured_ttft_s"]) and rows.loc[1, "measured_ttft_s"] == pytest.approx(0.9)
    assert rows["measured_tpot_s"].notna().all()


def test_a_closed_loop_compares_a_median_ttft_not_a_mean():
    """2,560 prompts at 256 in flight: the first 256 arrive at once and wait for one another's prefill, which a
    mean over the run carries and a median does not; a static batch's mean TTFT is its batch's, compared."""
    rows = comparable_rows(_frame(
        {"num_prompts": 2560, "concurrency": 256, "ttft_median_ms": None, "ttft_mean_ms": 3490.0},
        {"num_prompts": 2560, "concurrency": 256, "ttft_median_ms": 480.0, "ttft_mean_ms": 3490.0},
        {"load_mode": "static_batch", "batch_size": 8, "concurrency": None, "ttft_mean_ms": 300.0},
    )).set_index("row_id")
    assert np.isnan(rows.loc[0, "measured_ttft_s"]) and rows.loc[0, "measured_tpot_s"] == pytest.approx(0.020)
    assert (rows.loc[1, "measured_ttft_s"], rows.loc[1, "ttft_key"]) == (pytest.approx(0.48), "ttft_median_ms")
    assert (rows.loc[2, "measured_ttft_s"], rows.loc[2, "ttft_key"]) == (pytest.approx(0.3), "ttft_mean_ms")


def test_a_shared_prefix_workload_is_skipped_with_its_reason():
    """Prompts that share a cached prefix prefill only their suffix: the model, without prefix caching, would
    cost the whole prompt, so such a run is not compared."""
    screened = screen(_frame({"shared_prefix": True}, {}))
    assert len(screened.rows) == 1
    assert screened.skipped["reason"].tolist() == ["shared-prefix workload (prefix caching not modelled)"]


def test_attention_data_parallel_inside_the_tp_group_is_compared_as_such_and_replicas_are_not():
    """SGLang's ``--tp 8 --dp 8 --enable-dp-attention`` on 8 GPUs runs attention data-parallel: compared with the
    roofline's ``enable_dp_attention``; ``--tp 4`` with 2 data-parallel replicas on 8 GPUs is two replicas, and
    ``dp`` 2 beside TP 1 is two copies of the model: neither is DP attention."""
    moe = {"model": "deepseek-ai/DeepSeek-V2-Lite"}
    frame = _frame(moe | {"tp": 8, "dp": 8, "gpu_count": 8}, {"tp": 4, "dp": 2, "gpu_count": 8}, {"tp": 1, "dp": 2},
                   moe | {"dp": None})
    assert dp_attention(frame).tolist() == [True, False, False, False]
    screened = screen(frame.iloc[[0, 3]])
    assert screened.skipped.empty
    assert screened.rows["dp_attention"].tolist() == [True, False]


def test_tensorrt_llm_attention_dp_ttft_is_not_compared_but_sglang_s_is():
    """TensorRT-LLM's attention-DP balancer holds a new prompt until every rank has one (up to
    ``timeout_iters`` steps), a wait the model does not state: such a row keeps its TPOT and drops its TTFT;
    SGLang's DP attention has no such wait, and TensorRT-LLM without DP attention keeps its TTFT."""
    dp = {"model": "deepseek-ai/DeepSeek-V2-Lite", "tp": 8, "dp": 8, "gpu_count": 8, "num_prompts": 160,
          "ttft_median_ms": 900.0}
    rows = comparable_rows(_frame(dp | {"engine": "trtllm"}, dp | {"engine": "sglang"},
                                  dp | {"engine": "trtllm", "dp": None}))
    assert len(rows) == 3 and rows["measured_tpot_s"].tolist() == pytest.approx([0.020] * 3)
    assert np.isnan(rows.loc[0, "measured_ttft_s"])
    assert rows.loc[1:, "measured_ttft_s"].tolist() == pytest.approx([0.9, 0.9])


def test_the_lengths_compared_are_those_the_run_served():
    """A random dataset drawn below its stated lengths: 10 requests of stated 1,000 / 1,000 tokens served 6,100
    prompt and 4,210 output tokens, so the run is compared at 610 / 421; without totals the stated lengths stand,
    a printed mean output length is used where the totals are missing, and the prompts sent where the requests
    completed are not printed. A client that drew each length uniformly from ⌊0.8·L⌋ to L served on average
    (819 + 1,024) / 2 = 921.5 of a stated 1,024 tokens and (6,553 + 8,192) / 2 = 7,372.5 of 8,192 (rounded half
    to even: 922 and 7,372); its totals, where printed, win."""
    rows = comparable_rows(_frame(
        {"completed_requests": 10.0, "total_input_tokens": 6100.0, "total_output_tokens": 4210.0,
         "input_len": 1000, "output_len": 1000},
        {"input_len": 1000, "output_len": 1000},
        {"output_len_mean_tokens": 887.6, "input_len": 128, "output_len": 1024},
        {"num_prompts": 80, "total_input_tokens": 39668.0, "total_output_tokens": 40725.0},
        {"lengths_uniform_from": 0.8, "input_len": 1024, "output_len": 8192},
        {"lengths_uniform_from": 0.8, "num_prompts": 80, "total_input_tokens": 39668.0,
         "total_output_tokens": 40725.0},
    )).set_index("row_id")
    assert rows.loc[0, ["input_len", "output_len"]].tolist() == [610, 421]
    assert rows.loc[1, ["input_len", "output_len"]].tolist() == [1000, 1000]
    assert rows.loc[2, ["input_len", "output_len"]].tolist() == [128, 888]
    assert rows.loc[3, ["input_len", "output_len"]].tolist() == [496, 509]    # no count completed: prompts sent
    assert rows.loc[4, ["input_len", "output_len"]].tolist() == [922, 7372]
    assert rows.loc[5, ["input_len", "output_len"]].tolist() == [496, 509]


def test_predict_compares_like_with_like():
    frame = _frame({"ttft_median_ms": 80.0},
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
    frame = _frame({"ttft_median_ms": 80.0}, {"ttft_median_ms": 80.0, "max_num_batched_tokens": 2048,
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
    rows = comparable_rows(_frame(rate | {"request_throughput_req_s": 3.7}, rate | {"request_throughput_req_s": 3.9},
                                  rate | {"output_tok_s": None})).set_index("row_id")
    assert rows.loc[0, "measured_throughput"] == 700.0 and math.isnan(rows.loc[0, "measured_ttft_s"])
    assert rows.loc[1, "measured_ttft_s"] == pytest.approx(0.090) and math.isnan(rows.loc[1, "measured_throughput"])
    assert math.isnan(rows.loc[2, "measured_ttft_s"]) and math.isnan(rows.loc[2, "measured_throughput"])
    assert len(rows) == 3 and rows["measured_tpot_s"].tolist() == pytest.approx([0.020] * 3)   # TPOT always


def test_an_open_loop_under_a_client_cap_runs_at_most_that_many(monkeypatch):
    # 200 req/s offered with --max-concurrency 8: far beyond what 8 in flight serve, so the engine runs a closed
    # loop of 8 (the client holds the rest); without a client cap it runs the 256 its pool admits
    monkeypatch.setattr("calculators.perf.corpus_engine._kv_limit", lambda *a: 256)
    rate = {"load_mode": "request_rate", "request_rate": 200.0, "request_throughput_req_s": 4.0}
    p = predict(comparable_rows(_frame(rate | {"concurrency": 8}, rate | {"concurrency": None})))
    batch = p[p["metric"] == "tpot"].set_index("row_id")["predicted_batch"]
    assert batch.tolist() == pytest.approx([8.0, 256.0])


def test_an_open_loop_runs_at_most_its_own_pool_and_the_prompts_it_sends(monkeypatch):
    """One server, two overloaded runs: the pool holds 20 sequences of 30,100 tokens and 200 of 3,000 (a stand-in
    for vLLM's accounting), so the short run is not held to the long one's 20; a run of 50 prompts has at most 50
    in flight however fast they arrive."""
    monkeypatch.setattr("calculators.perf.corpus_engine._kv_limit", lambda *a: 20 if a[6] > 10_000 else 200)
    rate = {"load_mode": "request_rate", "request_rate": 200.0, "request_throughput_req_s": 4.0, "concurrency": None}
    p = predict(comparable_rows(_frame(rate | {"input_len": 30_000, "output_len": 100},
                                       rate | {"input_len": 1_000, "output_len": 2_000},
                                       rate | {"input_len": 1_000, "output_len": 2_000, "num_prompts": 50})))
    batch = p[p["metric"] == "tpot"].set_index("row_id")["predicted_batch"]
    assert batch.tolist() == pytest.approx([20.0, 200.0, 50.0])


def test_a_median_itl_is_compared_with_the_median_step():
    # the same closed loop measured as median TPOT (over requests) and as median ITL (over every gap)
    rows = comparable_rows(_frame({}, {"tpot_median_ms": None, "itl_median_ms": 20.0}))
    p = predict(rows)
    p = p[p["metric"] == "tpot"].set_index("row_id")["predicted"]
    m = serving_metrics(Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM")), 16, 1000, 200)
    assert p[0] == pytest.approx(float(m["tpot_s"]), rel=1e-9)
    assert p[1] == pytest.approx(float(m["itl_median_s"]), rel=1e-9)
    assert p[1] < p[0]  # 16 × 1,000 / 200 = 80 prompt tokens a step on average: the median step carries none


def test_a_mean_itl_is_preferred_to_the_median_and_compared_with_tpot():
    # Runpod's vLLM bench at 80 req/s under a cap of 256: mean ITL 27.75 ms, median 18.91 ms (bunched prompts)
    rows = comparable_rows(_frame({"tpot_median_ms": None, "itl_mean_ms": 27.75, "itl_median_ms": 18.91},
                                  {"tpot_median_ms": None, "itl_median_ms": 18.91}))
    assert rows.set_index("row_id")["tpot_key"].tolist() == ["itl_mean_ms", "itl_median_ms"]
    p = predict(rows)
    p = p[p["metric"] == "tpot"].set_index("row_id")
    assert p.loc[0, "measured"] == pytest.approx(0.02775)
    m = serving_metrics(Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM")), 16, 1000, 200)
    assert p.loc[0, "predicted"] == pytest.approx(float(m["tpot_s"]), rel=1e-9)       # the mean step
    assert p.loc[1, "predicted"] == pytest.approx(float(m["itl_median_s"]), rel=1e-9)  # the median step


def test_a_closed_loop_in_lockstep_compares_no_ttft():
    # every request the same lengths: they start and finish in waves, each TTFT waiting for its wave's prefill
    loop = {"ttft_median_ms": 900.0, "output_tok_s": 500.0}
    rows = comparable_rows(_frame(loop | {"lockstep": True}, loop)).set_index("row_id")
    assert math.isnan(rows.loc[0, "measured_ttft_s"]) and rows.loc[1, "measured_ttft_s"] == pytest.approx(0.9)
    assert rows["measured_tpot_s"].tolist() == pytest.approx([0.020] * 2)
    assert rows["measured_throughput"].tolist() == pytest.approx([500.0] * 2)


def test_a_vllm_closed_loop_beyond_its_kv_pool_waits_for_slots(monkeypatch):
    # 16 in flight, a pool of 4 sequences: each waits 16 (R − r)/4 − R before its first token (R: the closed loop
    # of 4's cycle, r: the request overhead, which holds no slot)
    monkeypatch.setattr("calculators.perf.corpus_engine._kv_limit", lambda *a: 4)
    rows = comparable_rows(_frame({"ttft_median_ms": 900.0}, {"ttft_median_ms": 900.0, "engine": "sglang"}))
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
    monkeypatch.setattr("calculators.perf.corpus_engine._kv_limit", lambda *a: 4)
    static = {"load_mode": "static_batch", "concurrency": None, "batch_size": 10, "ttft_median_ms": 900.0}
    rows = comparable_rows(_frame(static, static | {"engine": "sglang"}))
    p = predict(rows).set_index(["row_id", "metric"])["predicted"]
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"))
    waves = static_batch_metrics(r, 10, 1000, 200, max_running=4)
    assert float(waves["queue_wait_s"]) > 0
    assert p[(0, "ttft")] == pytest.approx(float(waves["ttft_s"]), rel=1e-9)
    whole = static_batch_metrics(Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"), engine="sglang"),
                                 10, 1000, 200)
    assert p[(1, "ttft")] == pytest.approx(float(whole["ttft_s"]), rel=1e-9)


def test_a_tensorrt_llm_pool_is_its_share_of_the_memory_left_after_the_weights():
    # TensorRT-LLM keeps kv_cache_free_gpu_mem_fraction (0.9) of the memory its weights, activations and runtime
    # leave; vLLM keeps gpu_memory_utilization (0.9) of the whole memory less them. Llama-3.3-70B with a 16-bit
    # cache keeps 2 · 80 layers · 8 heads · 128 · 2 B = 327,680 B a token, 16-token blocks of 5,242,880 B, and a
    # sequence of 128 + 2,048 tokens takes 136 of them.
    model, gpu = get_model("meta-llama/Llama-3.3-70B-Instruct"), get_gpu("H200-SXM")
    stage = vllm_capacity(model, gpu=gpu, quantization="fp8", max_model_len=2_176).binding
    assert stage.kv_bytes_per_token == 327_680
    free = gpu.memory_bytes - stage.weights_bytes - stage.activation.value - stage.non_torch.value
    blocks = int(0.9 * free) // (16 * 327_680)
    import calculators.perf.corpus_engine as acc
    trt = acc._kv_limit(model.id, gpu.id, 1, 1, "fp8", "auto", 2_176, trtllm_pool=True)
    assert trt == blocks // 136
    assert trt > acc._kv_limit(model.id, gpu.id, 1, 1, "fp8", "auto", 2_176)


def test_offline_ceiling_batch_is_the_fewest_of_kv_engine_and_prompts(monkeypatch):
    import calculators.perf.corpus_engine as acc
    monkeypatch.setattr(acc, "_kv_limit", lambda *config: 300)              # the pool holds 300 sequences
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"))
    i, o = np.array([1000.0, 1000.0, 1000.0]), np.array([200.0, 200.0, 200.0])
    assert acc.ceiling_batch(r, "vllm-v0", i, o, np.array([1000.0, 100.0, np.nan]), 256).tolist() == [256, 100, 256]
    assert acc.ceiling_batch(r, "trtllm", i, o, np.array([1000.0, 100.0, np.nan]), 2048).tolist() == [300, 100, 300]
    assert acc.ceiling_batch(r, "sglang", i, o, np.array([5000.0, 0.5, np.nan])).tolist() == [300, 1, 300]


def test_vllm_holds_sequences_at_their_mean_length_and_tensorrt_llm_at_their_full_length(monkeypatch):
    """vLLM admits on the blocks a prompt needs now and preempts when a running sequence finds none, so a full
    pool of 64,000 tokens holds 64,000 // (1,000 + 200/2) = 58 sequences of 1,000 + 200 tokens in flight;
    TensorRT-LLM reserves 1,000 + 200 on admission: 64,000 // 1,200 = 53, and so many fit vLLM in lockstep."""
    import calculators.perf.corpus_engine as acc
    assert acc.footprint_tokens("vllm-v1", np.array([1000.0, 512.0]), np.array([200.0, 255.0])).tolist() == [
        1100.0, 640.0]                                                                # 512 + 127.5, rounded up
    assert acc.footprint_tokens("trtllm", np.array([1000.0]), np.array([200.0])).tolist() == [1200.0]
    monkeypatch.setattr(acc, "_kv_limit", lambda *config: 64_000 // config[6])
    r = Roofline(get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM"))
    i, o, prompts = np.array([1000.0]), np.array([200.0]), np.array([np.inf])
    assert acc.ceiling_batch(r, "vllm-v1", i, o, prompts, 1024).tolist() == [58]
    assert acc.ceiling_batch(r, "vllm-v0", i, o, prompts, 256).tolist() == [58]
    assert acc.ceiling_batch(r, "trtllm", i, o, prompts, 2048).tolist() == [53]
    # in lockstep (equal lengths, started together) vLLM's sequences all reach 1,200 tokens at once
    assert acc.ceiling_batch(r, "vllm-v1", i, o, prompts, 1024, np.array([True])).tolist() == [53]


def test_a_one_batch_offline_run_is_a_static_batch_with_output_throughput_from_its_total():
    # dstack's shape: 4 prompts of 32,784 + 2,048 tokens at once on 8 GPUs, 590 tokens/s in all
    row = {"load_mode": "offline_max", "concurrency": None, "batch_size": 4, "num_prompts": 4, "gpu_count": 8,
           "tp": 8, "model": "meta-llama/Llama-3.1-70B", "input_len": 32784, "output_len": 2048,
           "total_num_tokens": 139328.0, "total_tok_s": 590.0, "tpot_median_ms": None}
    rows = comparable_rows(_frame(row, row | {"total_num_tokens": 139000.0})).set_index("row_id")
    assert list(rows.index) == [0]                                           # lengths not exact: no output share
    assert (rows.loc[0, "load"], rows.loc[0, "batch"]) == ("static_batch", 4)
    assert rows.loc[0, "measured_throughput"] == pytest.approx(590.0 * 2048 / 34832 / 8)   # 4.337 tokens/s per GPU


def test_replicas_are_accepted_when_the_rows_own_figures_say_each_ran_the_concurrency():
    # 16 GPUs, TP4: 4 replicas. In flight = tput/GPU × 16 × (TTFT + 1023·TPOT) / 1024 = tput × 0.4417
    # 1134 → 500.9 (nearer 4 × 128 = 512 than 128); 300 → 132.5 (nearer 128): layout not stated
    row = {"gpu_count": 16, "tp": 4, "model": "meta-llama/Llama-3.1-70B", "concurrency": 128, "input_len": 1024,
           "output_len": 1024, "tpot_median_ms": 27.0, "ttft_median_ms": 650.0, "output_tok_s_per_gpu": 1134.0}
    s = screen(_frame(row, row | {"output_tok_s_per_gpu": 300.0}))
    assert list(s.rows["row_id"]) == [0] and s.rows.loc[0, "replicas"] == 4
    assert "tp × pp" in s.skipped.set_index("row_id").loc[1, "reason"]


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


@pytest.mark.parametrize(("engine", "version", "gpu", "stated", "limits"), [
    ("vllm", "0.18.0", "H100-SXM", None, (8192, 1024)),    # V1 on >= 70 GiB (arg_utils.py get_batch_defaults)
    ("vllm", "0.14.1", "GB300", None, (8192, 1024)),       # the >= 160 GiB tier came in 0.28
    ("vllm", "0.10.2", "L40S", None, (2048, 256)),         # the small tier
    ("vllm", "0.10.2", "L40S", 4096, (4096, 256)),         # a stated budget stands
    ("vllm", "0.8.3", "A100-40GB-SXM", None, (2048, 1024)),  # 0.7-0.8.3: every GPU 1024 sequences
    ("vllm", "0.6.3 (the V0 engine)", "H100-SXM", None, (8192, 256)),  # V0: the fixed defaults
    ("trtllm", "1.0.0", "H100-SXM", None, (8192, 2048)),
    ("sglang", "0.5.6", "B200", 16384, (16384, np.inf)),
])
def test_each_row_runs_its_engines_scheduler_limits(engine, version, gpu, stated, limits):
    """A vLLM V1 row runs with the token budget and the largest batch ``vllm serve`` of its release picks on its
    GPU; other engines with the budget they state (else 8,192 tokens) and their default largest batch."""
    import calculators.perf.corpus_engine as acc
    generation = engine_generation(engine, version)
    got = acc.scheduler_limits(engine, version, generation, "meta-llama/Llama-3.1-8B", gpu, stated)
    assert got == limits


def test_a_closed_loop_run_of_few_prompts_per_slot_is_charged_its_drain():
    """Throughput is compared as the run measured it, over its wall time: 80 prompts through 16 slots, lengths
    drawn from 0 to L, keep the slots busy :func:`busy_share` of it; a row that does not state its prompts or its
    length draw is charged nothing, and its TPOT and TTFT are the steady state's either way."""
    loop = {"output_tok_s": 500.0, "num_prompts": 80, "total_input_tokens": 80_000.0, "total_output_tokens": 16_000.0}
    rows = comparable_rows(_frame(loop | {"lengths_uniform_from": 0.0}, loop,
                                  {"output_tok_s": 500.0, "lengths_uniform_from": 0.0}))
    assert rows["busy_share"].tolist() == [busy_share(16, 80, 0.0), 1.0, 1.0]
    assert busy_share(16, 80, 0.0) < 0.9
    pred = predict(rows).set_index(["row_id", "metric"])
    steady = pred.loc[(1, "throughput"), "predicted"]
    assert pred.loc[(0, "throughput"), "predicted"] == pytest.approx(steady * busy_share(16, 80, 0.0))
    assert pred.loc[(0, "tpot"), "predicted"] == pytest.approx(pred.loc[(1, "tpot"), "predicted"])
