"""``llmcap perf``'s document: every timed figure with its 80 % band, the band of the GPU's own kind."""
from __future__ import annotations

import pytest

from calculators.perf.bands import load_bands
from calculators.perf.roofline import Efficiencies, Roofline
from calculators.report.perf import band_80, knee_document, perf_document
from calculators.specs.catalog import get_gpu, get_model
from tests.cli.test_cli import llmcap

L8 = "meta-llama/Llama-3.1-8B"


def _doc(gpu: str, model: str = L8, **kw) -> dict:
    r = Roofline(get_model(model), get_gpu(gpu), **kw)
    return perf_document(r, input_len=1000, output_len=200, concurrency=8)


def test_each_timed_figure_carries_the_shipped_band():
    doc = _doc("H100")
    b, f = doc["band_80"], load_bands()
    assert b["tpot_s"] == pytest.approx([doc["tpot_s"] * f.tpot.low_factor, doc["tpot_s"] * f.tpot.high_factor])
    assert b["ttft_s"] == pytest.approx([doc["ttft_s"] * f.ttft.low_factor, doc["ttft_s"] * f.ttft.high_factor])
    per_gpu = doc["output_tokens_per_s_per_gpu"]
    assert b["output_tokens_per_s_per_gpu"] == pytest.approx(
        [per_gpu * f.throughput.low_factor, per_gpu * f.throughput.high_factor])
    assert b["held_out"] == "source" and b["coverage"]["ttft"] == f.ttft.coverage


def test_a_gpu_of_a_family_without_runs_carries_the_family_band():
    # No corpus run is on a T4 (NVIDIA Turing): its band is the one measured leaving GPU families out
    doc = _doc("T4", "meta-llama/Llama-3.2-1B")
    unseen = load_bands().unseen_family
    assert doc["band_80"]["held_out"] == "family"
    assert doc["band_80"]["tpot_s"][1] == pytest.approx(doc["tpot_s"] * unseen.tpot.high_factor)
    assert "each GPU family left out" in doc["band_80"]["note"]


def test_own_efficiencies_carry_no_band():
    # the bands were measured on the shipped fit; a caller's compute efficiency of 0.5 is not that model
    r = Roofline(get_model(L8), get_gpu("H100"), efficiencies=Efficiencies(compute=0.5))
    doc = perf_document(r, input_len=1000, output_len=200, concurrency=8)
    assert doc["band_80"] is None and band_80(r, doc) is None


def test_an_overloaded_open_loop_has_no_ttft_band():
    r = Roofline(get_model(L8), get_gpu("H100"))
    doc = perf_document(r, input_len=2000, output_len=300, request_rate=100)
    assert doc["overloaded"] and doc["ttft_s"] is None and doc["band_80"]["ttft_s"] is None


def test_cli_prints_the_band_or_why_there_is_none():
    base = ("perf", "--model", L8, "--gpu", "H100", "--input-len", "1000", "--output-len", "200", "--concurrency", "8")
    p = llmcap(*base)
    assert p.returncode == 0, p.stderr
    assert "80 % band from public measurements: TTFT" in p.stdout and "each public source left out" in p.stdout
    own = llmcap(*base, "--compute-efficiency", "0.5")
    assert "no 80 % band: these are your own efficiencies" in own.stdout


def test_the_knee_curve_states_its_bands_factors():
    f = load_bands()
    doc = knee_document(Roofline(get_model(L8), get_gpu("H100")), input_len=1000, output_len=200)
    assert doc["band_80_factors"]["ttft"] == [f.ttft.low_factor, f.ttft.high_factor]
    own = Roofline(get_model(L8), get_gpu("H100"), efficiencies=Efficiencies(compute=0.5))
    assert knee_document(own, input_len=1000, output_len=200)["band_80_factors"] is None


def test_an_open_loop_gives_the_fleet_plans_p99s_at_its_max_num_seqs_and_share_of_the_load():
    """One truth: ``llmcap perf --request-rate λ/replicas --max-num-seqs B`` prints the p99 TTFT and TPOT that the
    fleet plan of batch B and that many replicas prices (Llama-3.1-70B on four H100s, 40 requests/s)."""
    from calculators.planning.fleet import Layout, Workload, plan_layout
    m, g = get_model("meta-llama/Llama-3.1-70B-Instruct"), get_gpu("H100")
    w = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0)
    plan = plan_layout(m, Layout(g, 4), w, max_model_len=8192)
    r = Roofline(m, g, tensor_parallel_size=4, max_num_batched_tokens=8192)
    doc = perf_document(r, input_len=2000, output_len=300, request_rate=40 / plan.replicas,
                        max_num_seqs=plan.batch_size)
    assert doc["p99_slots"] == plan.batch_size
    assert doc["ttft_p99_s"] == pytest.approx(plan.ttft_p99_s, rel=1e-9)
    assert doc["tpot_p99_s"] == pytest.approx(plan.tpot_p99_s, rel=1e-9)
    assert doc["tpot_s"] < doc["tpot_p99_s"]  # the mean, then the p99
    assert "ttft_p99_s" not in _doc("H100")  # a closed loop has no arrivals to queue


@pytest.mark.parametrize("gpu, tp, pcie", [("L40S", 4, True), ("L40S", 1, False), ("H100", 4, False)])
def test_the_perf_document_says_when_the_all_reduce_runs_over_pcie(gpu, tp, pcie):
    r = Roofline(get_model("meta-llama/Llama-3.1-70B"), get_gpu(gpu), tensor_parallel_size=tp, quantization="fp8")
    doc = perf_document(r, input_len=500, output_len=100, concurrency=4)
    assert doc["allreduce_over_pcie"] is pcie


def test_the_perf_document_says_when_the_token_budget_caps_the_running_batch():
    # vLLM's budget of 8,192 tokens a step, 2,000-token prompts and 50-token answers: the decodes first leave room
    # for prompts to enter only as fast as floor(8,192 × 50 / 2,050) = 199 running requests finish, fewer than
    # the KV cache's 220; a prompts-first engine (SGLang) has no such cap.
    m, g = get_model("meta-llama/Llama-3.1-8B"), get_gpu("H100-SXM")
    doc = perf_document(Roofline(m, g), input_len=2000, output_len=50, concurrency=300, max_num_seqs=1024)
    assert doc["budget_running_limit"] == 199 == doc["batch_size"]
    assert "199 running requests" in doc["warning"] and doc["queue_wait_s"] > 0
    sglang = perf_document(Roofline(m, g, engine="sglang"), input_len=2000, output_len=50, concurrency=300,
                           max_num_seqs=1024)
    assert sglang["budget_running_limit"] is None and sglang["batch_size"] > 199
