"""Plotly figures of a measured profile: throughput, latency percentiles, predicted-vs-measured TPOT.

Pure functions of the frames of :mod:`calculators.profiles.analysis` (plotly is imported lazily).
"""
from __future__ import annotations

import numpy as np

from calculators.profiles.analysis import LOAD_AXES

_MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}
_PCT = (("median", "p50", "dot"), ("p90", "p90", "dash"), ("p99", "p99", "solid"))


def _x(frame, axis: str):
    return frame[axis].to_numpy(dtype=float)


def _log_x(x) -> bool:
    x = np.asarray(x, dtype=float)
    return bool(x.size > 1 and np.all(x > 0) and x.max() / x.min() > 20)


def throughput_chart(frame, axis: str, *, knee_point: int | None = None, knee_reached: bool = True,
                     slo_point: int | None = None, goodput: bool = False):
    """Output tokens/s against the load axis, the measured knee and the SLO point marked;
    request throughput and goodput [requests/s] on the right axis where the file has goodput."""
    import plotly.graph_objects as go
    x = _x(frame, axis)
    fig = go.Figure()
    fig.add_scatter(x=x, y=frame["output_tokens_per_s"], mode="lines+markers", name="output tokens/s",
                    text=frame["label"], hovertemplate="%{text}: %{y:,.0f} tok/s<extra></extra>")
    if goodput:
        fig.add_scatter(x=x, y=frame["request_throughput_per_s"], mode="lines+markers", name="requests/s",
                        yaxis="y2", line={"dash": "dot"}, hovertemplate="%{y:,.2f} req/s<extra></extra>")
        fig.add_scatter(x=x, y=frame["request_goodput_per_s"], mode="lines+markers", name="goodput (requests/s)",
                        yaxis="y2", line={"dash": "dash"}, hovertemplate="goodput %{y:,.2f} req/s<extra></extra>")
        fig.update_layout(yaxis2={"title": "requests/s", "overlaying": "y", "side": "right", "rangemode": "tozero"})
    for point, name, symbol, color in ((knee_point, "knee (15 % rule)" if knee_reached else "knee not reached (≥)",
                                        "diamond", "#e45756"), (slo_point, "SLO point (p99 targets)", "star",
                                                                "#54a24b")):
        if point is None:
            continue
        row = frame[frame["point"] == point]
        fig.add_scatter(x=_x(row, axis), y=row["output_tokens_per_s"], mode="markers+text", name=name,
                        marker={"symbol": symbol, "size": 16, "color": color}, text=[name.split(" (")[0]],
                        textposition="top center", hovertemplate=f"{name}: %{{y:,.0f}} tok/s<extra></extra>")
    fig.update_layout(xaxis_title=LOAD_AXES[axis], yaxis_title="output throughput [tokens/s]", height=420,
                      margin=_MARGIN, xaxis_type="log" if _log_x(x) else "linear", yaxis_rangemode="tozero",
                      legend={"orientation": "h", "y": -0.2})
    return fig


def latency_chart(frame, axis: str, metric: str, *, target_s: float | None = None):
    """TTFT or TPOT [ms] percentiles (p50/p90/p99 where the file has them, else the mean) against load."""
    import plotly.graph_objects as go
    x = _x(frame, axis)
    fig = go.Figure()
    drawn = 0
    for stat, name, dash in _PCT:
        y = frame[f"{metric}_{stat}_s"] * 1e3
        if y.notna().any():
            drawn += 1
            fig.add_scatter(x=x, y=y, mode="lines+markers", name=f"{metric.upper()} {name}", line={"dash": dash},
                            text=frame["label"], hovertemplate=f"%{{text}}: {name} %{{y:,.1f}} ms<extra></extra>")
    if not drawn and frame[f"{metric}_mean_s"].notna().any():
        fig.add_scatter(x=x, y=frame[f"{metric}_mean_s"] * 1e3, mode="lines+markers", name=f"{metric.upper()} mean")
    if target_s:
        fig.add_hline(y=target_s * 1e3, line_dash="dash", line_color="#e45756",
                      annotation_text=f"p99 target {target_s * 1e3:g} ms")
    fig.update_layout(xaxis_title=LOAD_AXES[axis], yaxis_title=f"{metric.upper()} [ms]", height=360, margin=_MARGIN,
                      xaxis_type="log" if _log_x(x) else "linear", yaxis_rangemode="tozero",
                      title={"text": f"{metric.upper()} percentiles", "font": {"size": 14}})
    return fig


def overlay_chart(overlay):
    """Predicted (default and calibrated roofline) vs measured TPOT [ms] against the Little's-law batch,
    with the residuals ``predicted / measured − 1`` [%] below."""
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.68, 0.32], vertical_spacing=0.06)
    b = overlay["batch_size"]
    fig.add_scatter(x=b, y=overlay["measured_tpot_s"] * 1e3, mode="markers", name="measured",
                    marker={"size": 11, "color": "black"}, text=overlay["label"],
                    hovertemplate="%{text}: %{y:.2f} ms<extra>measured</extra>", row=1, col=1)
    series = [("default", "default roofline", "#4c78a8", "dash")]
    if "calibrated_tpot_s" in overlay:
        series.append(("calibrated", "calibrated roofline", "#f58518", "solid"))
    for key, name, color, dash in series:
        fig.add_scatter(x=b, y=overlay[f"{key}_tpot_s"] * 1e3, mode="lines+markers", name=name,
                        line={"color": color, "dash": dash}, row=1, col=1,
                        hovertemplate=f"B %{{x:.1f}}: %{{y:.2f}} ms<extra>{name}</extra>")
        fig.add_bar(x=b, y=overlay[f"{key}_error"] * 100, name=f"{name} residual", marker_color=color,
                    showlegend=False, row=2, col=1, hovertemplate=f"%{{y:+.1f}} %<extra>{name}</extra>")
    fig.add_hline(y=0, line_color="grey", row=2, col=1)
    fig.update_yaxes(title_text="TPOT [ms]", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="residual [%]", row=2, col=1)
    fig.update_xaxes(title_text=LOAD_AXES["batch_size"], row=2, col=1)
    fig.update_layout(height=520, margin=_MARGIN, barmode="group", legend={"orientation": "h", "y": 1.08})
    return fig
