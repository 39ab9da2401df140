"""A quote a sales engineer can send: self-contained HTML (inline CSS, no external assets), a PDF, and the
ranked table as JSON and CSV.

The quote carries the inputs, the chosen layout, the sizing chain with the numbers substituted
(:mod:`calculators.report.explain_fleet`), the assumptions, the source of every constant (GPU datasheets
and prices from the catalog, the performance model's efficiencies), the date, the permalink and the
exact ``vllm serve`` line. Every user-provided string is escaped (``html.escape``) in the HTML; CSV
cells that a spreadsheet would read as a formula are neutralised (OWASP "CSV injection").
"""
from __future__ import annotations

import csv
import datetime as dt
import html
import io
import json
from typing import TYPE_CHECKING

from calculators.perf.roofline import Efficiencies
from calculators.planning.fleet import LayoutPlan, Workload, pareto_front
from calculators.report.explain_fleet import efficiency_sources, gpu_sources, math_chain, serve_line
from calculators.specs.schema import GPUSpec, ModelSpec

if TYPE_CHECKING:  # fpdf is imported where a PDF is made (it is slow to import)
    from fpdf import FPDF

SCHEMA_VERSION = "llmcap-quote/1"
#: Columns of the ranked table (JSON keys and CSV header), unit-suffixed.
COLUMNS = ("gpu", "tensor_parallel_size", "pipeline_parallel_size", "expert_parallel", "replicas", "total_gpus",
           "nodes", "batch_size", "ttft_p99_s", "tpot_s", "output_tokens_per_s_per_gpu", "tokens_per_s_per_user",
           "usd_per_hour", "usd_per_month", "usd_per_year", "usd_per_million_input_tokens",
           "usd_per_million_output_tokens", "usd_per_million_tokens",
           "fits", "meets_slo", "failure_domain_gpus", "message", "vllm_serve")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
ASSUMPTIONS = (
    "Continuous batching in steady state; every request has the mean input and output length "
    "(p95 lengths size the KV cache).",
    "Step times from the roofline: max(compute / (peak × compute efficiency), bytes / (bandwidth × memory "
    "efficiency)) + TP all-reduce + a fixed per-step overhead; dense datasheet peaks.",
    "Poisson arrivals; p99 TTFT = prefill + the p99 queueing wait of an M/G/c queue per replica (c = batch), "
    "Allen–Cunneen approximation.",
    "KV cache capacity as vLLM computes it at start-up (gpu_memory_utilization, CUDA graphs, activation peak).",
    "GPU prices are indicative on-demand list prices (median of the catalog's entries) unless overridden.",
    "Replicas are independent (data parallel); a GPU failure takes down its replica (failure domain = TP × PP GPUs).",
)


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


def quote_document(model: ModelSpec, gpus: list[GPUSpec], w: Workload, plans: list[LayoutPlan], *,
                   chosen: LayoutPlan | None = None, permalink: str = "", served_name: str | None = None,
                   efficiencies: Efficiencies | None = None, efficiency_source: str = "datasheet roofline",
                   utilisation_cap: float = 0.8, n_plus_one: bool = False, usd_per_gpu_hour: float | None = None,
                   customer: str = "", prepared_by: str = "", notes: str = "",
                   date: dt.date | None = None) -> dict:
    """Everything a quote shows, as one JSON-able dict (render it with :func:`quote_html` / :func:`quote_pdf`)."""
    plan = chosen or next((p for p in plans if p.meets_slo), None) or next((p for p in plans if p.fits), None)
    eff = efficiencies or Efficiencies()
    name = served_name or model.id
    inputs = {
        "model": name, "GPU types": ", ".join(g.id for g in gpus),
        "request rate [requests/s]": f"{w.request_rate_per_s:g}",
        "input / output length [tokens]": f"{w.input_len:g} / {w.output_len:g}",
        "p99 TTFT target [ms]": "none" if w.ttft_p99_s is None else f"{w.ttft_p99_s * 1e3:g}",
        "p99 TPOT target [ms]": "none" if w.tpot_p99_s is None else f"{w.tpot_p99_s * 1e3:g}",
        "headroom": f"utilisation cap {utilisation_cap:g}" + (" + N+1 spare replica" if n_plus_one else ""),
        "$/GPU-hour": "catalog median" if usd_per_gpu_hour is None else f"{usd_per_gpu_hour:g} (given)",
    }
    sources = [f"{model.id} architecture: {model.source or 'user config'}"]
    for g in gpus:
        sources += gpu_sources(g)
    sources += efficiency_sources(eff, efficiency_source)
    return {
        "schema_version": SCHEMA_VERSION, "date": (date or dt.date.today()).isoformat(),
        "customer": customer, "prepared_by": prepared_by, "notes": notes, "permalink": permalink,
        "inputs": inputs, "chosen": plan.as_dict() if plan else None,
        "vllm_serve": serve_line(plan, model.id, name) if plan and plan.fits else "",
        "math": math_chain(plan, w, utilisation_cap=utilisation_cap, n_plus_one=n_plus_one)
        if plan and plan.fits else [],
        "assumptions": list(ASSUMPTIONS), "sources": sources,
        "ranked": ranked_rows(plans),
    }


def _money(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"${x:,.{digits}f}"


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x * 1e3:,.1f} ms"


def _table_rows(doc: dict, limit: int = 15) -> list[list[str]]:
    out = []
    for r in [r for r in doc["ranked"] if r["fits"]][:limit]:
        out.append([str(r["rank"]), r["gpu"], f"TP{r['tensor_parallel_size']}×PP{r['pipeline_parallel_size']}",
                    str(r["replicas"]), str(r["total_gpus"]), str(r["batch_size"]), _ms(r["ttft_p99_s"]),
                    _ms(r["tpot_s"]), _money(r["usd_per_hour"]), _money(r["usd_per_million_output_tokens"], 3),
                    "yes" if r["meets_slo"] else "no"])
    return out


_HEAD = ["#", "GPU", "layout", "replicas", "GPUs", "batch", "TTFT p99", "TPOT", "$/hour", "$/1M out", "SLO"]
_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:960px;
color:#1a1a1a;line-height:1.45}h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:1.6rem;
border-bottom:1px solid #ddd;padding-bottom:.2rem}table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .45rem;text-align:left;vertical-align:top}th{background:#f2f2f2}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}pre{background:#f6f6f6;padding:.6rem;
white-space:pre-wrap;word-break:break-all}.muted{color:#666;font-size:.85rem}.math td:first-child{width:22%}
@media print{body{margin:0;max-width:none}a{color:inherit}}"""


def quote_html(doc: dict) -> str:
    """The quote as one self-contained HTML page (inline CSS, no scripts, no external assets)."""
    e = html.escape
    c = doc["chosen"]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>LLM serving quote — {e(doc['inputs']['model'])}</title>", f"<style>{_CSS}</style></head><body>",
             f"<h1>LLM serving quote: {e(doc['inputs']['model'])}</h1>",
             f'<p class="muted">Date {e(doc["date"])} · format {e(doc["schema_version"])}'
             + (f" · for {e(doc['customer'])}" if doc["customer"] else "")
             + (f" · prepared by {e(doc['prepared_by'])}" if doc["prepared_by"] else "") + "</p>"]
    if doc["notes"]:
        parts.append(f"<p>{e(doc['notes'])}</p>")
    parts.append("<h2>Inputs</h2><table>" + "".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>"
                                                    for k, v in doc["inputs"].items()) + "</table>")
    parts.append("<h2>Chosen layout</h2>")
    if c and c["fits"]:
        parts.append(f"<p><b>{e(c['message'])}</b> — {c['total_gpus']} GPUs on {c['nodes']} node(s), "
                     f"{_money(c['usd_per_hour'])}/hour ({_money(c['usd_per_month'], 0)}/month of 730 h), "
                     f"{_money(c['usd_per_million_output_tokens'], 3)} per 1M output "
                     f"tokens, {_money(c['usd_per_million_input_tokens'], 3)} per 1M input tokens; p99 TTFT "
                     f"{_ms(c['ttft_p99_s'])}, TPOT {_ms(c['tpot_s'])}; meets the SLO: "
                     f"{'yes' if c['meets_slo'] else 'no'}.</p>")
        parts.append(f"<pre>{e(doc['vllm_serve'])}</pre>")
    else:
        parts.append(f"<p>{e(c['message']) if c else 'no layout fits'}</p>")
    if doc["math"]:
        parts.append('<h2>The math</h2><table class="math">' + "".join(
            f"<tr><th>{e(s['title'])}</th><td><code>{e(s['formula'])}</code><br>{e(s['substituted'])}"
            f"<br><span class=\"muted\">{e('; '.join(s['sources']))}</span></td></tr>" for s in doc["math"])
            + "</table>")
    rows = _table_rows(doc)
    parts.append("<h2>Ranked layouts</h2><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in _HEAD) + "</tr>"
                 + "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in r) + "</tr>" for r in rows) + "</table>")
    parts.append("<h2>Assumptions</h2><ul>" + "".join(f"<li>{e(a)}</li>" for a in doc["assumptions"]) + "</ul>")
    parts.append("<h2>Sources of the constants</h2><ul>" + "".join(f"<li>{e(s)}</li>" for s in doc["sources"])
                 + "</ul>")
    parts.append(f'<h2>Permalink</h2><p><a href="{e(doc["permalink"], quote=True)}">{e(doc["permalink"])}</a></p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


_PDF_REPLACE = {"→": "->", "≤": "<=", "≥": ">=", "—": "-", "–": "-", "≈": "~", "⌈": "ceil(", "⌉": ")", "−": "-",
                "’": "'", "‘": "'", "“": '"', "”": '"', "…": "...", "⁶": "^6", "·": "*", "\u00a0": " "}


def pdf_text(text: str) -> str:
    """Text a PDF core font (Latin-1) can show: known symbols spelled out, the rest replaced by ``?``."""
    for k, v in _PDF_REPLACE.items():
        text = text.replace(k, v)
    return text.encode("latin-1", "replace").decode("latin-1")


def _pdf_para(pdf: FPDF, text: str, size: float = 9, style: str = "", font: str = "Helvetica", h: float = 4.6) -> None:
    pdf.set_font(font, style, size)
    pdf.multi_cell(0, h, pdf_text(text), new_x="LMARGIN", new_y="NEXT")


def _pdf_head(pdf: FPDF, text: str) -> None:
    pdf.ln(2)
    _pdf_para(pdf, text, 12, "B", h=7)


def _pdf_chosen(pdf: FPDF, doc: dict) -> None:
    """The chosen layout: its figures and ``vllm serve`` line, or why nothing fits."""
    _pdf_head(pdf, "Chosen layout")
    c = doc["chosen"]
    if c and c["fits"]:
        _pdf_para(pdf, f"{c['message']} - {c['total_gpus']} GPUs on {c['nodes']} node(s), "
                       f"{_money(c['usd_per_hour'])}/hour, "
                       f"{_money(c['usd_per_million_output_tokens'], 3)} per 1M output tokens, "
                       f"{_money(c['usd_per_million_input_tokens'], 3)} per 1M input tokens; "
                       f"p99 TTFT {_ms(c['ttft_p99_s'])}, "
                       f"TPOT {_ms(c['tpot_s'])}; meets the SLO: {'yes' if c['meets_slo'] else 'no'}.")
        _pdf_para(pdf, doc["vllm_serve"], 8, font="Courier", h=4)
    else:
        _pdf_para(pdf, c["message"] if c else "no layout fits")


def _pdf_math(pdf: FPDF, doc: dict) -> None:
    """The sizing chain, step by step (nothing when no layout fits)."""
    if not doc["math"]:
        return
    _pdf_head(pdf, "The math")
    for s in doc["math"]:
        _pdf_para(pdf, s["title"], 9, "B")
        _pdf_para(pdf, s["formula"], 8, font="Courier", h=4)
        _pdf_para(pdf, s["substituted"], 8, font="Courier", h=4)
        _pdf_para(pdf, "Source: " + "; ".join(s["sources"]), 7)


def _pdf_ranked(pdf: FPDF, doc: dict) -> None:
    """The ranked layouts as a bordered table."""
    _pdf_head(pdf, "Ranked layouts")
    widths = (7, 22, 20, 15, 12, 12, 19, 17, 20, 20, 10)
    pdf.set_font("Helvetica", "B", 7)
    for wd, h in zip(widths, _HEAD, strict=True):
        pdf.cell(wd, 5, pdf_text(h), border=1)
    pdf.ln()
    pdf.set_font("Helvetica", "", 7)
    for r in _table_rows(doc):
        for wd, x in zip(widths, r, strict=True):
            pdf.cell(wd, 5, pdf_text(x)[:24], border=1)
        pdf.ln()


def quote_pdf(doc: dict) -> bytes:
    """The quote as a PDF (fpdf2, core Helvetica/Courier fonts; no external assets)."""
    from fpdf import FPDF  # lazy: keeps start-up fast
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    pdf.set_title(pdf_text(f"LLM serving quote - {doc['inputs']['model']}"))
    _pdf_para(pdf, f"LLM serving quote: {doc['inputs']['model']}", 16, "B", h=9)
    meta = f"Date {doc['date']} - format {doc['schema_version']}"
    meta += f" - for {doc['customer']}" if doc["customer"] else ""
    meta += f" - prepared by {doc['prepared_by']}" if doc["prepared_by"] else ""
    _pdf_para(pdf, meta, 8)
    if doc["notes"]:
        _pdf_para(pdf, doc["notes"])
    _pdf_head(pdf, "Inputs")
    for k, v in doc["inputs"].items():
        _pdf_para(pdf, f"{k}: {v}")
    _pdf_chosen(pdf, doc)
    _pdf_math(pdf, doc)
    _pdf_ranked(pdf, doc)
    _pdf_head(pdf, "Assumptions")
    for a in doc["assumptions"]:
        _pdf_para(pdf, "- " + a, 8)
    _pdf_head(pdf, "Sources of the constants")
    for s in doc["sources"]:
        _pdf_para(pdf, "- " + s, 7, h=3.6)
    _pdf_head(pdf, "Permalink")
    _pdf_para(pdf, doc["permalink"] or "(none)", 7, font="Courier", h=3.6)
    return bytes(pdf.output())
