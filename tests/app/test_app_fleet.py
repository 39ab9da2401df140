"""Fleet planner and Compare GPUs through AppTest, on the issue's scenario."""
from __future__ import annotations

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


def test_compare_page(make_app):
    at = make_app(**ISSUE)
    at.switch_page("views/compare_gpus.py").run(timeout=120)
    assert not at.exception
    frame = at.dataframe[0].value
    assert list(frame["GPU"]) == ["H100-SXM", "H200-SXM", "MI300X"]
    assert frame["meets SLO"].all()
    assert len(at.get("plotly_chart")) == 1
