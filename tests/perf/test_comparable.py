"""Which corpus rows the harness compares, and what it compares them with: hand-made rows screened for the reason
each is kept or skipped, the measured value each metric falls back to, and the lengths and load it is stated at."""
from __future__ import annotations

import math

import numpy as np
import pytest

from calculators.perf.comparable import comparable_rows, dp_attention, screen
from tests.perf.corpus_rows import hand_rows


def test_screen_keeps_what_it_can_predict_and_says_why_not_otherwise():
    frame = hand_rows(
        {},                                                                          # 0 comparable
        {"load_mode": "offline_max", "concurrency": None},                           # 1 TPOT only: not stated
        {"load_mode": "request_rate", "concurrency": None, "request_rate": 2.0},     # 2 open loop: TPOT compared
        {"disaggregated": True},                                                     # 3
        {"spec_decoding": "mtp"},                                                    # 4
        {"model": "Qwen/Qwen3.5-397B-A17B"},                                         # 5
        {"gpu": "H100 80GB"},                                                        # 6 no catalog id
        {"output_len": None},                                                        # 7
        {"precision": "int4"},                                                       # 8 scheme not stated
        {"model": "nvidia/Llama-3.1-8B-Instruct-FP8", "precision": "fp8"},           # 9 re-quantised checkpoint
        {"gpu_count": 8},                                                            # 10 8 GPUs for TP1
        {"source_id": "inferencex_experimental"},                                    # 11 a source set aside
    )
    s = screen(frame)
    assert sorted(s.rows["row_id"]) == [0, 2, 9]
    reasons = dict(zip(s.skipped["row_id"], s.skipped["reason"], strict=True))
    assert reasons[1] == "no TPOT, TTFT or output-throughput metric"      # a ceiling states its throughput only
    assert "disaggregated" in reasons[3] and "speculative" in reasons[4]
    assert reasons[5] == "model not in the catalog" and reasons[6] == "GPU has no catalog id"
    assert "output_len" in reasons[7] and "precision" in reasons[8] and "tp × pp" in reasons[10]
    assert reasons[11] == "source set aside: inferencex_experimental (its file says why)"
    assert "experimental" in s.skipped.set_index("row_id").loc[11, "detail"]
    fp8 = s.rows.set_index("row_id").loc[9]
    assert (fp8["model_id"], fp8["quantization"]) == ("meta-llama/Llama-3.1-8B", "fp8")


def test_measured_values_fall_back_in_the_stated_order():
    rows = comparable_rows(hand_rows(
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
    rows = comparable_rows(hand_rows({"num_prompts": 128, "concurrency": 64, "ttft_median_ms": 9000.0},
                                     {"num_prompts": 640, "concurrency": 64, "ttft_median_ms": 900.0}))
    rows = rows.set_index("row_id")
    assert np.isnan(rows.loc[0, "measured_ttft_s"]) and rows.loc[1, "measured_ttft_s"] == pytest.approx(0.9)
    assert rows["measured_tpot_s"].notna().all()


def test_a_closed_loop_compares_a_median_ttft_not_a_mean():
    """2,560 prompts at 256 in flight: the first 256 arrive at once and wait for one another's prefill, which a
    mean over the run carries and a median does not; a static batch's mean TTFT is its batch's, compared."""
    rows = comparable_rows(hand_rows(
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
    screened = screen(hand_rows({"shared_prefix": True}, {}))
    assert len(screened.rows) == 1
    assert screened.skipped["reason"].tolist() == ["shared-prefix workload (prefix caching not modelled)"]


def test_attention_data_parallel_inside_the_tp_group_is_compared_as_such_and_replicas_are_not():
    """SGLang's ``--tp 8 --dp 8 --enable-dp-attention`` on 8 GPUs runs attention data-parallel: compared with the
    roofline's ``enable_dp_attention``; ``--tp 4`` with 2 data-parallel replicas on 8 GPUs is two replicas, and
    ``dp`` 2 beside TP 1 is two copies of the model: neither is DP attention."""
    moe = {"model": "deepseek-ai/DeepSeek-V2-Lite"}
    frame = hand_rows(moe | {"tp": 8, "dp": 8, "gpu_count": 8}, {"tp": 4, "dp": 2, "gpu_count": 8}, {"tp": 1, "dp": 2},
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
    rows = comparable_rows(hand_rows(dp | {"engine": "trtllm"}, dp | {"engine": "sglang"},
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
    rows = comparable_rows(hand_rows(
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


def test_a_closed_loop_in_lockstep_compares_no_ttft():
    # every request the same lengths: they start and finish in waves, each TTFT waiting for its wave's prefill
    loop = {"ttft_median_ms": 900.0, "output_tok_s": 500.0}
    rows = comparable_rows(hand_rows(loop | {"lockstep": True}, loop)).set_index("row_id")
    assert math.isnan(rows.loc[0, "measured_ttft_s"]) and rows.loc[1, "measured_ttft_s"] == pytest.approx(0.9)
    assert rows["measured_tpot_s"].tolist() == pytest.approx([0.020] * 2)
    assert rows["measured_throughput"].tolist() == pytest.approx([500.0] * 2)


def test_a_one_batch_offline_run_is_a_static_batch_with_output_throughput_from_its_total():
    # dstack's shape: 4 prompts of 32,784 + 2,048 tokens at once on 8 GPUs, 590 tokens/s in all
    row = {"load_mode": "offline_max", "concurrency": None, "batch_size": 4, "num_prompts": 4, "gpu_count": 8,
           "tp": 8, "model": "meta-llama/Llama-3.1-70B", "input_len": 32784, "output_len": 2048,
           "total_num_tokens": 139328.0, "total_tok_s": 590.0, "tpot_median_ms": None}
    rows = comparable_rows(hand_rows(row, row | {"total_num_tokens": 139000.0})).set_index("row_id")
    assert list(rows.index) == [0]                                           # lengths not exact: no output share
    assert (rows.loc[0, "load"], rows.loc[0, "batch"]) == ("static_batch", 4)
    assert rows.loc[0, "measured_throughput"] == pytest.approx(590.0 * 2048 / 34832 / 8)   # 4.337 tokens/s per GPU


def test_replicas_are_accepted_when_the_rows_own_figures_say_each_ran_the_concurrency():
    # 16 GPUs, TP4: 4 replicas. In flight = tput/GPU × 16 × (TTFT + 1023·TPOT) / 1024 = tput × 0.4417
    # 1134 → 500.9 (nearer 4 × 128 = 512 than 128); 300 → 132.5 (nearer 128): layout not stated
    row = {"gpu_count": 16, "tp": 4, "model": "meta-llama/Llama-3.1-70B", "concurrency": 128, "input_len": 1024,
           "output_len": 1024, "tpot_median_ms": 27.0, "ttft_median_ms": 650.0, "output_tok_s_per_gpu": 1134.0}
    s = screen(hand_rows(row, row | {"output_tok_s_per_gpu": 300.0}))
    assert list(s.rows["row_id"]) == [0] and s.rows.loc[0, "replicas"] == 4
    assert "tp × pp" in s.skipped.set_index("row_id").loc[1, "reason"]
