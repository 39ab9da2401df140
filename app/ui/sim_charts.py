"""Plotly figures of the batching simulator page: pure functions of the tidy frames that
:mod:`calculators.report.explain_sim` builds (plotly is imported lazily)."""
from __future__ import annotations

POLICY_COLORS = ("#4c78a8", "#f58518")
_MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}


def timeline(frames: dict):
    """Queue depth, running batch and KV usage [%] over time, one line per policy (name → frame)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("queue depth [requests waiting]", "batch size [sequences running]",
                                        "KV cache usage [%]"))
    for k, (name, f) in enumerate(frames.items()):
        color = POLICY_COLORS[k % len(POLICY_COLORS)]
        for row, col, scale in ((1, "queue_depth", 1), (2, "batch_size", 1), (3, "kv_usage", 100)):
            fig.add_trace(go.Scatter(x=f["time_s"], y=f[col] * scale, mode="lines", line_shape="hv", name=name,
                                     legendgroup=name, showlegend=row == 1, line={"color": color, "width": 1.5},
                                     hovertemplate=f"{name}: %{{y:,.1f}} at %{{x:.2f}} s<extra></extra>"),
                          row=row, col=1)
    fig.update_xaxes(title_text="simulated time [s]", row=3, col=1)
    fig.update_layout(height=580, margin={**_MARGIN, "t": 70}, legend={"orientation": "h", "y": 1.14})
    return fig


def latency_cdfs(curves: dict, *, slo_ms: dict | None = None):
    """Empirical CDFs: one panel per metric (TTFT, TPOT, ITL, end-to-end), one line per policy.

    ``curves`` maps metric label → {policy name → frame with ``latency_ms`` and ``fraction``};
    ``slo_ms`` maps a metric label to its target [ms], drawn as a dashed line.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    labels = list(curves)
    fig = make_subplots(rows=1, cols=len(labels), subplot_titles=[f"{m} [ms]" for m in labels],
                        horizontal_spacing=0.05)
    for j, label in enumerate(labels, start=1):
        for k, (name, f) in enumerate(curves[label].items()):
            fig.add_trace(go.Scatter(x=f["latency_ms"], y=f["fraction"], mode="lines", name=name, legendgroup=name,
                                     showlegend=j == 1, line={"color": POLICY_COLORS[k % len(POLICY_COLORS)]},
                                     hovertemplate=f"{name}: %{{y:.1%}} ≤ %{{x:,.1f}} ms<extra></extra>"),
                          row=1, col=j)
        target = (slo_ms or {}).get(label)
        if target:
            fig.add_vline(x=target, line_dash="dash", line_color="#e45756", row=1, col=j,
                          annotation_text=f"SLO {target:,.0f}")
    fig.update_yaxes(title_text="fraction of requests", tickformat=".0%", row=1, col=1)
    fig.update_layout(height=380, margin=_MARGIN, legend={"orientation": "h", "y": 1.18})
    return fig


def sweep_chart(frame, *, knee: float | None, slo_point: float | None, analytic_knee: float | None):
    """Throughput [req/s] and p99 TTFT [ms] against max_num_seqs, with the knees and the SLO point marked."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=frame["max_num_seqs"], y=frame["request_throughput_per_s"], mode="lines+markers",
                             name="throughput [req/s]", line={"color": POLICY_COLORS[0]}), secondary_y=False)
    fig.add_trace(go.Scatter(x=frame["max_num_seqs"], y=frame["ttft_p99_s"] * 1e3, mode="lines+markers",
                             name="p99 TTFT [ms]", line={"color": POLICY_COLORS[1], "dash": "dot"}), secondary_y=True)
    for x, text, dash, pos in ((knee, "simulated knee", "dash", "top left"),
                               (analytic_knee, "analytic knee", "dot", "top right"),
                               (slo_point, "SLO point", "dashdot", "bottom right")):
        if x:
            fig.add_vline(x=x, line_dash=dash, annotation_text=f"{text} {x:,.0f}", annotation_position=pos)
    fig.update_xaxes(type="log", title_text="max_num_seqs")
    fig.update_yaxes(title_text="requests/s", secondary_y=False)
    fig.update_yaxes(title_text="p99 TTFT [ms]", secondary_y=True)
    fig.update_layout(height=420, margin=_MARGIN, legend={"orientation": "h", "y": 1.12})
    return fig
