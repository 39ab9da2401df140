"""``llmcap plan``: rank layouts per GPU type and size the fleet for a load under an SLO; ``--quote`` writes the
quote (HTML or PDF by the file's extension)."""
from __future__ import annotations

import argparse
import json

from calculators.cli.flags import resolve_model
from calculators.planning.costs import COST_LABELS
from calculators.planning.fleet import (
    LayoutPlan,
    Workload,
    best_plan,
    closest_plan,
    fleet_summary,
    pareto_front,
    plan_fleet,
    slo_bound_note,
    unbounded_tpot_note,
)
from calculators.planning.sizing import sizing_sentence
from calculators.report.perf import layout_family_runs, layout_published_runs
from calculators.specs.catalog import get_gpu


def cmd_plan(a: argparse.Namespace) -> int:
    if a.quote:  # refuse a wrong file name before the planning work
        from calculators.report.quote import quote_format
        quote_format(a.quote)
    model = resolve_model(a.model)
    gpus = [get_gpu(g) for g in a.gpu]
    w = Workload(request_rate_per_s=a.request_rate, input_len=a.input_len, output_len=a.output_len,
                 ttft_p99_s=None if a.ttft_p99_ms is None else a.ttft_p99_ms / 1e3,
                 tpot_p99_s=None if a.tpot_p99_ms is None else a.tpot_p99_ms / 1e3,
                 input_len_p95=a.input_len_p95, output_len_p95=a.output_len_p95)
    sizing = "conservative" if a.conservative else "estimate"
    plans = plan_fleet(model, gpus, w, quantization=a.quantization, kv_cache_dtype=a.kv_cache_dtype,
                       utilisation_cap=a.headroom, n_plus_one=a.n_plus_one, usd_per_gpu_hour=a.usd_per_gpu_hour,
                       max_pp=a.max_pipeline_parallel_size, max_model_len=a.max_model_len, sizing=sizing)
    front = {(p.gpu, p.layout) for p in pareto_front(plans)}
    doc = {"model": model.id, "workload": {k: v for k, v in vars(w).items()}, "summary": fleet_summary(model, plans),
           "sizing": sizing, "sizing_note": sizing_sentence(sizing, gpus),
           "tpot_note": _tpot_note(w, plans), "slo_note": slo_bound_note(w, best_plan(plans)),
           "cost_labels": COST_LABELS,
           "cost_split": "GPU time split between prefill (input tokens) and decode (output tokens) by their "
                         "shares of a request cycle",
           "layouts": [{**p.as_dict(), "pareto": (p.gpu, p.layout) in front}
                       for p in plans],
           "published_runs": layout_published_runs(model, closest_plan(plans), w.input_len),
           "family_runs": layout_family_runs(closest_plan(plans))}
    if a.quote:
        _write_quote(a, model, gpus, w, plans, sizing)
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    _print_table(a, model, w, plans, doc)
    return 0


def _tpot_note(w: Workload, plans: list[LayoutPlan]) -> str | None:
    """:func:`unbounded_tpot_note` with the flag that bounds it."""
    note = unbounded_tpot_note(w, best_plan(plans))
    return None if note is None else f"{note} Set --tpot-p99-ms to bound it."


def _write_quote(a: argparse.Namespace, model, gpus: list, w: Workload, plans: list[LayoutPlan], sizing: str) -> None:
    """The quote of the best layout to ``a.quote`` (HTML or PDF by extension); says what it wrote on stderr."""
    import sys

    from calculators.report.quote import quote_document, write_quote
    doc = quote_document(model, gpus, w, plans, served_name=a.model, utilisation_cap=a.headroom,
                         n_plus_one=a.n_plus_one, usd_per_gpu_hour=a.usd_per_gpu_hour, sizing=sizing,
                         include_alternatives=a.include_alternatives)
    kind = write_quote(doc, a.quote)
    print(f"quote written to {a.quote} ({kind})", file=sys.stderr)


def _print_table(a: argparse.Namespace, model, w: Workload, plans: list[LayoutPlan], doc: dict) -> None:
    print(f"{a.model}: {w.request_rate_per_s:g} req/s, {w.input_len:g} in / {w.output_len:g} out — {doc['summary']}")
    print(doc["sizing_note"])
    for note in (doc["tpot_note"], doc["slo_note"]):
        if note:
            print(note)
    print(f"{'gpu':12s} {'layout':22s} {'batch':>6s} {'repl':>5s} {'GPUs':>5s} {'$/hour':>9s} {'$/month':>10s} "
          f"{'$/1M out':>9s} {'TTFT p99':>9s} {'TPOT p99':>8s} {'tok/s/GPU':>9s}  SLO")
    for p in plans:
        if not p.fits:
            print(f"{p.gpu:12s} {p.layout:22s}  {p.message}")
            continue
        assert p.ttft_p99_s is not None and p.tpot_p99_s is not None  # a fitting plan is always sized
        cost = "—" if p.usd_per_hour is None else f"{p.usd_per_hour:.2f}"
        month = "—" if p.usd_per_month is None else f"{p.usd_per_month:,.0f}"
        per_m = "—" if p.usd_per_million_output_tokens is None else f"{p.usd_per_million_output_tokens:.3f}"
        print(f"{p.gpu:12s} {p.layout:22s} {p.batch_size:6d} "
              f"{p.replicas:5d} {p.total_gpus:5d} {cost:>9s} {month:>10s} {per_m:>9s} {p.ttft_p99_s * 1e3:7.0f}ms "
              f"{p.tpot_p99_s * 1e3:6.1f}ms "
              f"{p.output_tokens_per_s_per_gpu:9.0f}  {'yes' if p.meets_slo else 'no: ' + p.message}")
    print("$/1M out = " + COST_LABELS["usd_per_million_output_tokens"] + "; --json has every cost: "
          + ", ".join(COST_LABELS.values()))
    if doc["published_runs"] or doc["family_runs"]:
        from calculators.report.perf import published_runs_lines
        first, *lines = published_runs_lines(doc["published_runs"] or doc["family_runs"])
        print(f"the recommended layout: {first}")
        for line in lines:
            print(f"  {line}")


def register(sub) -> None:
    """Add ``plan`` to the main parser's sub-parsers."""
    pl = sub.add_parser("plan", help="rank layouts and size the fleet for a load under an SLO")
    pl.add_argument("--model", required=True)
    pl.add_argument("--gpu", action="append", required=True, help="repeat for several GPU types")
    pl.add_argument("--request-rate", type=float, required=True, help="requests per second")
    pl.add_argument("--input-len", type=float, required=True)
    pl.add_argument("--output-len", type=float, required=True)
    pl.add_argument("--input-len-p95", type=float)
    pl.add_argument("--output-len-p95", type=float)
    pl.add_argument("--ttft-p99-ms", type=float)
    pl.add_argument("--tpot-p99-ms", type=float)
    pl.add_argument("--headroom", type=float, default=0.8, help="utilisation cap per replica (0, 1]")
    pl.add_argument("--n-plus-one", action="store_true", help="one spare replica")
    pl.add_argument("--usd-per-gpu-hour", type=float)
    pl.add_argument("--quantization")
    pl.add_argument("--kv-cache-dtype", default="auto")
    pl.add_argument("--max-model-len", type=int,
                    help="vLLM's --max-model-len (the context you serve); default: the model's context, as vLLM")
    pl.add_argument("--max-pipeline-parallel-size", type=int, default=4)
    pl.add_argument("--conservative", action="store_true",
                    help="size for the pessimistic edge of the model's 80 %% timing bands")
    pl.add_argument("--quote", metavar="FILE", help="also write the quote of the best layout: quote.html or quote.pdf")
    pl.add_argument("--include-alternatives", action="store_true", help="list the other layouts in the quote")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plan)
