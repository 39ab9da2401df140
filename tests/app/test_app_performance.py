"""Roofline & batch size, Latency budget and the Overview's throughput section through AppTest:
numbers worked independently, the same knee as the CLI's document, errors shown, never a traceback."""
from __future__ import annotations

import json

from calculators.perf.roofline import Roofline
from calculators.report.perf import knee_document
from calculators.specs.catalog import get_gpu, get_model
from tests.app import helpers
from tests.app.helpers import metrics

make_app = helpers.make_app
_clear_caches = helpers._clear_caches

ROOF, BUDGET = "views/roofline.py", "views/latency_budget.py"
L8_A100 = {"model": "meta-llama/Llama-3.1-8B", "gpu": "A100-80GB"}
L70_H100 = {"model": "meta-llama/Llama-3.1-70B", "gpu": "H100", "tp": "4"}


def _page(make_app, page: str, **params):
    at = make_app(**params)
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _cli_knee(model: str, gpu: str, tp: int = 1, **kw) -> dict:
    """``llmcap knee --json`` for the scenario's defaults (2000 in, 300 out, p99 1 s / 50 ms), with the token
    budget vllm serve picks (V1: 2,048 on an A100, 8,192 on GPUs of ≥ 70 GiB other than the A100)."""
    budget = 2048 if "A100" in gpu else 8192
    r = Roofline(get_model(model), get_gpu(gpu), tensor_parallel_size=tp, max_num_batched_tokens=budget)
    return knee_document(r, input_len=2000, output_len=300, **{"ttft_target_s": 1.0, "tpot_target_s": 0.05, **kw})


def test_default_scenario_fits_and_pages_render(make_app):
    # the default (Llama-3.1-8B, one H100) fits: both pages show figures, no error box
    for page in (ROOF, BUDGET):
        at = _page(make_app, page)
        assert not at.exception and not at.error and at.metric


def test_a_gpu_family_without_runs_says_it_takes_the_reference_set(make_app):
    # No corpus run is on a T4 (NVIDIA Turing): the caption naming the model in force says so.
    at = _page(make_app, ROOF, model="meta-llama/Llama-3.1-8B", gpu="T4")
    assert any("for the T4, every GPU family's runs (none on NVIDIA Turing: the reference set)" in c.value
               for c in at.caption)
    # and its timed figures carry the band measured with each GPU family left out of the fit (a 1B model: the
    # 8B one's 16 GB of weights leave a 16 GB T4 no KV cache)
    from calculators.perf.bands import load_bands
    at = _page(make_app, ROOF, model="meta-llama/Llama-3.2-1B", gpu="T4")
    caption = next(c.value for c in at.caption if c.value.startswith("80 % band from public measurements"))
    assert "each GPU family left out of the fit" in caption
    import re
    tpot = float(metrics(at)["TPOT at the knee [ms]"].replace(",", ""))
    lo, hi = (float(x.replace(",", "")) for x in re.search(r"TPOT ([\d.,]+)–([\d.,]+) ms", caption).groups())
    unseen = load_bands().unseen_family.tpot
    assert abs(lo - tpot * unseen.low_factor) < 0.1 and abs(hi - tpot * unseen.high_factor) < 0.1


def test_model_that_does_not_fit_is_a_message(make_app):
    # Llama-3.1-70B in bf16 (141 GB of weights) on one 80 GB H100: both pages say so, no exception
    for page in (ROOF, BUDGET):
        at = _page(make_app, page, model="meta-llama/Llama-3.1-70B", tp="1")
        assert any("does not fit" in e.value for e in at.error)


def test_roofline_8b_a100_numbers(make_app):
    at = _page(make_app, ROOF, **L8_A100)
    m = metrics(at)
    # ridge = 312 TFLOP/s ÷ 2.039 TB/s = 153.0 FLOP/byte (A100-80GB SXM, bf16 dense)
    assert m["Ridge point [FLOP/byte]"] == f"{312e12 / 2.039e12:,.0f}" == "153"
    cli = _cli_knee(L8_A100["model"], "A100-80GB")
    assert m["Knee batch [sequences]"] == f"{cli['knee_batch_size']:,.0f}"
    assert m["SLO batch [sequences]"] == f"{cli['slo_batch_size']:,.0f}"
    assert m["KV-capacity limit [sequences]"] == f"{cli['kv_batch_limit']:,}"
    # 8B: 2 × 8 KV heads × 128 × 2 B × 32 layers = 131,072 B/token; 2,300 tokens = 144 blocks of 16
    assert "Crossover batch [sequences]" in m and "Output tokens/s per GPU at the knee" in m
    assert m["Output tokens/s per replica at the knee"] == m["Output tokens/s per GPU at the knee"]  # TP 1
    assert at.success and "Knee at batch" in at.success[0].value
    assert any("datasheet roofline" in c.value for c in at.caption)  # the model in force is named
    assert any("for the A100-80GB-SXM, NVIDIA Ampere runs" in c.value for c in at.caption)  # runs of its own
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(charts) == 2
    assert {t["name"] for t in charts[0]["data"]} == {"output tokens/s per replica", "TPOT", "TTFT (no queue)"}
    names = {t["name"] for t in charts[1]["data"]}
    assert "datasheet roof" in names and any(n.startswith("decode") for n in names)
    assert any(n.startswith("prefill") for n in names)
    assert charts[1]["layout"]["xaxis"]["type"] == "log" and charts[1]["layout"]["yaxis"]["type"] == "log"
    maths = [e.label for e in at.expander if e.label.startswith("Show the math")]
    assert any("Knee rule" in x for x in maths) and any("Crossover" in x for x in maths)
    assert any("step time" in x for x in maths) and any("Ridge" in x for x in maths)
    assert len(at.get("download_button")) == 3


def test_roofline_h100_ridge_and_knee_match_cli(make_app):
    at = _page(make_app, ROOF, **L70_H100)
    m = metrics(at)
    assert m["Ridge point [FLOP/byte]"] == f"{989.4e12 / 3.35e12:,.0f}" == "295"
    cli = _cli_knee("meta-llama/Llama-3.1-70B", "H100", tp=4)
    assert m["Knee batch [sequences]"] == f"{cli['knee_batch_size']:,.0f}"
    # 70B at TP4 with 2,150 tokens of context: compute-bound, if ever, only past the batch the KV cache holds
    crossover, kv_limit = m["Crossover batch [sequences]"], m["KV-capacity limit [sequences]"]
    assert crossover == "—" or float(crossover.replace(",", "")) > float(kv_limit.replace(",", ""))
    assert crossover != "—" or any(c.value.startswith("No crossover batch: KV-cache reads keep") for c in at.caption)


def test_context_slider_and_threshold_move_the_knee(make_app):
    at = _page(make_app, ROOF, **L8_A100)
    before = metrics(at)
    at.select_slider(key="roof_ctx").set_value(256).run()
    assert not at.exception
    after = metrics(at)
    assert int(after["KV-capacity limit [sequences]"].replace(",", "")) > int(
        before["KV-capacity limit [sequences]"].replace(",", ""))
    r = Roofline(get_model(L8_A100["model"]), get_gpu("A100-80GB"))
    cli = knee_document(r, input_len=256, output_len=300, ttft_target_s=1.0, tpot_target_s=0.05,
                        max_batch=int(after["KV-capacity limit [sequences]"].replace(",", "")))
    assert after["Knee batch [sequences]"] == f"{cli['knee_batch_size']:,.0f}"
    at.number_input(key="knee_pct").set_value(50.0).run()
    assert not at.exception
    assert int(metrics(at)["Knee batch [sequences]"]) <= int(after["Knee batch [sequences]"].replace(",", ""))


def test_infeasible_slo_says_closest_feasible(make_app):
    at = _page(make_app, ROOF, model="meta-llama/Llama-3.1-70B", gpu="A100-80GB", tp="4", tpot_ms="10")
    cli = _cli_knee("meta-llama/Llama-3.1-70B", "A100-80GB", tp=4, tpot_target_s=None)  # reference curve
    best_tpot_ms = min(p["tpot_s"] for p in cli["curve"]) * 1e3
    text = " ".join(w.value for w in at.warning)
    assert "no batch size meets the SLO" in text and f"TPOT ≥ {best_tpot_ms:.0f} ms at any batch" in text
    assert metrics(at)["SLO batch [sequences]"] == "—"
    at = _page(make_app, BUDGET, model="meta-llama/Llama-3.1-70B", gpu="A100-80GB", tp="4", tpot_ms="10")
    assert any("Misses" in e.value for e in at.error)
    assert "Shortfall [ms]" in metrics(at)


def test_latency_budget_numbers(make_app):
    at = _page(make_app, BUDGET, **L8_A100)
    m = metrics(at)
    cli = _cli_knee(L8_A100["model"], "A100-80GB")
    batch = min(cli["knee_batch_size"], cli["slo_batch_size"])
    assert at.number_input(key="lb_batch").value == batch
    # default target = p99 TTFT 1,000 ms + (300 − 1) × p99 TPOT 50 ms = 15,950 ms
    assert at.number_input(key="lb_target").value == 15_950
    row = next(p for p in cli["curve"] if p["batch_size"] == batch)
    # the p99 TPOT at the load, at most the full batch's TPOT on the CLI's curve
    tpot = float(m["p99 TPOT [ms]"].replace(",", ""))
    assert 0 < tpot <= row["tpot_s"] * 1e3 + 0.005
    e2e = float(m["End-to-end [ms]"].replace(",", ""))
    ttft = float(m["TTFT = queue + prefill [ms]"].replace(",", ""))
    assert abs(e2e - (ttft + 299 * tpot)) < 1.6  # the metric is rounded to 0.005 ms, × 299
    # max_wait = target − service time (no network, seed 001)
    service = row["ttft_s"] * 1e3 + 299 * tpot
    assert abs(float(m["Largest max_wait for a micro-batcher [ms]"].replace(",", "")) - (15_950 - service)) < 1.6
    assert at.success and "Meets" in at.success[0].value
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["data"][0]["type"] == "waterfall"
    assert spec["data"][0]["x"] == ["queue (p99 wait for a slot and the token budget)", "prefill",
                                    "decode = (300 − 1) × p99 TPOT", "network overhead",
                                    "end-to-end"]
    table = at.dataframe[0].value
    assert abs(table["Margin [ms] (− = shortfall)"].iloc[-1] - (15_950 - e2e)) < 0.2


def test_latency_budget_network_and_target_inputs(make_app):
    at = _page(make_app, BUDGET, **L8_A100)
    before = float(metrics(at)["End-to-end [ms]"].replace(",", ""))
    at.number_input(key="lb_network").set_value(40.0).run()
    at.number_input(key="lb_target").set_value(1000.0).run()
    assert not at.exception
    m = metrics(at)
    assert abs(float(m["End-to-end [ms]"].replace(",", "")) - (before + 40)) < 0.2
    assert m["Largest max_wait for a micro-batcher [ms]"] == "0.0"
    assert any("Misses the 1,000 ms target" in e.value for e in at.error)


def test_too_few_replicas_is_an_unstable_queue_not_a_crash(make_app):
    at = _page(make_app, BUDGET, **L8_A100, rate="1000")
    at.number_input(key="lb_replicas").set_value(1).run()
    assert not at.exception
    assert any("unstable" in e.value for e in at.error)


def test_bad_tp_shows_the_error(make_app):
    for page in (ROOF, BUDGET, "views/overview.py"):
        at = _page(make_app, page, model="meta-llama/Llama-3.1-70B", tp="3")
        assert any("tensor_parallel_size" in e.value for e in at.error)


def test_overview_throughput_section(make_app):
    at = make_app(**L8_A100)
    assert not at.exception
    m = metrics(at)
    cli = _cli_knee(L8_A100["model"], "A100-80GB")
    batch = min(cli["knee_batch_size"], cli["slo_batch_size"])
    row = next(p for p in cli["curve"] if p["batch_size"] == batch)
    assert m["TPOT [ms]"] == f"{row['tpot_s'] * 1e3:,.2f}"
    assert m["Tokens/s per GPU"] == m["Tokens/s per replica"]  # TP 1
    assert any(s.value == "Throughput & latency" for s in at.subheader)
    assert "GPU KV cache size [tokens]" in m  # the existing content stays
