"""Fleet planner and Compare GPUs through AppTest, on the issue's scenario."""
from __future__ import annotations

import pytest

from calculators.perf.roofline import Efficiencies
from calculators.planning.fleet import Workload, plan_fleet
from calculators.specs.catalog import get_gpu, get_model
from tests.app import helpers

make_app = helpers.make_app
_clear_caches = helpers._clear_caches

ISSUE = {"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "in": "2000", "out": "300", "rate": "40",
         "ttft_ms": "1000", "tpot_ms": "50"}


def test_fleet_page_first_row_is_plan_fleet_first_plan(make_app):
    at = make_app(**ISSUE)
    at.switch_page("views/fleet.py").run(timeout=120)
    assert not at.exception
    assert at.multiselect(key="fleet_gpus").value == ["H100-SXM", "H200-SXM", "MI300X"]
    w = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0, tpot_p99_s=0.05)
    best = plan_fleet(get_model(ISSUE["model"]), [get_gpu(g) for g in ("H100", "H200", "MI300X")], w,
                      efficiencies=Efficiencies())[0]
    row = at.dataframe[0].value.iloc[0]
    assert (row["GPU"], row["TP"], row["PP"], row["replicas"], row["GPUs"], row["batch"]) == (
        best.gpu, best.tensor_parallel_size, best.pipeline_parallel_size, best.replicas, best.total_gpus,
        best.batch_size)
    assert row["$/hour"] == best.usd_per_hour and bool(row["meets SLO"])
    assert at.success and at.success[0].value.startswith("best:")
    assert any(f"vllm serve {ISSUE['model']}" in c.value for c in at.code)
    assert len(at.get("plotly_chart")) == 2
    labels = {b.label for b in at.get("download_button")}
    assert {"Download quote (HTML)", "Download quote (PDF)", "Download ranked table (JSON)",
            "Download ranked table (CSV)"} <= labels


def test_no_tpot_target_says_so_and_how_slowly_the_best_layout_streams(make_app):
    """0 in the TPOT target means none: the caption says "no p99 TPOT target" (not "≤ 0 ms") and the page says
    at what TPOT the best layout streams, as ``unbounded_tpot_note`` words it."""
    at = make_app(**{**ISSUE, "tpot_ms": "0"})
    at.switch_page("views/fleet.py").run(timeout=120)
    assert not at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "p99 TTFT ≤ 1,000 ms · no p99 TPOT target" in captions and "≤ 0 ms" not in captions
    w = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0)
    best = plan_fleet(get_model(ISSUE["model"]), [get_gpu(g) for g in ("H100", "H200", "MI300X")], w,
                      efficiencies=Efficiencies())[0]
    info = " ".join(i.value for i in at.info)
    assert f"p99 TPOT {best.tpot_p99_s * 1e3:,.1f} ms at batch {best.batch_size:,}" in info and "sidebar" in info


def test_compare_page(make_app):
    at = make_app(**ISSUE)
    at.switch_page("views/compare_gpus.py").run(timeout=120)
    assert not at.exception
    frame = at.dataframe[0].value
    assert list(frame["GPU"]) == ["H100-SXM", "H200-SXM", "MI300X"]
    assert frame["meets SLO"].all()
    assert len(at.get("plotly_chart")) == 1
    # each row's public runs: those of its own best layout's setup, as the Fleet planner and the quote list them
    import re

    from calculators.report.perf import family_published_runs, published_ratios_text, setup_published_runs
    for _, row in frame.iterrows():  # or, where the corpus ran no such setup, those of the GPU's family
        tp, pp = (int(x) for x in re.search(r"TP(\d+)×PP(\d+)", row["layout"]).groups())
        entries = setup_published_runs(get_model(ISSUE["model"]), row["GPU"], tp, None, 2000,
                                       pipeline_parallel_size=pp) or family_published_runs(get_gpu(row["GPU"]))
        assert entries and row["public runs: measured ÷ model"] == published_ratios_text(entries)
    facts = at.dataframe[1].value.set_index("GPU")["efficiencies fitted on"]
    assert facts.to_dict() == {"H100-SXM": "NVIDIA Hopper runs", "H200-SXM": "NVIDIA Hopper runs",
                               "MI300X": "AMD CDNA3 runs"}
    # each GPU's TPOT band in its row: the sources' band for the H100 (its TPOT is the estimate: no conservative)
    from calculators.perf.bands import load_bands
    h100 = frame.set_index("GPU").loc["H100-SXM"]
    lo, hi = (float(x.replace(",", "")) for x in h100["TPOT p99 80 % band [ms]"].split("–"))
    bands = load_bands()
    assert lo == pytest.approx(h100["TPOT p99 [ms]"] * bands.tpot.low_factor, abs=0.06)
    assert hi == pytest.approx(h100["TPOT p99 [ms]"] * bands.tpot.high_factor, abs=0.06)
    # and its p99 TTFT band, the plan's (a queue in front of the band's prefill: not the TTFT factors × the p99)
    w = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0, tpot_p99_s=0.05)
    plan = next(p for p in plan_fleet(get_model(ISSUE["model"]), [get_gpu("H100")], w, efficiencies=Efficiencies())
                if p.meets_slo)
    assert h100["TTFT p99 80 % band [ms]"] == (f"{plan.ttft_p99_band_low_s * 1e3:,.1f}–"
                                               f"{plan.ttft_p99_band_high_s * 1e3:,.1f}")
    at.multiselect(key="compare_gpus").set_value(["H100-SXM", "T4"]).run(timeout=120)
    facts = at.dataframe[1].value.set_index("GPU")["efficiencies fitted on"]
    assert facts["T4"] == "every GPU family's runs (none on NVIDIA Turing: the reference set)"
    assert "p99 TTFT ≤ 1,000 ms · p99 TPOT ≤ 50 ms" in " ".join(c.value for c in at.caption)


FLEET = {"fleet_cap": "0.7", "fleet_n1": "true", "fleet_price": "2.5", "fleet_conservative": "true"}


def test_fleet_inputs_and_chosen_layout_come_back_from_the_link(make_app):
    at = make_app(**ISSUE, **FLEET, fleet_gpus=["H100-SXM", "H200-SXM"], fleet_layout="H200-SXM · TP8×PP1")
    at.switch_page("views/fleet.py").run(timeout=120)
    assert not at.exception
    assert at.multiselect(key="fleet_gpus").value == ["H100-SXM", "H200-SXM"]
    assert at.slider(key="fleet_cap").value == 0.7 and at.checkbox(key="fleet_n1").value
    assert at.number_input(key="fleet_price").value == 2.5 and at.checkbox(key="fleet_conservative").value
    assert at.selectbox(key="fleet_layout").value == "H200-SXM · TP8×PP1"
    assert not any("ignored" in w.value for w in at.sidebar.warning)  # the scenario reader leaves them alone
    link = next(c.value for c in at.caption if c.value.startswith("Quote permalink"))
    for part in ("fleet_gpus=H100-SXM&fleet_gpus=H200-SXM", "fleet_cap=0.7", "fleet_n1=true", "fleet_price=2.5",
                 "fleet_conservative=true", "fleet_layout=H200-SXM+%C2%B7+TP8%C3%97PP1", "rate=40"):
        assert part in link
    assert any("Conservative sizing" in c.value for c in at.caption)


def test_chosen_layout_costs_bands_and_simulator(make_app):
    at = make_app(**ISSUE)
    at.switch_page("views/fleet.py").run(timeout=120)
    assert not at.exception
    shown = helpers.metrics(at)
    for label in ("$/hour", "$/month (730 h)", "$/year (8,760 h)", "$/1M input tokens", "$/1M output tokens",
                  "$/1M tokens (input + output)"):
        assert shown[label].startswith("$"), label
    assert any("80 % band of the estimate" in m.value for m in at.markdown)
    frame = next(d.value for d in at.dataframe if "simulator [ms]" in d.value.columns)
    assert list(frame["figure"]) == ["p99 TTFT", "p99 TPOT"]
    assert (frame[["plan [ms]", "simulator [ms]"]] > 0).all().all()
    assert any("simulator" in x.value for x in [*at.success, *at.warning])  # agrees, or which to trust
    assert at.checkbox(key="quote_alternatives").value is False


def test_a_moe_fleet_ranks_data_parallel_attention_layouts_and_names_them(make_app):
    """DeepSeek-R1 at 20 requests/s: the planner also sizes attention data-parallel across the 8 GPUs, and the
    page shows the same first plan as ``plan_fleet``, with its layout named and chosen through the link."""
    case = {"model": "deepseek-ai/DeepSeek-R1", "gpu": "H200-SXM", "in": "2000", "out": "1000", "rate": "20",
            "ttft_ms": "3000", "tpot_ms": "80", "max_len": "16384"}
    at = make_app(**case, fleet_gpus=["H200-SXM"], fleet_layout="H200-SXM · TP8×PP1 · DP attention")
    at.switch_page("views/fleet.py").run(timeout=180)
    assert not at.exception
    w = Workload(request_rate_per_s=20, input_len=2000, output_len=1000, ttft_p99_s=3.0, tpot_p99_s=0.08)
    best = plan_fleet(get_model(case["model"]), [get_gpu("H200-SXM")], w, efficiencies=Efficiencies(),
                      max_model_len=16384)[0]
    row = at.dataframe[0].value.iloc[0]
    assert (row["GPU"], row["TP"], row["DP attention"], row["replicas"], row["batch"]) == (
        best.gpu, best.tensor_parallel_size, "yes" if best.dp_attention else "", best.replicas, best.batch_size)
    assert at.selectbox(key="fleet_layout").value == "H200-SXM · TP8×PP1 · DP attention"
    assert any("--data-parallel-size 8" in c.value for c in at.code)


def test_the_chosen_layout_shows_what_the_public_runs_of_its_setup_measured(make_app):
    """DeepSeek-R1 at 1,000 / 1,000 tokens: the chosen layout is one the public corpus ran, and its runs' held-out
    ratios sit under its bands, as in the quote."""
    import re

    from calculators.report.perf import published_runs_lines, setup_published_runs
    at = make_app(model="deepseek-ai/DeepSeek-R1", gpu="B200", tp="8", **{"in": "1000", "out": "1000", "rate": "2"})
    at.switch_page("views/fleet.py").run(timeout=300)
    assert not at.exception
    gpu, tp, pp = re.match(r"(\S+) · TP(\d+)×PP(\d+)", at.selectbox(key="fleet_layout").value).groups()
    dp = at.selectbox(key="fleet_layout").value.endswith("DP attention")
    entries = setup_published_runs(get_model("deepseek-ai/DeepSeek-R1"), gpu, int(tp), None, 1000,
                                   pipeline_parallel_size=int(pp), dp_attention=dp)
    assert entries  # a setup the corpus ran
    note = next(c.value for c in at.caption if c.value.startswith("Public runs of this setup"))
    assert all(line in note for line in published_runs_lines(entries)[1:])
