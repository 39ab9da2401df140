"""``llmcap gpus`` and ``llmcap models``: the spec catalog."""
from __future__ import annotations

import argparse
import json
from typing import Any

from calculators.specs.catalog import load_gpus, load_models


def cmd_gpus(a: argparse.Namespace) -> int:
    rows = [{"id": g.id, "name": g.name, "memory_gib": round(g.memory_gib, 2),
             "memory_bandwidth_gb_per_s": g.memory_bandwidth_bytes_per_s / 1e9,
             "bf16_tflop_per_s": g.peak_flop_per_s.get("bf16", 0) / 1e12, "aliases": list(g.aliases)}
            for g in load_gpus().values()]
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['id']:18s} {r['memory_gib']:8.2f} GiB {r['memory_bandwidth_gb_per_s']:8.0f} GB/s "
                  f"{r['bf16_tflop_per_s']:8.1f} TFLOP/s bf16   {r['name']}")
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
