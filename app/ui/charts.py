"""Plotly figure builders: pure functions of tidy frames (plotly is imported lazily)."""
from __future__ import annotations

COLORS = {"weights": "#4c78a8", "activation": "#f58518", "non-torch": "#b279a2", "CUDA graphs": "#e45756",
          "KV cache": "#54a24b", "headroom": "#d3d3d3"}


def memory_bar(frame, total_gib: float, budget_gib: float):
    """Stacked bar of per-GPU memory by part [GiB], one bar per pipeline stage.

    Estimated parts (``estimated`` true) are hatched and carry their range as an error bar, read
    from the frame's ``low_gib`` / ``high_gib``.
    """
    import plotly.graph_objects as go
    fig = go.Figure()
    for part, rows in frame.groupby("part", sort=False):
        estimated = bool(rows["estimated"].any()) if "estimated" in rows else False
        bar = {"name": part, "x": rows["stage"], "y": rows["gib"],
               "marker_color": COLORS.get(part)}
        if estimated:
            bar["marker_pattern_shape"] = "/"
            bar["error_y"] = {"type": "data", "symmetric": False, "array": rows["high_gib"] - rows["gib"],
                              "arrayminus": rows["gib"] - rows["low_gib"], "color": "#333", "thickness": 1.5}
            bar["customdata"] = rows[["low_gib", "high_gib"]].to_numpy()
            hover = f"{part}: %{{y:.2f}} GiB (estimated, range %{{customdata[0]:.2f}}–%{{customdata[1]:.2f}})"
        else:
            hover = f"{part}: %{{y:.2f}} GiB"
        fig.add_bar(**bar, hovertemplate=hover + "<extra></extra>")
    fig.add_hline(y=budget_gib, line_dash="dash", annotation_text=f"budget {budget_gib:.2f} GiB")
    fig.add_hline(y=total_gib, line_dash="dot", annotation_text=f"total {total_gib:.2f} GiB")
    fig.update_layout(barmode="stack", yaxis_title="memory per GPU [GiB]", height=420,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend_traceorder="normal")
    return fig


def concurrency_chart(frame, max_model_len: int, typical_len: float | None = None):
    """Max concurrent sequences against context length, with max_model_len marked."""
    import plotly.graph_objects as go
    fig = go.Figure(go.Scatter(x=frame["context_tokens"], y=frame["max_concurrency"], mode="lines",
                               name="max concurrency",
                               hovertemplate="%{x:,} tokens: %{y:,.2f} sequences<extra></extra>"))
    fig.add_vline(x=max_model_len, line_dash="dash", annotation_text=f"max_model_len {max_model_len:,}")
    if typical_len:
        fig.add_vline(x=typical_len, line_dash="dot", annotation_text=f"typical {typical_len:,.0f}")
    fig.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title="context length per request [tokens]",
                      yaxis_title="sequences that fit at once", height=420, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return fig
