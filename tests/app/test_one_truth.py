"""One truth across pages: the same scenario gives the same timed figure and the same cost on every page
that shows it (Overview, Latency budget, Fleet planner, Compare GPUs) and in ``llmcap perf``."""
from __future__ import annotations

from calculators.perf.roofline import Roofline
from calculators.report.perf import perf_document
from calculators.specs.catalog import get_gpu, get_model
from tests.app import helpers
from tests.app.helpers import metrics

make_app = helpers.make_app
_clear_caches = helpers._clear_caches
SCN = {"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "tp": "4", "rate": "20"}


def test_overview_latency_budget_and_cli_share_one_tpot(make_app):
    """The Overview's TPOT at the recommended batch is ``llmcap perf``'s at that concurrency; the Latency budget's
    p99 TPOT at the same batch and the scenario's load is at most that (a full batch caps it), and at the fleet
    plan's batch and replicas it is the plan's p99 TPOT, beside the plan's p99 TTFT."""
    from calculators.planning.fleet import Layout, plan_layout
    from calculators.scenario import Scenario
    at = make_app(**SCN)
    overview = metrics(at)
    batch = int(overview["Recommended max_num_seqs"].replace(",", ""))
    at.switch_page("views/latency_budget.py").run()
    assert at.number_input(key="lb_batch").value == batch  # the budget starts from the same batch
    budget = metrics(at)
    r = Roofline(get_model("meta-llama/Llama-3.1-70B"), get_gpu("H100"), tensor_parallel_size=4,
                 max_num_batched_tokens=8192)  # vllm serve's default token budget on an 80 GB H100
    cli = perf_document(r, concurrency=batch, input_len=2000, output_len=300)
    assert overview["TPOT [ms]"] == f"{cli['tpot_s'] * 1e3:,.2f}"
    assert float(budget["p99 TPOT [ms]"].replace(",", "")) <= cli["tpot_s"] * 1e3 + 0.005
    plan = plan_layout(get_model("meta-llama/Llama-3.1-70B"), Layout(get_gpu("H100"), 4),
                       Scenario(request_rate_per_s=20).workload())
    at.number_input(key="lb_batch").set_value(plan.batch_size)
    at.number_input(key="lb_replicas").set_value(plan.replicas).run()
    budget = metrics(at)
    assert budget["p99 TPOT [ms]"] == f"{plan.tpot_p99_s * 1e3:,.2f}"
    assert budget["TTFT = queue + prefill [ms]"] == f"{plan.ttft_p99_s * 1e3:,.1f}"


def test_overview_cost_is_the_fleet_planners_row_for_the_same_layout(make_app):
    at = make_app(**SCN)
    overview = metrics(at)
    at.switch_page("views/fleet.py").run(timeout=120)
    table = at.dataframe[0].value
    row = table[(table["GPU"] == "H100-SXM") & (table["TP"] == 4) & (table["PP"] == 1)].iloc[0]
    assert overview["GPUs"] == f"{int(row['GPUs']):,}"
    assert overview["$/hour"] == f"${row['$/hour']:,.2f}" and overview["$/month (730 h)"] == \
        f"${row['$/month (730 h)']:,.0f}"
    at.switch_page("views/compare_gpus.py").run(timeout=120)
    best = at.dataframe[0].value.set_index("GPU").loc["H100-SXM"]
    assert float(best["$/hour"]) <= float(row["$/hour"])  # Compare shows each GPU's cheapest layout
