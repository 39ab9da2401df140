"""Fleet planner and GPU comparison: presenters (plans → display frames), plotly figure builders, and the
memo that keeps the ~1 s layout search to once per input (per session for custom specs, see
:mod:`app.ui.memo`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from app.ui.memo import memoised
from calculators.planning.costs import COST_LABELS

MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}


def memo(name: str, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per distinct ``key`` (see :mod:`app.ui.memo`: shared between sessions only
    for catalog specs and default efficiencies)."""
    return memoised(f"fleet_{name}", key, compute)


def planned(ctx, model, gpus: list, name: str, **extra: Any) -> tuple[list, Any, dict, str, tuple]:
    """Every layout of ``gpus`` sized for the sidebar's workload (memoised per session and inputs).

    Returns the ranked plans, the workload, the keyword arguments used, the performance-model
    sentence and the memo key (for results derived from the same inputs); raises
    :class:`InvalidInputError` for a workload the planner cannot take.
    """
    from app.ui import perf
    from calculators.planning.fleet import plan_fleet
    scn = ctx.scenario
    eff, eff_source = perf.efficiencies(ctx)
    w = scn.workload()
    kw = {**extra, "quantization": None if scn.quantization == "auto" else scn.quantization,
          "kv_cache_dtype": scn.kv_cache_dtype, "gpu_memory_utilization": scn.gpu_memory_utilization,
          "max_model_len": scn.max_model_len, "efficiencies": eff}
    key = (model, gpus, w, sorted(kw.items(), key=lambda x: x[0]))
    with st.spinner("Planning every layout…"):
        plans = memo(name, key, lambda: plan_fleet(model, gpus, w, **kw))
    return plans, w, kw, eff_source, key


def planned_scenario_layout(ctx):
    """The sidebar's own layout (its GPU, tensor_parallel_size and pipeline_parallel_size, expert parallelism,
    or data-parallel ranks of one GPU with the experts spread: the planner's DP-attention layout) sized for its
    workload: replicas, GPUs and the six cost figures (memoised per session and inputs)."""
    from app.ui import perf
    from calculators.planning.fleet import Layout, plan_layout
    scn = ctx.scenario
    eff, _ = perf.efficiencies(ctx)
    ranks = scn.attention_ranks(ctx.model)
    layout = (Layout(ctx.gpu, ranks, 1, expert_parallel=True, dp_attention=True) if ranks > 1 else
              Layout(ctx.gpu, scn.tensor_parallel_size, scn.pipeline_parallel_size,
                     expert_parallel=scn.enable_expert_parallel and ctx.model.is_moe))
    kw = {"quantization": None if scn.quantization == "auto" else scn.quantization,
          "kv_cache_dtype": scn.kv_cache_dtype, "gpu_memory_utilization": scn.gpu_memory_utilization,
          "max_model_len": scn.max_model_len, "efficiencies": eff}
    w = scn.workload()
    key = (ctx.model, layout, w, sorted(kw.items(), key=lambda x: x[0]))
    return memo("scenario_layout", key, lambda: plan_layout(ctx.model, layout, w, **kw))


def _ms(x):
    return None if x is None else x * 1e3


def money(x: float | None, digits: int = 2) -> str:
    """``$1,234.50``, or ``—`` for no price."""
    return "—" if x is None else f"${x:,.{digits}f}"


def layout_name(p) -> str:
    """A layout's stable name (what the URL keeps): GPU · TP × PP, and · DP attention where it runs so."""
    return f"{p.gpu} · {p.layout}"


def layout_caption(p) -> str:
    """Replicas, GPUs, batch and whether it meets the SLO, in one line."""
    return (f"{p.replicas} replica(s) × {p.tensor_parallel_size * p.pipeline_parallel_size} GPUs = {p.total_gpus} GPUs,"
            f" batch (max_num_seqs) {p.batch_size}, max_model_len {p.max_model_len:,}"
            + ("" if p.meets_slo else f" — {p.message}"))


def band_lines(p) -> list[str]:
    """The chosen layout's p99 TPOT and p99 TTFT as sized, with the 80 % bands of the estimate [ms]."""
    lines = []
    for name, value, lo, hi in (("p99 TPOT", p.tpot_p99_s, p.tpot_p99_band_low_s, p.tpot_p99_band_high_s),
                                ("p99 TTFT", p.ttft_p99_s, p.ttft_p99_band_low_s, p.ttft_p99_band_high_s)):
        if value is not None and lo is not None and hi is not None:
            lines.append(f"{name} {value * 1e3:,.1f} ms as sized ({p.sizing}); 80 % band of the estimate "
                         f"{lo * 1e3:,.1f}–{hi * 1e3:,.1f} ms")
    return lines


def sim_check_frame(check):
    """Plan and simulator side by side [ms] with the gap."""
    import pandas as pd
    return pd.DataFrame([
        {"figure": "p99 TTFT", "plan [ms]": check.plan_ttft_p99_s * 1e3, "simulator [ms]": check.sim_ttft_p99_s * 1e3,
         "simulator vs plan": f"{check.ttft_gap:+.0%}"},
        {"figure": "p99 TPOT", "plan [ms]": check.plan_tpot_p99_s * 1e3,
         "simulator [ms]": check.sim_tpot_p99_s * 1e3, "simulator vs plan": f"{check.tpot_gap:+.0%}"}])


def plans_frame(plans):
    """The ranked layouts that fit, one row each, in display units (ms, $, tokens/s); costs under
    :data:`calculators.planning.costs.COST_LABELS`."""
    import pandas as pd
    rows = [{"GPU": p.gpu, "TP": p.tensor_parallel_size, "PP": p.pipeline_parallel_size,
             "EP": "yes" if p.expert_parallel else "", "DP attention": "yes" if p.dp_attention else "",
             "replicas": p.replicas, "GPUs": p.total_gpus, "nodes": p.nodes,
             "batch": p.batch_size, "TTFT p99 [ms]": _ms(p.ttft_p99_s), "TPOT p99 [ms]": _ms(p.tpot_p99_s),
             "tok/s per GPU": p.output_tokens_per_s_per_gpu, "tok/s per user": p.tokens_per_s_per_user,
             **{label: getattr(p, key) for key, label in COST_LABELS.items()}, "meets SLO": p.meets_slo,
             "failure domain [GPUs]": p.failure_domain_gpus, "note": "" if p.meets_slo else p.message}
            for p in plans if p.fits]
    return pd.DataFrame(rows)


def unfit_frame(plans):
    """The layouts that do not fit, with the reason."""
    import pandas as pd
    return pd.DataFrame([{"GPU": p.gpu, "TP": p.tensor_parallel_size, "PP": p.pipeline_parallel_size,
                          "DP attention": "yes" if p.dp_attention else "", "reason": p.message}
                         for p in plans if not p.fits])


COLUMN_FORMATS = {"TTFT p99 [ms]": "%.0f", "TPOT p99 [ms]": "%.1f", "TPOT [ms]": "%.1f", "tok/s per GPU": "%.0f",
                  "tok/s per user": "%.1f",
                  "plan [ms]": "%.1f", "simulator [ms]": "%.1f",
                  **{label: ("$%.3f" if "1M" in label else "$%.2f" if "hour" in label else "$%,.0f")
                     for label in COST_LABELS.values()}}


COLUMN_HELP = {
    "TTFT p99 [ms]": "99th percentile over requests at the plan's load: the prefill plus the waits for a slot and for "
                     "the steps' token budget",
    "TPOT p99 [ms]": "99th percentile over requests at the plan's load: the decode step plus the other requests' "
                     "prompts mixed into a request's steps; at most a full batch's TPOT",
    "tok/s per GPU": "a replica's output tokens/s at a full batch (max_num_seqs), per GPU: its capacity",
    "tok/s per user": "1 / TPOT at a full batch: the stream a request gets when every slot is taken",
}


def column_config(frame) -> dict:
    return {c: st.column_config.NumberColumn(c, format=f, help=COLUMN_HELP.get(c))
            for c, f in COLUMN_FORMATS.items() if c in frame.columns}


def cost_vs_slo_chart(rows: list[dict]):
    """$/1M output tokens of the best layout per GPU type against the TPOT target [ms]."""
    import pandas as pd
    import plotly.graph_objects as go
    frame = pd.DataFrame(rows)
    fig = go.Figure()
    for gpu, rows in frame.groupby("gpu", sort=False):
        fig.add_scatter(x=rows["tpot_target_s"] * 1e3, y=rows["usd_per_million_output_tokens"], mode="lines+markers",
                        name=gpu, customdata=rows[["layout", "gpus"]],
                        hovertemplate=(f"{gpu}<br>TPOT ≤ %{{x:g}} ms: $%{{y:.3f}} per 1M output tokens"
                                       "<br>%{customdata[0]}, %{customdata[1]} GPUs<extra></extra>"))
    fig.update_layout(title="Cost vs SLO (best TP layout per GPU type)", xaxis_title="p99 TPOT target [ms]",
                      yaxis_title="$ per 1M output tokens", height=400, margin=MARGIN)
    return fig


def pareto_chart(plans, front):
    """Output tokens/s per GPU against tokens/s per user, every fitting layout, the Pareto front joined."""
    import plotly.graph_objects as go
    fig = go.Figure()
    by_gpu: dict[str, list] = {}
    for p in plans:
        if p.fits and p.output_tokens_per_s_per_gpu:
            by_gpu.setdefault(p.gpu, []).append(p)
    for gpu, ps in by_gpu.items():
        fig.add_scatter(x=[p.tokens_per_s_per_user for p in ps], y=[p.output_tokens_per_s_per_gpu for p in ps],
                        mode="markers", name=gpu, text=[f"TP{p.tensor_parallel_size}×PP{p.pipeline_parallel_size}, "
                                                        f"batch {p.batch_size}" for p in ps],
                        hovertemplate="%{text}<br>%{x:.1f} tok/s per user, %{y:,.0f} tok/s per GPU<extra></extra>")
    pts = sorted(front, key=lambda p: p.tokens_per_s_per_user)
    fig.add_scatter(x=[p.tokens_per_s_per_user for p in pts], y=[p.output_tokens_per_s_per_gpu for p in pts],
                    mode="lines", name="Pareto front", line={"dash": "dash", "color": "#444"}, hoverinfo="skip")
    fig.update_layout(title="Pareto front: throughput per GPU vs speed per user",
                      xaxis_title="output tokens/s per user (1 / TPOT)", yaxis_title="output tokens/s per GPU",
                      height=400, margin=MARGIN)
    return fig


def compare_bars(frame):
    """GPUs needed and $ per 1M output tokens, one bar per GPU type (best layout each)."""
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=1, cols=2, subplot_titles=("GPUs needed", "$ per 1M output tokens"))
    fig.add_bar(x=frame["GPU"], y=frame["GPUs"], name="GPUs", marker_color="#4c78a8",
                hovertemplate="%{x}: %{y} GPUs<extra></extra>", row=1, col=1)
    out_cost = COST_LABELS["usd_per_million_output_tokens"]
    fig.add_bar(x=frame["GPU"], y=frame[out_cost], name=out_cost, marker_color="#f58518",
                hovertemplate="%{x}: $%{y:.3f}<extra></extra>", row=1, col=2)
    fig.update_layout(showlegend=False, height=380, margin=MARGIN)
    return fig
