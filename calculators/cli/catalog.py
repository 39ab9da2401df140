"""``llmcap gpus`` and ``llmcap models``: the spec catalog."""
from __future__ import annotations

import argparse
import json
from typing import Any

from calculators.planning.fleet import gpu_price
from calculators.specs.catalog import load_gpus, load_models
from calculators.specs.schema import GPUSpec


def _gpu_row(g: GPUSpec) -> dict[str, Any]:
    """One GPU as ``llmcap gpus`` lists it: dense peaks per dtype (``bf16_tflop_per_s`` None where the GPU has no
    BF16, as Turing has not) and the price the planner uses (:func:`~calculators.planning.fleet.gpu_price`)."""
    price, basis = gpu_price(g)
    peaks = {k: v / 1e12 for k, v in g.peak_flop_per_s.items()}
    return {"id": g.id, "name": g.name, "memory_gib": round(g.memory_gib, 2),
            "memory_bandwidth_gb_per_s": g.memory_bandwidth_bytes_per_s / 1e9,
            "bf16_tflop_per_s": peaks.get("bf16"), "dense_tflop_per_s": peaks,
            "usd_per_gpu_hour": price, "price_basis": basis, "aliases": list(g.aliases)}


def _peak_text(r: dict[str, Any]) -> str:
    """"989.4 TFLOP/s bf16", or the 16-bit peak the GPU has ("65.0 TFLOP/s fp16")."""
    dtype = "bf16" if r["bf16_tflop_per_s"] is not None else "fp16"
    return f"{r['dense_tflop_per_s'].get(dtype, 0.0):8.1f} TFLOP/s {dtype}"


def cmd_gpus(a: argparse.Namespace) -> int:
    rows = [_gpu_row(g) for g in load_gpus().values()]
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            price = "—" if r["usd_per_gpu_hour"] is None else f"${r['usd_per_gpu_hour']:.2f}/h"
            print(f"{r['id']:18s} {r['memory_gib']:8.2f} GiB {r['memory_bandwidth_gb_per_s']:8.0f} GB/s "
                  f"{_peak_text(r)} {price:>9s}   {r['name']}")
        print("price: the median of the catalog's on-demand list prices per GPU-hour (--json: which, and how many)")
    return 0


def cmd_models(a: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = [{"id": m.id, "attention": m.attention_type, "layers": m.num_hidden_layers,
             "params_total": m.params_total_card, "params_active": m.params_active_card,
             "moe": m.is_moe, "quantization": m.quantization, "aliases": list(m.aliases)}
            for m in load_models().values()]
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['id']:48s} {r['attention']:4s} {r['layers']:4d} layers "
                  f"{(r['params_total'] or 0) / 1e9:7.1f}B{' MoE' if r['moe'] else ''}"
                  f"{' ' + r['quantization'] if r['quantization'] else ''}")
    return 0


def register(sub) -> None:
    """Add ``gpus`` and ``models`` to the main parser's sub-parsers."""
    for name, func, text in (("gpus", cmd_gpus, "list the GPU catalog"), ("models", cmd_models, "list the models")):
        s = sub.add_parser(name, help=text)
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=func)
