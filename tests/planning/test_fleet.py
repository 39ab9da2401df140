"""Fleet planner: layouts, replicas for a load under an SLO, cost."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from calculators.errors import InvalidInputError
from calculators.planning.fleet import (
    Layout,
    LayoutPlan,
    Workload,
    _nodes,
    best_plan,
    closest_plan,
    enumerate_layouts,
    fleet_summary,
    gpu_price,
    pareto_front,
    plan_fleet,
    plan_layout,
    slo_bound_note,
    slo_text,
    unbounded_tpot_note,
)
from calculators.specs.catalog import get_gpu, get_model

LLAMA70 = "meta-llama/Llama-3.1-70B-Instruct"
DONE_WHEN = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0, tpot_p99_s=0.05)


def test_layouts_enumerated_within_a_node():
    lay = enumerate_layouts(get_model(LLAMA70), [get_gpu("H100")])
    assert {(x.tensor_parallel_size, x.pipeline_parallel_size) for x in lay} == {
        (t, p) for t in (1, 2, 4, 8) for p in (1, 2, 4)}  # TP ≤ 8 GPUs per node; 64 heads divide
    moe = enumerate_layouts(get_model("Qwen/Qwen3-30B-A3B"), [get_gpu("H100")], max_pp=1)
    assert all(x.expert_parallel == (x.tensor_parallel_size > 1) for x in moe)
    # a MoE model at TP > 1 also gets its attention data-parallel (no PP); a dense one never
    assert sorted(x.tensor_parallel_size for x in moe if x.dp_attention) == [2, 4, 8]
    assert not any(x.dp_attention for x in lay)
    assert not any(x.dp_attention for x in enumerate_layouts(get_model("Qwen/Qwen3-30B-A3B"), [get_gpu("H100")],
                                                                dp_attention=False))


def test_a_data_parallel_attention_plan_counts_one_kv_pool_per_gpu_and_serves_with_dp_ranks():
    """DeepSeek-R1 on 8 × H200 with attention data-parallel: vLLM runs 8 ranks of TP 1 with the experts split 8
    ways (``--data-parallel-size 8 --enable-expert-parallel``), each with its own pool and its own
    ``max_num_seqs``; the plan holds 8 times one rank's requests, and its TPOT is the DP roofline's at its batch."""
    from calculators.perf.roofline import Roofline
    from calculators.perf.serving import serving_metrics
    from calculators.vllm.capacity import vllm_capacity
    from calculators.vllm.concurrency import batch_limit
    model, gpu = get_model("deepseek-ai/DeepSeek-R1"), get_gpu("H200-SXM")
    w = Workload(request_rate_per_s=20, input_len=2000, output_len=1000, tpot_p99_s=0.08)
    plan = plan_layout(model, Layout(gpu, 8, 1, expert_parallel=True, dp_attention=True), w, max_model_len=16_384)
    rank = vllm_capacity(model, gpu=gpu, tensor_parallel_size=1, expert_parallel_size=8, max_model_len=16_384)
    assert plan.fits and plan.dp_attention and plan.layout == "TP8×PP1 · DP attention"
    assert plan.kv_batch_limit == 8 * batch_limit(model, rank, w.longest_len)
    assert plan.kv_cache_tokens == 8 * rank.kv_cache_tokens
    assert "--data-parallel-size 8" in plan.vllm_serve and "--enable-expert-parallel" in plan.vllm_serve
    assert "--tensor-parallel-size" not in plan.vllm_serve
    assert f"--max-num-seqs {-(-plan.batch_size // 8)}" in plan.vllm_serve
    r = Roofline(model, gpu, tensor_parallel_size=8, enable_dp_attention=True,
                 max_num_batched_tokens=rank.settings.max_num_batched_tokens)
    assert plan.tpot_s == pytest.approx(float(serving_metrics(r, plan.batch_size, 2000, 1000)["tpot_s"]), rel=1e-9)
    assert "attention data-parallel" in plan.message
    from calculators.report.explain_fleet import math_chain
    batch = next(step for step in math_chain(plan, w) if step["title"] == "Batch")
    assert f"KV limit {plan.kv_batch_limit:,} requests" in batch["substituted"]
    assert "8 pools of one GPU each" in batch["substituted"]


def test_nodes_pack_replicas():
    h100 = get_gpu("H100")  # 8 GPUs per node
    assert _nodes(Layout(h100, 4), 11) == 6  # two TP4 replicas per node
    assert _nodes(Layout(h100, 8, 2), 3) == 6  # a TP8×PP2 replica spans two nodes


def test_price_is_median_of_catalog_or_given():
    value, source = gpu_price(get_gpu("MI300X"))
    assert value == 2.99 and "median of 5" in source  # 2.39, 2.59, 2.99, 3.45, 6.00
    assert gpu_price(get_gpu("H100"), 2.5) == (2.5, "given")


def test_done_when_scenario_ranks_layouts_with_costs():
    plans = plan_fleet(get_model(LLAMA70), [get_gpu("H100"), get_gpu("H200"), get_gpu("MI300X")], DONE_WHEN,
                       max_pp=2)
    best = plans[0]
    assert best.meets_slo and best.fits
    met = [p for p in plans if p.meets_slo]
    assert {p.gpu for p in met} == {"H100-SXM", "H200-SXM", "MI300X"}
    costs = [p.usd_per_hour for p in met]
    assert costs == sorted(costs)
    for p in met:
        # enough capacity for 40 req/s under the 0.8 utilisation cap, and the SLO holds
        assert p.replicas * p.replica_requests_per_s * 0.8 >= 40 - 1e-9
        assert p.ttft_p99_s <= 1.0 and p.tpot_p99_s <= 0.05
        assert p.total_gpus == p.replicas * p.tensor_parallel_size * p.pipeline_parallel_size
        # $/hour = GPUs × $/GPU-hour; all-in $/1M tokens = $/s ÷ (λ·(I+O)) × 10^6
        assert p.usd_per_hour == pytest.approx(p.total_gpus * p.usd_per_gpu_hour)
        assert p.usd_per_million_tokens == pytest.approx(p.usd_per_hour / 3600 / (40 * 2300) * 1e6)
        split = p.usd_per_million_input_tokens * 2000 + p.usd_per_million_output_tokens * 300
        assert split == pytest.approx(p.usd_per_million_tokens * 2300)
    unfit = [p for p in plans if not p.fits]
    assert any("weights need" in p.message for p in unfit)  # TP1 on an 80 GB H100
    assert pareto_front(plans)


def test_slo_nothing_meets_gives_closest_and_what_to_change():
    w = Workload(request_rate_per_s=5, input_len=2000, output_len=300, ttft_p99_s=0.05, tpot_p99_s=0.005)
    plans = plan_fleet(get_model(LLAMA70), [get_gpu("H100")], w, max_pp=1)
    assert not any(p.meets_slo for p in plans)
    summary = fleet_summary(get_model(LLAMA70), plans)
    assert "no layout meets the SLO" in summary and "TPOT ≥" in summary and "loosen the SLO" in summary


def test_without_a_tpot_target_the_plan_says_how_slowly_its_best_layout_streams():
    """No TPOT target: the cheapest layout under the TTFT target runs a large batch; the note gives its p99 TPOT and
    the 1/p99 TPOT tokens/s it leaves 99 % of requests, and names none once a TPOT target bounds it."""
    w = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0)
    plans = plan_fleet(get_model(LLAMA70), [get_gpu("H100")], w, max_pp=1)
    best = next(p for p in plans if p.meets_slo)
    assert best.tpot_p99_s > DONE_WHEN.tpot_p99_s  # what the target would have refused
    note = unbounded_tpot_note(w, best)
    assert note is not None and "under the TTFT target" in note and f"{best.layout} on {best.gpu} streams" in note
    assert (f"at least {1 / best.tpot_p99_s:,.1f} tokens/s to 99 % of requests (p99 TPOT "
            f"{best.tpot_p99_s * 1e3:,.1f} ms at batch ") in note
    assert unbounded_tpot_note(DONE_WHEN, plan_fleet(get_model(LLAMA70), [get_gpu("H100")], DONE_WHEN,
                                                     max_pp=1)[0]) is None
    assert slo_text(w) == "p99 TTFT ≤ 1,000 ms · no p99 TPOT target"
    assert slo_text(Workload(1, 1, 1, ttft_p99_s=2.5, tpot_p99_s=0.0125)) == "p99 TTFT ≤ 2,500 ms · p99 TPOT ≤ 12.5 ms"


def test_the_tpot_note_and_the_chosen_plan_worked_by_hand():
    """A TP2 plan at batch 186 with p99 TPOT 0.25 s streams at least 1 / 0.25 = 4.0 tokens/s to 99 % of requests;
    without a TTFT target
    nothing is said of one. The best plan is the first meeting the SLO; without one, the first that fits."""
    def plan(fits: bool, meets: bool) -> LayoutPlan:
        return LayoutPlan(gpu="MI300X", tensor_parallel_size=2, pipeline_parallel_size=1, expert_parallel=False,
                          fits=fits, meets_slo=meets, message="", failure_domain_gpus=2, batch_size=186,
                          tpot_p99_s=0.25)
    note = unbounded_tpot_note(Workload(40, 2000, 300), plan(True, True))
    assert note == ("No TPOT target: each layout runs the batch that needs the fewest replicas; TP2×PP1 on MI300X "
                    "streams at least 4.0 tokens/s to 99 % of requests (p99 TPOT 250.0 ms at batch 186).")
    assert unbounded_tpot_note(Workload(40, 2000, 300), plan(False, False)) is None
    unfit, fits, meets = plan(False, False), plan(True, False), plan(True, True)
    assert best_plan([unfit, fits, meets]) is meets and closest_plan([unfit, fits, meets]) is meets
    assert best_plan([unfit, fits]) is None and closest_plan([unfit, fits]) is fits
    assert closest_plan([unfit]) is None


def test_model_too_big_for_every_layout():
    plans = plan_fleet(get_model("meta-llama/Llama-3.1-405B"), [get_gpu("L4")], DONE_WHEN, max_pp=1)
    assert not any(p.fits for p in plans)
    assert "fits no layout" in fleet_summary(get_model("meta-llama/Llama-3.1-405B"), plans)


def test_gpu_without_price():
    g = get_gpu("TPU v6e").model_copy(update={"prices": ()})
    plan = plan_layout(get_model("Qwen/Qwen3-8B"), Layout(g, 1), Workload(1, 500, 100))
    assert plan.fits and plan.usd_per_hour is None and any("no price" in n for n in plan.notes)


@pytest.mark.parametrize("field, kwargs", [("request_rate_per_s", {"request_rate_per_s": 0}),
                                           ("input_len", {"input_len": -1}),
                                           ("tpot_p99_s", {"tpot_p99_s": 0})])
def test_bad_workload(field, kwargs):
    args = {"request_rate_per_s": 1, "input_len": 100, "output_len": 100, **kwargs}
    with pytest.raises(InvalidInputError, match=field):
        Workload(**args)


def test_cli_plan_json():
    root = Path(__file__).resolve().parents[2]
    p = subprocess.run([sys.executable, "-m", "calculators.cli", "plan", "--model", LLAMA70, "--gpu", "H100",
                        "--gpu", "MI300X", "--request-rate", "40", "--input-len", "2000", "--output-len", "300",
                        "--ttft-p99-ms", "1000", "--tpot-p99-ms", "50", "--max-pipeline-parallel-size", "1",
                        "--json"], capture_output=True, text=True, cwd=root, timeout=120)
    doc = json.loads(p.stdout)
    first = doc["layouts"][0]
    for key in ("gpu", "tensor_parallel_size", "pipeline_parallel_size", "replicas", "total_gpus", "batch_size",
                "output_tokens_per_s_per_gpu", "usd_per_hour", "usd_per_million_output_tokens", "meets_slo"):
        assert key in first
    assert first["meets_slo"] and "vllm serve" in first["vllm_serve"]


def test_cost_vs_tpot_target_never_costs_more_for_a_looser_target():
    from calculators.planning.fleet import cost_vs_tpot_target, plan_fleet
    m, gpus = get_model("meta-llama/Llama-3.1-8B-Instruct"), [get_gpu("H100"), get_gpu("A100-80GB")]
    w = Workload(request_rate_per_s=20, input_len=1000, output_len=200, ttft_p99_s=2.0)
    rows = cost_vs_tpot_target(m, gpus, w, (0.015, 0.03, 0.1))
    assert rows and {r["gpu"] for r in rows} <= {"H100-SXM", "A100-80GB-SXM"}
    for g in {r["gpu"] for r in rows}:
        # a looser target can only widen the choice: never more GPUs (of one type, cost per hour ∝ GPUs)
        gpus = [r["gpus"] for r in rows if r["gpu"] == g]
        assert gpus == sorted(gpus, reverse=True)
    # each row is the cheapest plan meeting its target, as plan_fleet ranks it
    r = rows[0]
    best = next(p for p in plan_fleet(m, [get_gpu(r["gpu"])], Workload(20, 1000, 200, ttft_p99_s=2.0,
                                                                       tpot_p99_s=r["tpot_target_s"]), max_pp=1)
                if p.meets_slo)
    assert best.tpot_p99_s <= r["tpot_target_s"] and r["gpus"] == best.total_gpus


def test_cost_per_month_and_year_use_730_and_8760_hours():
    from calculators.planning.fleet import plan_fleet
    p = plan_fleet(get_model("meta-llama/Llama-3.1-8B-Instruct"), [get_gpu("H100")],
                   Workload(request_rate_per_s=5, input_len=500, output_len=100), usd_per_gpu_hour=2.0, max_pp=1)[0]
    assert p.usd_per_hour == 2.0 * p.total_gpus
    assert p.usd_per_month == pytest.approx(p.usd_per_hour * 730)
    assert p.usd_per_year == pytest.approx(p.usd_per_hour * 8760)


def test_a_ttft_target_close_to_the_ttft_itself_is_met_by_part_idle_replicas_and_says_so():
    """Llama-3.1-70B on 32 H100s (TP8 × PP4), 8,000-token prompts at 10 requests/s under p99 TTFT ≤ 200 ms: the TTFT
    alone is 187 ms, so only replicas whose arrivals almost never wait meet the target (the simulator put the
    slot-wait-only plan of 5 replicas at a p99 of 0.50 s). The plan holds more replicas than the load needs and
    says why; where the load binds (Llama-3.1-70B on 4 H100s, 2,000-token prompts, 1 s) it says nothing."""
    m, g = get_model("meta-llama/Llama-3.1-70B-Instruct"), get_gpu("H100")
    w = Workload(request_rate_per_s=10, input_len=8000, output_len=300, ttft_p99_s=0.2)
    plan = plan_layout(m, Layout(g, 8, 4), w, max_model_len=16384)
    assert plan.meets_slo and plan.ttft_p99_s <= 0.2 and plan.utilisation < 0.5 and plan.replicas_for_ttft > 0
    note = slo_bound_note(w, plan)
    assert note is not None and note.startswith(f"The SLO binds: TP8×PP4 on H100-SXM runs {plan.replicas:,} replicas")
    assert (f"the p99 TTFT target (TTFT is {plan.ttft_s * 1e3:,.0f} ms of the 200 ms) adds {plan.replicas_for_ttft:,},"
            in note) and "TPOT" not in note
    loose = Workload(request_rate_per_s=40, input_len=2000, output_len=300, ttft_p99_s=1.0)
    bound = plan_layout(m, Layout(g, 4), loose, max_model_len=8192)
    assert bound.replicas_for_ttft == 0 and slo_bound_note(loose, bound) is None


def test_a_plan_runs_no_more_than_the_token_budget_admits():
    # Llama-3.1-8B on one H200 (vLLM's 8,192 tokens a step), 2,000-token prompts and 50-token answers: the decodes
    # go first, so prompts enter only as fast as floor(8,192 × 50 / 2,050) = 199 running requests finish, fewer
    # than the KV cache holds. The plan's batch (and the max_num_seqs it serves with) stays within that.
    w = Workload(request_rate_per_s=20, input_len=2000, output_len=50)
    plan = plan_layout(get_model("meta-llama/Llama-3.1-8B"), Layout(get_gpu("H200"), 1, 1), w)
    assert plan.fits and plan.kv_batch_limit > 199
    assert plan.batch_size <= 199
    assert any("at most 199 requests run at once" in n for n in plan.notes)
