"""A quote a sales engineer can send: self-contained HTML (inline CSS, no external assets), a PDF, and the
ranked table as JSON and CSV.

The quote puts the chosen layout first and alone (its costs per hour, month, year and per 1M input, output
and all tokens; the sizing used — estimate or conservative — and its p99 TPOT and p99 TTFT with their 80 %
bands; the exact ``vllm serve`` line), then the inputs, the sizing chain with the numbers substituted
(:mod:`calculators.report.explain_fleet`), the alternatives only when asked for, the assumptions, the
sources as public references (datasheet and price URLs, the vLLM release, the product's method pages by
title), the date and the permalink. The HTML is A4/Letter wide (720 px) with wrapping links; the PDF embeds
the DejaVu fonts (Unicode: λ, ≤, ×, µ) and its links are clickable.

Every user-provided string is escaped (``html.escape``) in the HTML; CSV
cells that a spreadsheet would read as a formula are neutralised (OWASP "CSV injection").
"""
from __future__ import annotations

import csv
import datetime as dt
import html
import io
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from calculators.errors import InvalidInputError
from calculators.perf.bands import timing_band
from calculators.perf.roofline import Efficiencies
from calculators.planning.fleet import (
    LayoutPlan,
    Workload,
    closest_plan,
    pareto_front,
    slo_bound_note,
    unbounded_tpot_note,
)
from calculators.planning.sizing import sizing_sentence
from calculators.report.explain_fleet import (
    cost_rows,
    efficiency_sources,
    gpu_sources,
    math_chain,
    serve_line,
    vllm_source,
)
from calculators.report.perf import layout_family_runs, layout_published_runs, published_runs_lines
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.vllm.versions import DEFAULT_VLLM_VERSION

if TYPE_CHECKING:  # fpdf is imported where a PDF is made (it is slow to import)
    from fpdf import FPDF

SCHEMA_VERSION = "llmcap-quote/1"
#: Columns of the ranked table (JSON keys and CSV header), unit-suffixed.
COLUMNS = ("gpu", "tensor_parallel_size", "pipeline_parallel_size", "expert_parallel", "dp_attention", "replicas",
           "total_gpus", "nodes", "batch_size", "ttft_p99_s", "tpot_p99_s", "tpot_s", "output_tokens_per_s_per_gpu",
           "tokens_per_s_per_user",
           "usd_per_hour", "usd_per_month", "usd_per_year", "usd_per_million_input_tokens",
           "usd_per_million_output_tokens", "usd_per_million_tokens",
           "fits", "meets_slo", "failure_domain_gpus", "sizing", "tpot_band_low_s", "tpot_band_high_s",
           "tpot_p99_band_low_s", "tpot_p99_band_high_s", "ttft_p99_band_low_s", "ttft_p99_band_high_s",
           "max_model_len", "message", "vllm_serve")
ALTERNATIVES_SHOWN = 15
"""Most fitting layouts the quote lists when the alternatives are asked for."""
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
ASSUMPTIONS = (
    "Continuous batching in steady state; every request has the mean input and output length "
    "(p95 lengths size the KV cache).",
    "Step times from the roofline: the linear layers at the slower of their matmuls (peak × compute efficiency) "
    "and their weight reads (bandwidth × memory efficiency), then attention at the slower of its matmuls and its "
    "KV-cache reads, + TP all-reduce + per-step, per-sequence and per-layer overheads; dense datasheet peaks; "
    "efficiencies fitted on public measurements.",
    "Poisson arrivals; p99 TTFT = prefill + the p99 wait for a batch slot (an M/G/c queue per replica, c = batch, "
    "Allen–Cunneen approximation) + the p99 wait for the steps' token budget (an M/G/1 queue of prompts).",
    "p99 TPOT at each replica's share of the load: the decode step (with the requests decoding beside it) plus "
    "the other requests' prompts fused into a request's steps, their number the 99th percentile of a Poisson count "
    "(those arriving while it waits and decodes), at most a full batch's TPOT.",
    "KV cache capacity as vLLM computes it at start-up (gpu_memory_utilization, CUDA graphs, activation peak).",
    "GPU prices are indicative on-demand list prices (median of the catalog's entries) unless overridden.",
    "Replicas are independent (data parallel); a GPU failure takes down its replica (failure domain = TP × PP GPUs).",
)
DP_ATTENTION_ASSUMPTION = (
    "Attention data-parallel: each GPU runs whole sequences with attention's weights whole and its own KV cache, "
    "the experts split across the GPUs; step times as SGLang lays it out (dense layers and LM head tensor-"
    "parallel), the KV cache as vLLM's data-parallel ranks allocate it (one pool per GPU); the busiest rank sets "
    "the step.")


def neutralise_cell(value: object) -> object:
    """A CSV cell a spreadsheet will not execute: text starting with ``= + - @`` (or tab/CR) gets a
    leading apostrophe. Numbers are left alone."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def ranked_rows(plans: list[LayoutPlan]) -> list[dict]:
    """The ranked table as plain dicts (SI units, USD), rank from 1, with the Pareto flag."""
    front = {id(p) for p in pareto_front(plans)}
    return [{"rank": k, **{c: getattr(p, c) for c in COLUMNS}, "pareto": id(p) in front}
            for k, p in enumerate(plans, start=1)]


def ranked_json(plans: list[LayoutPlan], *, model_id: str, workload: Workload) -> str:
    """The ranked table as JSON (with the model and workload it answers)."""
    doc = {"schema_version": SCHEMA_VERSION, "model": model_id, "workload": vars(workload),
           "layouts": ranked_rows(plans)}
    return json.dumps(doc, indent=2) + "\n"


def ranked_csv(plans: list[LayoutPlan]) -> str:
    """The ranked table as CSV, formula-like text cells neutralised."""
    rows = ranked_rows(plans)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["rank", *COLUMNS, "pareto"], lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: neutralise_cell(v) for k, v in r.items()})
    return buf.getvalue()


FITTED_MODEL = "datasheet roofline, coefficients fitted on public measurements"


def quote_document(model: ModelSpec, gpus: list[GPUSpec], w: Workload, plans: list[LayoutPlan], *,
                   chosen: LayoutPlan | None = None, permalink: str = "", served_name: str | None = None,
                   efficiencies: Efficiencies | None = None, efficiency_source: str = FITTED_MODEL,
                   utilisation_cap: float = 0.8, n_plus_one: bool = False, usd_per_gpu_hour: float | None = None,
                   sizing: str = "estimate", include_alternatives: bool = False,
                   vllm_version: str = DEFAULT_VLLM_VERSION, customer: str = "", prepared_by: str = "",
                   notes: str = "", date: dt.date | None = None) -> dict:
    """Everything a quote shows, as one JSON-able dict (render it with :func:`quote_html` / :func:`quote_pdf`).

    The chosen layout comes first and alone; ``alternatives`` (the ranked table) only with
    ``include_alternatives``. Sources are public references and the product's method pages by title.
    """
    plan = chosen or closest_plan(plans)
    name = served_name or model.id
    inputs = {
        "model": name, "GPU types": ", ".join(g.id for g in gpus),
        "request rate [requests/s]": f"{w.request_rate_per_s:g}",
        "input / output length [tokens]": f"{w.input_len:g} / {w.output_len:g}",
        "p99 TTFT target [ms]": "none" if w.ttft_p99_s is None else f"{w.ttft_p99_s * 1e3:g}",
        "p99 TPOT target [ms]": "none" if w.tpot_p99_s is None else f"{w.tpot_p99_s * 1e3:g}",
        "headroom": f"utilisation cap {utilisation_cap:g}" + (" + N+1 spare replica" if n_plus_one else ""),
        "$/GPU-hour": "catalog median" if usd_per_gpu_hour is None else f"{usd_per_gpu_hour:g} (given)",
        "sizing": "conservative (pessimistic edge of the timing bands)" if sizing == "conservative" else "estimate",
    }
    sources = [f"{model.id} architecture: {model.source or 'user config'}", vllm_source(vllm_version)]
    quoted = gpus if include_alternatives or plan is None else [g for g in gpus if g.id == plan.gpu]
    for g in quoted:  # the datasheet and prices behind the figures shown, not those of GPUs left out
        sources += gpu_sources(g)
    chosen_gpu = next((g for g in gpus if plan is not None and g.id == plan.gpu), None)
    sources += efficiency_sources(efficiencies or Efficiencies(), efficiency_source, chosen_gpu,
                                  plan.compute_dtype if plan is not None and plan.compute_dtype else "bf16")
    fits = bool(plan and plan.fits)
    published = (layout_published_runs(model, plan, w.input_len, efficiencies)
                 or layout_family_runs(plan, efficiencies))  # the family's runs where none ran this setup
    sources += published_run_sources(published)
    return {
        "schema_version": SCHEMA_VERSION, "date": (date or dt.date.today()).isoformat(),
        "customer": customer, "prepared_by": prepared_by, "notes": notes, "permalink": permalink,
        "inputs": inputs, "chosen": plan.as_dict() if plan else None,
        "costs": cost_rows(plan) if fits and plan else [],
        "timing": (_timing(plan, sizing, chosen_gpu) + _optional(unbounded_tpot_note(w, plan))
                   + _optional(slo_bound_note(w, plan))
                   + published_runs_lines(published)) if fits and plan else [],
        "vllm_serve": serve_line(plan, model.id, name) if fits and plan else "",
        "math": math_chain(plan, w, utilisation_cap=utilisation_cap, n_plus_one=n_plus_one) if fits and plan else [],
        "assumptions": list(ASSUMPTIONS) + ([DP_ATTENTION_ASSUMPTION] if plan and plan.dp_attention else []),
        "sources": sources,
        "alternatives": [r for r in ranked_rows(plans) if r["fits"]][:ALTERNATIVES_SHOWN] if include_alternatives
        else [],
    }


def published_run_sources(entries: list[dict]) -> list[str]:
    """The public measurement sources behind ``entries`` (the quote's list of sources): publisher and address."""
    from calculators.perf.measurements import load_sources
    named = {s for e in entries for s in e["sources"]}
    return [f"public serving runs: {s.publisher}, {s.urls[0]}" for s in load_sources().values() if s.publisher in named]


def _optional(line: str | None) -> list[str]:
    """A line that may be absent, as a list of zero or one."""
    return [line] if line else []


def _timing(plan: LayoutPlan, sizing: str, gpu: GPUSpec | None) -> list[str]:
    """The sizing used and the chosen layout's p99 TPOT and p99 TTFT with their 80 % bands (around the estimate,
    the bands of ``gpu``, the chosen layout's GPU)."""
    assert plan.tpot_p99_s is not None and plan.ttft_p99_s is not None  # a fitting plan is sized
    lo, hi = plan.tpot_p99_band_low_s, plan.tpot_p99_band_high_s
    tlo, thi = plan.ttft_p99_band_low_s, plan.ttft_p99_band_high_s
    if lo is None or hi is None or tlo is None or thi is None:  # planned with a calibration: no band
        return [sizing_sentence(sizing, shipped=False), f"p99 TPOT {plan.tpot_p99_s * 1e3:,.1f} ms as sized",
                f"p99 TTFT {plan.ttft_p99_s * 1e3:,.0f} ms as sized"]
    tpot, ttft = timing_band("tpot", gpu), timing_band("ttft", gpu)
    return [sizing_sentence(sizing, [gpu] if gpu else []),
            f"p99 TPOT {plan.tpot_p99_s * 1e3:,.1f} ms as sized; the estimate's 80 % band {lo * 1e3:,.1f}–"
            f"{hi * 1e3:,.1f} ms "
            f"(bands like it held on average {tpot.coverage:.0%} of {tpot.held_out_text})",
            f"p99 TTFT {plan.ttft_p99_s * 1e3:,.0f} ms as sized; the estimate's 80 % band {tlo * 1e3:,.0f}–"
            f"{thi * 1e3:,.0f} ms (bands like it held on average {ttft.coverage:.0%} of {ttft.held_out_text})"]


def _money(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"${x:,.{digits}f}"


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x * 1e3:,.1f} ms"


def _headline(c: dict) -> str:
    return (f"{c['message']} — {c['total_gpus']} GPUs on {c['nodes']} node(s), batch (max_num_seqs) {c['batch_size']}, "
            f"max_model_len {c['max_model_len']:,}; p99 TTFT {_ms(c['ttft_p99_s'])}, p99 TPOT {_ms(c['tpot_p99_s'])}; "
            f"meets the SLO: {'yes' if c['meets_slo'] else 'no'}.")


def _cost_text(label: str, value: float | None) -> str:
    return f"{label}: {_money(value, 3 if '1M' in label else 2)}"


def _table_rows(doc: dict) -> list[list[str]]:
    return [[str(r["rank"]), r["gpu"], f"TP{r['tensor_parallel_size']}×PP{r['pipeline_parallel_size']}"
             + (" · DP attention" if r["dp_attention"] else ""),
             str(r["replicas"]), str(r["total_gpus"]), str(r["batch_size"]), _ms(r["ttft_p99_s"]), _ms(r["tpot_p99_s"]),
             _money(r["usd_per_hour"]), _money(r["usd_per_month"], 0), _money(r["usd_per_million_output_tokens"], 3),
             "yes" if r["meets_slo"] else "no"] for r in doc["alternatives"]]


_HEAD = ["#", "GPU", "layout", "replicas", "GPUs", "batch", "p99 TTFT", "p99 TPOT", "$/hour", "$/month (730 h)",
         "$/1M output tokens", "SLO"]
_URL = re.compile(r"https?://[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5rem auto;
max-width:720px;padding:0 12px;color:#1a1a1a;line-height:1.45}h1{font-size:1.5rem;margin-bottom:.2rem}
h2{font-size:1.1rem;margin-top:1.4rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;width:100%;font-size:.8rem;table-layout:auto}
th,td{border:1px solid #ccc;padding:.2rem .35rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f2f2f2}td.num{text-align:right}a,li,p,td,code{overflow-wrap:anywhere}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.8rem}pre{background:#f6f6f6;padding:.6rem;
white-space:pre-wrap;overflow-wrap:anywhere}.muted{color:#666;font-size:.85rem}.math th{width:24%}
@media print{body{margin:0 auto;max-width:190mm}a{color:inherit}}"""


def linkify(text: str) -> str:
    """``text`` escaped for HTML, every http(s) URL in it a link."""
    out, last = [], 0
    for m in _URL.finditer(text):
        url = m.group(0).rstrip(".,;)")
        out += [html.escape(text[last:m.start()]), f'<a href="{html.escape(url, quote=True)}">{html.escape(url)}</a>']
        last = m.start() + len(url)
    return "".join(out) + html.escape(text[last:])


def _html_chosen(doc: dict) -> list[str]:
    e, c = html.escape, doc["chosen"]
    if not (c and c["fits"]):
        return [f"<p>{e(c['message']) if c else 'no layout fits'}</p>"]
    return [f"<p><b>{e(_headline(c))}</b></p>",
            "<table>" + "".join(f'<tr><th>{e(k)}</th><td class="num">{e(_money(v, 3 if "1M" in k else 2))}</td></tr>'
                                for k, v in doc["costs"]) + "</table>",
            "<ul>" + "".join(f"<li>{e(t)}</li>" for t in doc["timing"]) + "</ul>",
            f"<pre>{e(doc['vllm_serve'])}</pre>"]


def quote_html(doc: dict) -> str:
    """The quote as one self-contained HTML page (inline CSS, no scripts, no external assets), A4/Letter wide."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>LLM serving quote — {e(doc['inputs']['model'])}</title>", f"<style>{_CSS}</style></head><body>",
             f"<h1>LLM serving quote: {e(doc['inputs']['model'])}</h1>",
             f'<p class="muted">Date {e(doc["date"])} · format {e(doc["schema_version"])}'
             + (f" · for {e(doc['customer'])}" if doc["customer"] else "")
             + (f" · prepared by {e(doc['prepared_by'])}" if doc["prepared_by"] else "") + "</p>"]
    if doc["notes"]:
        parts.append(f"<p>{e(doc['notes'])}</p>")
    parts.append("<h2>Chosen layout</h2>")
    parts += _html_chosen(doc)
    parts.append("<h2>Inputs</h2><table>" + "".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>"
                                                    for k, v in doc["inputs"].items()) + "</table>")
    if doc["math"]:
        parts.append('<h2>The math</h2><table class="math">' + "".join(
            f"<tr><th>{e(s['title'])}</th><td><code>{e(s['formula'])}</code><br>{e(s['substituted'])}"
            f"<br><span class=\"muted\">{linkify('; '.join(s['sources']))}</span></td></tr>" for s in doc["math"])
            + "</table>")
    if doc["alternatives"]:
        parts.append("<h2>Alternatives considered</h2><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in _HEAD)
                     + "</tr>" + "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in r) + "</tr>"
                                         for r in _table_rows(doc)) + "</table>")
    parts.append("<h2>Assumptions</h2><ul>" + "".join(f"<li>{e(a)}</li>" for a in doc["assumptions"]) + "</ul>")
    parts.append("<h2>Sources</h2><ul>" + "".join(f"<li>{linkify(s)}</li>" for s in doc["sources"]) + "</ul>")
    parts.append(f'<h2>Permalink</h2><p><a href="{e(doc["permalink"], quote=True)}">{e(doc["permalink"])}</a></p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


FONT_FILES = {("DejaVu", ""): "DejaVuSans.ttf", ("DejaVu", "B"): "DejaVuSans-Bold.ttf",
              ("DejaVuMono", ""): "DejaVuSansMono.ttf"}
"""The Unicode fonts embedded in the PDF (package data, licence beside them): λ, ≤, ×, µ, ≈, → print."""


def _pdf_para(pdf: FPDF, text: str, size: float = 9, style: str = "", font: str = "DejaVu", h: float = 4.6) -> None:
    """A paragraph; http(s) URLs in it are clickable links."""
    pdf.set_font(font, style, size)
    last = 0
    for m in _URL.finditer(text):
        url = m.group(0).rstrip(".,;)")
        pdf.write(h, text[last:m.start()])
        pdf.set_text_color(20, 60, 160)
        pdf.write(h, url, link=url)
        pdf.set_text_color(0, 0, 0)
        last = m.start() + len(url)
    pdf.write(h, text[last:])
    pdf.ln(h)


def _pdf_head(pdf: FPDF, text: str) -> None:
    pdf.ln(2)
    _pdf_para(pdf, text, 12, "B", h=7)


def _pdf_chosen(pdf: FPDF, doc: dict) -> None:
    """The chosen layout: headline, costs, sizing and bands, ``vllm serve`` line — or why nothing fits."""
    _pdf_head(pdf, "Chosen layout")
    c = doc["chosen"]
    if not (c and c["fits"]):
        _pdf_para(pdf, c["message"] if c else "no layout fits")
        return
    _pdf_para(pdf, _headline(c), 9, "B")
    for label, value in doc["costs"]:
        _pdf_para(pdf, _cost_text(label, value))
    for t in doc["timing"]:
        _pdf_para(pdf, "• " + t, 8)
    _pdf_para(pdf, doc["vllm_serve"], 8, font="DejaVuMono", h=4)


def _pdf_math(pdf: FPDF, doc: dict) -> None:
    """The sizing chain, step by step (nothing when no layout fits)."""
    if not doc["math"]:
        return
    _pdf_head(pdf, "The math")
    for s in doc["math"]:
        _pdf_para(pdf, s["title"], 9, "B")
        _pdf_para(pdf, s["formula"], 8, font="DejaVuMono", h=4)
        _pdf_para(pdf, s["substituted"], 8, font="DejaVuMono", h=4)
        _pdf_para(pdf, "Source: " + "; ".join(s["sources"]), 7)


def _pdf_alternatives(pdf: FPDF, doc: dict) -> None:
    """The alternatives the user asked for, as a bordered table."""
    if not doc["alternatives"]:
        return
    _pdf_head(pdf, "Alternatives considered")
    widths = (6, 20, 17, 13, 11, 11, 17, 15, 17, 21, 21, 9)
    pdf.set_font("DejaVu", "B", 6)
    for wd, h in zip(widths, _HEAD, strict=True):
        pdf.cell(wd, 5, h[:16], border=1)
    pdf.ln()
    pdf.set_font("DejaVu", "", 6)
    for r in _table_rows(doc):
        for wd, x in zip(widths, r, strict=True):
            pdf.cell(wd, 5, x[:22], border=1)
        pdf.ln()


def quote_pdf(doc: dict) -> bytes:
    """The quote as an A4 PDF (fpdf2) with the DejaVu fonts embedded and clickable links."""
    from fpdf import FPDF  # lazy: keeps start-up fast
    pdf = FPDF(format="A4")
    fonts = files("calculators.data").joinpath("fonts")
    for (family, style), name in FONT_FILES.items():
        pdf.add_font(family, style, str(fonts.joinpath(name)))
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    pdf.set_title(f"LLM serving quote — {doc['inputs']['model']}")
    _pdf_para(pdf, f"LLM serving quote: {doc['inputs']['model']}", 16, "B", h=9)
    meta = f"Date {doc['date']} · format {doc['schema_version']}"
    meta += f" · for {doc['customer']}" if doc["customer"] else ""
    meta += f" · prepared by {doc['prepared_by']}" if doc["prepared_by"] else ""
    _pdf_para(pdf, meta, 8)
    if doc["notes"]:
        _pdf_para(pdf, doc["notes"])
    _pdf_chosen(pdf, doc)
    _pdf_head(pdf, "Inputs")
    for k, v in doc["inputs"].items():
        _pdf_para(pdf, f"{k}: {v}")
    _pdf_math(pdf, doc)
    _pdf_alternatives(pdf, doc)
    _pdf_head(pdf, "Assumptions")
    for a in doc["assumptions"]:
        _pdf_para(pdf, "• " + a, 8)
    _pdf_head(pdf, "Sources")
    for s in doc["sources"]:
        _pdf_para(pdf, "• " + s, 7, h=3.6)
    _pdf_head(pdf, "Permalink")
    _pdf_para(pdf, doc["permalink"] or "(none)", 7, h=3.6)
    return bytes(pdf.output())


QUOTE_FORMATS = {".html": "HTML", ".htm": "HTML", ".pdf": "PDF"}


def quote_format(path: str) -> str:
    """``"HTML"`` or ``"PDF"`` from the file name's extension; any other is refused naming the field."""
    suffix = Path(path).suffix.lower()
    if suffix not in QUOTE_FORMATS:
        raise InvalidInputError("quote", path, "a file name ending in .html or .pdf")
    return QUOTE_FORMATS[suffix]


def write_quote(doc: dict, path: str) -> str:
    """Write the quote to ``path`` as HTML or PDF by its extension; returns the format written."""
    if quote_format(path) == "PDF":
        Path(path).write_bytes(quote_pdf(doc))
    else:
        Path(path).write_text(quote_html(doc), encoding="utf-8")
    return quote_format(path)
