"""Plotly figures of the performance pages, built as plain figure dicts (Streamlit validates them once;
plotly's ``add_vline``/``make_subplots`` cost ~100 ms each, too slow for a rerun). Pure functions of the
tidy frames of :mod:`calculators.report.explain_perf`; no formulas here."""
from __future__ import annotations

import math

MARKS = {"knee": ("#e45756", "dash"), "SLO batch": ("#54a24b", "dot"), "crossover": ("#b279a2", "dashdot"),
         "KV limit": ("#4c78a8", "longdash")}
_MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}


def _list(x) -> list:
    return [float(v) for v in x]


def _vline(x: float, color: str, dash: str, yref: str = "paper") -> dict:
    return {"type": "line", "xref": "x", "yref": yref, "x0": x, "x1": x, "y0": 0, "y1": 1,
            "line": {"color": color, "dash": dash, "width": 1.5}}


def _hline(y: float, yref: str, color: str = "gray") -> dict:
    return {"type": "line", "xref": "paper", "yref": yref, "x0": 0, "x1": 1, "y0": y, "y1": y,
            "line": {"color": color, "dash": "dot", "width": 1}}


def _label(x: float, y: float, text: str, color: str, *, xref: str = "x", yref: str = "paper", log_x: bool = True,
           anchor: str = "left") -> dict:
    return {"x": math.log10(x) if log_x else x, "y": y, "xref": xref, "yref": yref, "text": text, "showarrow": False,
            "xanchor": anchor, "font": {"color": color}}


def batch_curves(frame, *, marks: dict[str, float | None], ttft_target_ms: float | None = None,
                 tpot_target_ms: float | None = None) -> dict:
    """Throughput (top) and TTFT/TPOT (bottom, log) against batch size, with the knee, SLO batch, crossover
    and KV limit as vertical lines (a mark of ``None`` or outside the curve is left out)."""
    b = _list(frame["batch_size"])
    line = {"mode": "lines+markers", "type": "scatter", "x": b, "xaxis": "x"}
    data = [{**line, "name": "output tokens/s per replica", "y": _list(frame["output_tokens_per_s"]), "yaxis": "y",
             "hovertemplate": "batch %{x:,}: %{y:,.0f} tokens/s<extra></extra>"},
            {**line, "name": "TPOT", "y": _list(frame["tpot_ms"]), "yaxis": "y2",
             "hovertemplate": "batch %{x:,}: TPOT %{y:,.2f} ms<extra></extra>"},
            {**line, "name": "TTFT (no queue)", "y": _list(frame["ttft_ms"]), "yaxis": "y2",
             "hovertemplate": "batch %{x:,}: TTFT %{y:,.1f} ms<extra></extra>"}]
    shapes, notes = [], []
    for label, target in (("TPOT target", tpot_target_ms), ("TTFT target", ttft_target_ms)):
        if target:
            shapes.append(_hline(target, "y2"))
            notes.append({"x": 0, "y": math.log10(target), "xref": "paper", "yref": "y2", "showarrow": False,
                          "text": f"{label} {target:,.0f} ms", "xanchor": "left", "yanchor": "bottom",
                          "font": {"color": "gray"}})
    lo, hi = min(b), max(b)
    for i, (name, x) in enumerate(marks.items()):
        if x is None or not math.isfinite(x) or not lo <= x <= hi:
            continue
        color, dash = MARKS.get(name, ("gray", "dash"))
        shapes.append(_vline(x, color, dash))
        notes.append(_label(x, 1.0 - 0.05 * i, f"{name} {x:,.0f}", color, anchor="right" if x > lo * 8 else "left"))
    layout = {"height": 560, "margin": _MARGIN, "legend": {"orientation": "h", "y": -0.12}, "shapes": shapes,
              "annotations": notes, "hovermode": "x unified",
              "xaxis": {"type": "log", "title": {"text": "batch size [concurrent sequences]"}, "anchor": "y2"},
              "yaxis": {"domain": [0.55, 1.0], "title": {"text": "output tokens/s per replica"}, "rangemode": "tozero"},
              "yaxis2": {"domain": [0.0, 0.45], "type": "log", "title": {"text": "latency [ms]"}, "anchor": "x"}}
    return {"data": data, "layout": layout}


def roofline_chart(roofs, decode, prefill: dict, *, ridge: float, peak_tflops: float, context_tokens: float) -> dict:
    """Log-log roofline: attainable TFLOP/s per GPU against arithmetic intensity, with the ridge and the
    operating points of decode (one per batch size) and of prefill."""
    x = _list(roofs["intensity_flop_per_byte"])
    hover = "%{x:,.1f} FLOP/byte: %{y:,.1f} TFLOP/s<extra></extra>"
    data = [{"type": "scatter", "mode": "lines", "name": "datasheet roof", "x": x,
             "y": _list(roofs["peak_flop_per_s"] / 1e12), "line": {"color": "black"}, "hovertemplate": hover},
            {"type": "scatter", "mode": "lines", "name": "roof × efficiencies", "x": x,
             "y": _list(roofs["effective_flop_per_s"] / 1e12), "line": {"color": "gray", "dash": "dash"},
             "hovertemplate": hover},
            {"type": "scatter", "mode": "markers+text", "name": f"decode (context {context_tokens:,.0f})",
             "x": _list(decode["intensity_flop_per_byte"]), "y": _list(decode["flop_per_s"] / 1e12),
             "text": [f"B={v:,.0f}" for v in decode["batch_size"]], "textposition": "top left",
             "marker": {"size": 10, "color": "#4c78a8"},
             "hovertemplate": "decode %{text}: %{x:,.1f} FLOP/byte, %{y:,.1f} TFLOP/s<extra></extra>"},
            {"type": "scatter", "mode": "markers+text",
             "name": f"prefill ({prefill['prompt_tokens']:,.0f}-token prompt)",
             "x": [float(prefill["intensity_flop_per_byte"])], "y": [float(prefill["flop_per_s"]) / 1e12],
             "text": ["prefill"], "textposition": "bottom right",
             "marker": {"size": 12, "symbol": "diamond", "color": "#f58518"},
             "hovertemplate": "prefill: %{x:,.1f} FLOP/byte, %{y:,.1f} TFLOP/s<extra></extra>"}]
    layout = {"height": 480, "margin": _MARGIN, "legend": {"orientation": "h", "y": -0.2},
              "xaxis": {"type": "log", "title": {"text": "arithmetic intensity [FLOP/byte]"}},
              "yaxis": {"type": "log", "title": {"text": f"attainable TFLOP/s per GPU (peak {peak_tflops:,.0f})"}},
              "shapes": [_vline(ridge, "#e45756", "dot")],
              "annotations": [_label(ridge, 0.02, f"ridge {ridge:,.0f} FLOP/byte", "#e45756")]}
    return {"data": data, "layout": layout}


def budget_waterfall(rows: list[dict], *, target_ms: float) -> dict:
    """Waterfall of the latency components [ms] ending in the end-to-end total, with the target line."""
    parts = [r for r in rows if not r["component"].startswith(("TTFT", "end-to-end"))]
    total = next(r for r in rows if r["component"] == "end-to-end")
    x = [r["component"] for r in parts] + ["end-to-end"]
    y = [float(r["predicted_ms"]) for r in parts] + [float(total["predicted_ms"])]
    data = [{"type": "waterfall", "name": "latency", "x": x, "y": y,
             "measure": ["relative"] * len(parts) + ["total"], "text": [f"{v:,.1f}" for v in y],
             "textposition": "outside", "connector": {"line": {"color": "gray"}},
             "increasing": {"marker": {"color": "#4c78a8"}}, "totals": {"marker": {"color": "#f58518"}},
             "hovertemplate": "%{x}: %{y:,.1f} ms<extra></extra>"}]
    layout = {"height": 420, "margin": _MARGIN, "showlegend": False,
              "yaxis": {"title": {"text": "latency [ms]"}, "range": [0, 1.15 * max(target_ms, y[-1])]},
              "shapes": [_hline(target_ms, "y", "#e45756")],
              "annotations": [{"x": 1, "y": target_ms, "xref": "paper", "yref": "y", "showarrow": False,
                               "text": f"target {target_ms:,.0f} ms", "xanchor": "right", "yanchor": "bottom",
                               "font": {"color": "#e45756"}}]}
    return {"data": data, "layout": layout}
