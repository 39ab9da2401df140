"""Every view through AppTest: inputs in, independently worked numbers out, no exception element."""
from __future__ import annotations

import json
import math

from tests.app import helpers
from tests.app.helpers import LOG_70B_TP4, metrics, open_math, permalink

# fixtures (the helpers are not a conftest.py: see tests/app/helpers.py)
make_app = helpers.make_app
_clear_caches = helpers._clear_caches

GIB = 2**30
DEEP = {"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "tp": "4"}


def test_overview_deep_link_numbers(make_app):
    at = make_app(**DEEP)
    assert not at.exception
    m = metrics(at)
    # 2 (K,V) × (8 KV heads / TP 4) × head_dim 128 × 2 B × 80 layers = 81,920 B per token per GPU
    assert m["KV cache per token per GPU [bytes]"] == f"{2 * (8 // 4) * 128 * 2 * 80:,}"
    assert "GPU KV cache size [tokens]" in m and "Recommended max_num_seqs" in m
    assert "Suggested max_num_seqs" not in m  # one recommendation, not three candidates
    assert at.success and at.success[0].value.startswith("fits")
    serve = next(t.value for t in at.text if t.value.startswith("vllm serve"))
    assert serve.startswith("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4")
    assert f"--max-num-seqs {m['Recommended max_num_seqs'].replace(',', '')} " in serve  # the line uses it
    assert len([e for e in at.expander if e.label.startswith("Show the math")]) >= 5


def _math_texts(at) -> dict[str, str]:
    return {e.label: " ".join(m.value for m in e.markdown) for e in at.expander if e.label.startswith("Show the math")}


def test_math_is_sent_when_opened_and_follows_the_inputs(make_app):
    at = make_app(**DEEP)
    assert set(_math_texts(at).values()) == {""}  # collapsed: nothing sent to the browser
    maths = _math_texts(open_math(at))
    assert not at.exception and all(maths.values())
    # hand-worked: 2 × (8 KV heads // TP 4) × head_dim 128 × 2 B × 80 layers = 81,920 B per token per GPU
    assert "2 × max(1, 8 // 4) × 128 × 2 × 80 = 2 × 2 × 128 × 2 × 80 = 81,920 B" in \
        maths["Show the math: KV cache per token"]
    at.number_input(key="tp").set_value(8).run()  # the expanders stay open; their numbers follow
    assert "2 × max(1, 8 // 8) × 128 × 2 × 80 = 2 × 1 × 128 × 2 × 80 = 40,960 B" in \
        _math_texts(at)["Show the math: KV cache per token"]


def test_kv_memory_from_real_log_numbers(make_app):
    # A real vLLM 0.10.2 log: Available KV cache memory 32.06 GiB → 420,208 tokens, 3.21x at 131,072
    at = make_app(**DEEP, kv_mem="32.06", vllm="0.10.2", max_len="131072")
    assert not at.exception
    blocks = math.floor(int(32.06 * GIB) / (16 * 81_920))
    assert blocks * 16 == 420_208
    m = metrics(at)
    assert m["GPU KV cache size [tokens]"] == "420,208"
    assert m["Max concurrency at max_model_len 131,072"] == f"{blocks / (131_072 // 16):.2f}x" == "3.21x"


def test_widget_change_recomputes(make_app):
    at = make_app(**DEEP)
    at.number_input(key="tp").set_value(8).run()
    assert not at.exception
    assert metrics(at)["KV cache per token per GPU [bytes]"] == f"{2 * 1 * 128 * 2 * 80:,}"  # 40,960


def test_invalid_and_unknown_params_reported(make_app):
    at = make_app(model="no-such-model", tp="abc", util="7", foo="bar")
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    assert "foo" in text and "tp='abc'" in text and "util='7'" in text and "no-such-model" in text
    assert metrics(at)  # the page still computes with defaults


def test_bad_tp_error_next_to_input(make_app):
    at = make_app(**DEEP)
    at.number_input(key="tp").set_value(3).run()
    assert not at.exception
    assert any("tensor_parallel_size" in e.value for e in at.sidebar.error)
    assert at.error  # also in the page


def test_permalink_has_every_input(make_app):
    at = make_app(**DEEP)
    link = permalink(at)
    for key in ("v=1", "model=", "gpu=H100-SXM", "tp=4", "pp=1", "dp=1", "ep=false", "dtype=", "quant=", "kv_dtype=",
                "util=", "max_len=131072", "mnbt=", "max_seqs=", "block=16", "eager=", "vllm=", "mean_len=",
                "p95_len="):
        assert key in link


def test_data_parallel_ranks_from_the_sidebar(make_app):
    # DeepSeek-R1 on H200s as vLLM's --data-parallel-size 8 --enable-expert-parallel: the KV figures are one rank's,
    # the link keeps both flags, and the timed figures are the data-parallel-attention model's (llmcap perf
    # --enable-dp-attention -tp 8 at 8 x the recommended max_num_seqs), each rank's max_num_seqs in the serve line
    from calculators.perf.roofline import Roofline
    from calculators.report.perf import perf_document
    from calculators.specs.catalog import get_gpu, get_model
    from calculators.vllm.capacity import vllm_capacity
    r1, h200 = get_model("deepseek-ai/DeepSeek-R1"), get_gpu("H200-SXM")
    at = make_app("views/kv_cache.py", model=r1.id, gpu=h200.id, dp="8", ep="true", max_len="8192")
    assert not at.exception and not at.error
    rank = vllm_capacity(r1, gpu=h200, tensor_parallel_size=1, expert_parallel_size=8, max_model_len=8192)

    def shown(at) -> str:
        return " ".join(x.value for x in [*at.caption, *at.markdown, *at.text, *at.code, *at.info])
    assert f"{rank.kv_cache_tokens:,}" in shown(at)
    assert "dp=8" in permalink(at) and "ep=true" in permalink(at)
    at.switch_page("views/overview.py").run()
    assert not at.exception
    per_rank = int(metrics(at)["Recommended max_num_seqs"].replace(",", ""))
    assert "--data-parallel-size 8" in shown(at) and f"--max-num-seqs {per_rank} " in shown(at)
    assert "per data-parallel rank: vLLM starts 8 engines" in shown(at)
    doc = perf_document(Roofline(r1, h200, tensor_parallel_size=8, enable_dp_attention=True,
                                 max_num_batched_tokens=rank.settings.max_num_batched_tokens),
                        input_len=2000, output_len=300, concurrency=8 * per_rank)
    assert metrics(at)["Tokens/s per replica"] == f"{doc['output_tokens_per_s']:,.0f}"
    assert "each of the 8 data-parallel ranks" in shown(at)
    for page in ("views/roofline.py", "views/latency_budget.py"):
        at.switch_page(page).run()
        assert not at.exception and any(c.value.startswith("80 % band") for c in at.caption), page
    at.switch_page("views/simulator.py").run()  # the ranks' pools together, as llmcap simulate does
    assert not at.exception
    assert any(f"KV cache: {8 * rank.binding.num_blocks:,} blocks" in c.value for c in at.caption)
    assert at.session_state["sim_a_mns"] == 8 * rank.settings.max_num_seqs


def test_data_parallel_ranks_the_model_does_not_time_say_so(make_app):
    # TP 2 inside each of 4 data-parallel ranks: the capacity is one rank's, the timed pages say they do not price it
    from app.ui.perf import DATA_PARALLEL_NOTE
    at = make_app(model="deepseek-ai/DeepSeek-R1", gpu="H200-SXM", tp="2", dp="4", ep="true", max_len="8192")
    assert not at.exception
    for page in ("views/overview.py", "views/roofline.py", "views/latency_budget.py", "views/simulator.py"):
        at.switch_page(page).run()
        assert not at.exception
        assert any(DATA_PARALLEL_NOTE in i.value for i in [*at.info, *at.warning]), page


def test_kv_cache_view(make_app):
    at = make_app(**DEEP)
    at.switch_page("views/kv_cache.py").run()
    assert not at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 2
    spec = json.loads(charts[0].proto.spec)
    assert {t["name"] for t in spec["data"]} == {"weights", "activation", "non-torch", "CUDA graphs", "KV cache",
                                                "headroom"}
    assert metrics(at)["KV cache per token per GPU [bytes]"] == "81,920"


def test_version_selector_changes_printed_lines(make_app):
    at = make_app(**DEEP, kv_mem="32.06")
    at.switch_page("views/kv_cache.py").run()
    at.selectbox(key="lines_vllm").set_value("0.10.2").run()
    assert not at.exception
    assert any("GPU KV cache size: 420,208 tokens" in c.value for c in at.code)


def test_pasted_log_is_read(make_app):
    at = make_app(**DEEP)
    at.switch_page("views/kv_cache.py").run()
    at.text_area(key="log_text").input(LOG_70B_TP4).run()
    assert not at.exception
    assert at.success and "0.10.2" in at.success[0].value
    frames = [d.value for d in at.dataframe]
    measured = frames[-1]
    row = measured[measured["Quantity"] == "GPU KV cache size [tokens]"].iloc[0]
    assert row["Printed by vLLM"] == 420_208 and row["Predicted"] == 420_208
    assert "difference_pct" not in measured.columns and "Difference [%]" in measured.columns
    assert any("Maximum concurrency for 131,072 tokens per request: 3.21x" in c.value for c in at.code)


def test_pasted_garbage_is_an_error_not_a_crash(make_app):
    at = make_app(**DEEP)
    at.switch_page("views/kv_cache.py").run()
    at.text_area(key="log_text").input("hello, this is my shopping list").run()
    assert not at.exception
    assert any("does not look like a vLLM" in e.value for e in at.error)
    assert metrics(at)  # rest of the page still there


def test_catalog_view_and_custom_gpu(make_app):
    at = make_app()
    at.switch_page("views/catalog.py").run()
    assert not at.exception
    assert len(at.dataframe[0].value) >= 25
    at.text_input(key="cg_name").input("MyGPU")
    at.number_input(key="cg_mem").set_value(0.0)
    at.button[0].click()  # form submit
    at.run()
    assert any("memory_gib" in e.value for e in at.error)  # zero memory refused
    at.number_input(key="cg_mem").set_value(96.0)
    at.button[0].click()
    at.run()
    assert not at.exception and at.success
    at.button(key="use_gpu_MyGPU").click().run()
    assert at.selectbox(key="gpu").value == "MyGPU"
    assert "cgpu=MyGPU" in permalink(at)


def test_custom_gpu_from_link(make_app):
    at = make_app(gpu="MyGPU", cgpu="MyGPU~96~3000~900", model="meta-llama/Llama-3.1-8B")
    assert not at.exception
    assert at.selectbox(key="gpu").value == "MyGPU"
    assert "96.00 GiB" in " ".join(c.value for c in at.code) or metrics(at)


def test_a_custom_gpu_plans_on_the_fleet_and_compare_pages_without_public_runs(make_app):
    """A custom GPU has no family in the public corpus: the Fleet planner and Compare GPUs plan it and show no public
    runs for it (the lookup of its family's runs must not refuse its id)."""
    at = make_app(gpu="MyGPU", cgpu="MyGPU~96~3000~900", model="meta-llama/Llama-3.1-8B", fleet_gpus="MyGPU")
    at.switch_page("views/fleet.py").run(timeout=120)
    assert not at.exception and at.selectbox(key="fleet_layout").value.startswith("MyGPU")
    assert not any(c.value.startswith(("Public runs", "No public run")) for c in at.caption)
    at.switch_page("views/compare_gpus.py").run(timeout=120)
    assert not at.exception
    frame = at.dataframe[0].value.set_index("GPU")
    assert frame.loc["MyGPU", "public runs: measured ÷ model"] == "—"


def test_upload_config(make_app):
    at = make_app()
    at.switch_page("views/catalog.py").run()
    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 16,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256,
           "max_position_embeddings": 8192, "torch_dtype": "bfloat16", "_name_or_path": "me/tiny"}
    at.file_uploader(key="cm_upload").upload("config.json", json.dumps(cfg).encode(), "application/json").run()
    assert not at.exception and at.success
    at.button(key="use_model_me/tiny").click().run()
    assert at.selectbox(key="model").value == "me/tiny"
    assert "cmodel=" in permalink(at)
    at.switch_page("views/overview.py").run()
    # 2 × 8 KV heads × head_dim 64 × 2 B × 16 layers = 32,768 B per token
    assert metrics(at)["KV cache per token per GPU [bytes]"] == "32,768"


def test_upload_not_a_config(make_app):
    at = make_app()
    at.switch_page("views/catalog.py").run()
    at.file_uploader(key="cm_upload").upload("config.json", b"not json at all", "application/json").run()
    assert not at.exception
    assert any("not a usable config.json" in e.value for e in at.error)


def test_bad_length_mix_warns_and_keeps_the_rest(make_app):
    at = make_app(**DEEP, mean_len="4000", p95_len="100")
    assert not at.exception
    assert any("p95_len" in w.value for w in at.sidebar.warning)
    m = metrics(at)
    assert m["KV cache per token per GPU [bytes]"] == "81,920" and "Recommended max_num_seqs" in m


def test_accuracy_page_shows_the_scoreboard(make_app):
    at = make_app()
    at.switch_page("views/accuracy.py").run(timeout=120)
    assert not at.exception
    assert at.title[0].value and at.dataframe and at.get("plotly_chart")
    # the GPUs no row judges are named (their family has no compared run), and how far off an unseen family
    # comes out is shown with the band such a GPU takes
    assert any("no row judges them" in c.value and "T4" in c.value and "MI250X" in c.value for c in at.caption)
    assert any(c.value.startswith("80 % band of such a GPU") for c in at.caption)
    assert any(s.value == "A GPU family the fit has not seen" for s in at.subheader)
    # each setup the corpus ran, with its held-out ratio (the default metric is TPOT)
    from calculators.perf.published_runs import load_published_runs
    setups = next(d.value for d in at.dataframe if "Measured ÷ model (median)" in d.value.columns)
    tpot = [e for e in load_published_runs().run if e.metric == "tpot"]
    assert len(setups) == len(tpot)
    row = setups[(setups["Model"] == "deepseek-ai/DeepSeek-R1") & (setups["GPU"] == "B200")
                 & (setups["Layout"] == "TP8×PP1") & (setups["Weights"] == "fp8")
                 & (setups["Prompt tokens"] == "2,049–8,192")].iloc[0]
    key = ("deepseek-ai/DeepSeek-R1", "B200", 8, 1, False, "fp8", 1)
    entry = next(e for e in tpot if (e.model, e.gpu, e.tensor_parallel_size, e.pipeline_parallel_size, e.dp_attention,
                                     e.weights, e.prompt_bin) == key)
    assert math.isclose(row["Measured ÷ model (median)"], entry.ratio) and row["Rows"] == entry.rows


def test_log_of_another_model_warns_and_offers_to_switch(make_app):
    # the default scenario is Llama-3.1-8B on one H100; the log is of the 70B at TP 4
    at = make_app()
    at.switch_page("views/kv_cache.py").run()
    log = LOG_70B_TP4.replace("INFO 09-10 12:00:01", "INFO 09-10 12:00:00 [core.py:1] Initializing a V1 LLM engine "
                              "(v0.10.2) with config: model='meta-llama/Llama-3.1-70B-Instruct', "
                              "tensor_parallel_size=4\nINFO 09-10 12:00:01", 1)
    at.text_area(key="log_text").input(log).run()
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "another setup" in warning and "this log is of meta-llama/Llama-3.1-70B-Instruct" in warning
    assert "(32.89 GiB per GPU) are -54 % off" in warning  # 14.99 GiB predicted for the 8B
    at.button(key="log_switch").click().run()
    assert at.selectbox(key="model").value == "meta-llama/Llama-3.1-70B-Instruct"
    assert at.number_input(key="tp").value == 4 and at.selectbox(key="vllm").value == "0.10.2"
    assert not [w for w in at.warning if "another setup" in w.value]  # now the log fits the scenario


def test_use_these_numbers_applies_the_printed_kv_memory(make_app):
    at = make_app(**DEEP)
    at.switch_page("views/kv_cache.py").run()
    at.text_area(key="log_text").input(LOG_70B_TP4).run()
    assert not [w for w in at.warning if "another setup" in w.value]  # the same model at TP 4: no warning
    at.button(key="log_use").click().run()
    assert not at.exception
    assert at.number_input(key="kv_mem").value == 32.06 and at.selectbox(key="vllm").value == "0.10.2"
    assert at.number_input(key="max_len").value == 131_072
    at.switch_page("views/overview.py").run()
    # 32.06 GiB → floor(32.06 × 2^30 / (16 × 81,920 B)) = 26,263 blocks = 420,208 tokens, as vLLM printed
    assert metrics(at)["GPU KV cache size [tokens]"] == "420,208"


def test_use_these_numbers_takes_the_logs_sampler(make_app):
    at = make_app(**DEEP)
    at.switch_page("views/kv_cache.py").run()
    log = LOG_70B_TP4 + ("\nINFO 09-10 12:00:02 [topk_topp_sampler.py:58] Using FlashInfer for top-p & top-k "
                         "sampling.")
    at.text_area(key="log_text").input(log).run()
    assert at.selectbox(key="sampler").value == "auto"
    at.button(key="log_use").click().run()
    assert not at.exception and at.selectbox(key="sampler").value == "on"


def test_a_setup_the_public_corpus_ran_shows_what_those_runs_measured(make_app):
    """DeepSeek-R1 on eight B200s: the Overview lists, under the band, the held-out ratio of the public runs of
    that setup at prompts of the scenario's size, one line per metric, as ``llmcap perf`` prints them."""
    from calculators.perf.published_runs import published_runs
    from calculators.report.perf import published_run_text
    from calculators.specs.catalog import get_model
    at = make_app(model="deepseek-ai/DeepSeek-R1", gpu="B200", tp="8")
    assert not at.exception
    note = next(c.value for c in at.caption if c.value.startswith("Public runs of this setup"))
    entries = published_runs(get_model("deepseek-ai/DeepSeek-R1"), "B200", 8, None, 2000)  # the scenario's prompt
    assert [e.metric for e in entries] == ["ttft", "tpot", "throughput"]
    assert all(f"- {published_run_text(e.model_dump())}" in note for e in entries)
    assert "SemiAnalysis" in note


def test_a_setup_no_public_run_covers_shows_what_the_runs_on_its_gpu_family_measured(make_app):
    """Qwen2.5-7B on one L40S: the corpus ran no such setup, so the Overview lists what every public run on Ada
    GPUs measured against the model, as ``llmcap perf`` prints it."""
    from calculators.perf.published_runs import family_runs
    from calculators.report.perf import published_run_text
    from calculators.specs.catalog import get_gpu
    at = make_app(model="Qwen/Qwen2.5-7B-Instruct", gpu="L40S")
    assert not at.exception
    note = next(c.value for c in at.caption if c.value.startswith("No public run of this setup"))
    assert "public runs on NVIDIA Ada GPUs, any model and layout" in note
    assert all(f"- {published_run_text(e.model_dump())}" in note for e in family_runs(get_gpu("L40S")))


def test_timed_figures_carry_their_band(make_app):
    import re

    from calculators.perf.bands import timing_band
    at = make_app()
    tpot_ms = float(metrics(at)["TPOT [ms]"].replace(",", ""))
    caption = next(c.value for c in at.caption if c.value.startswith("80 % band from public measurements"))
    lo, hi = (float(x.replace(",", "")) for x in re.search(r"TPOT ([\d.,]+)–([\d.,]+) ms", caption).groups())
    band = timing_band("tpot")
    assert abs(lo - tpot_ms * band.low_factor) < 0.1 and abs(hi - tpot_ms * band.high_factor) < 0.1
    assert f"at least {min(timing_band(m).coverage for m in ('tpot', 'ttft', 'throughput')):.0%}" in caption
    for page in ("views/roofline.py", "views/latency_budget.py"):
        at.switch_page(page).run()
        assert any(c.value.startswith("80 % band from public measurements") for c in at.caption), page


def test_overview_costs_the_scenario_at_its_traffic(make_app):
    from calculators.planning.fleet import Layout, plan_layout
    from calculators.scenario import Scenario
    from calculators.specs.catalog import get_gpu, get_model
    at = make_app(**DEEP, rate="20")
    m = metrics(at)
    plan = plan_layout(get_model("meta-llama/Llama-3.1-70B"), Layout(get_gpu("H100"), 4),
                       Scenario(request_rate_per_s=20).workload())
    assert m["GPUs"] == f"{plan.total_gpus:,}" and plan.total_gpus % 4 == 0
    # the same labels as the Fleet planner and the quote; a month is 730 h of the hourly figure
    hour, month = (float(m[k].strip("$").replace(",", "")) for k in ("$/hour", "$/month (730 h)"))
    assert abs(month - 730 * hour) <= 730 * 0.005 + 0.5
    assert "$/1M output tokens" in m
    # and the plan's p99s, the figures its targets were checked against
    assert any(f"TTFT {plan.ttft_p99_s * 1e3:,.0f} ms, TPOT {plan.tpot_p99_s * 1e3:,.1f} ms" in c.value
               for c in at.caption)


def test_overview_cost_without_a_tpot_target_says_how_slowly_the_layout_streams(make_app):
    from calculators.planning.fleet import Layout, plan_layout
    from calculators.scenario import Scenario
    from calculators.specs.catalog import get_gpu, get_model
    at = make_app(**DEEP, rate="20", tpot_ms="0")
    assert not at.exception
    plan = plan_layout(get_model("meta-llama/Llama-3.1-70B"), Layout(get_gpu("H100"), 4),
                       Scenario(request_rate_per_s=20, tpot_p99_ms=None).workload())
    note = next(c.value for c in at.caption if c.value.startswith("No TPOT target:"))
    assert f"p99 TPOT {plan.tpot_p99_s * 1e3:,.1f} ms at batch {plan.batch_size:,}" in note and "sidebar" in note
    assert not any(c.value.startswith("No TPOT target:") for c in make_app(**DEEP, rate="20").caption)


def test_kv_cache_view_shows_the_results_notes(make_app):
    """DeepSeek-R1 on vLLM 0.7.3 at TP 8: the page says how much of the weights are MLA matrices derived at load."""
    at = make_app(model="deepseek-ai/DeepSeek-R1", gpu="H200-SXM", tp="8", vllm="0.7.3", max_len="32768")
    at.switch_page("views/kv_cache.py").run()
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Note: weights include 4.47 GiB per GPU") and "MLA" in c for c in captions)
