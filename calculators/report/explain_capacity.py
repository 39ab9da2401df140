"""What the app shows beside a capacity result: the per-GPU memory breakdown, the concurrency
curve over context length, and "show the math" texts with the user's numbers substituted.

Pure functions of a :func:`calculators.report.capacity.capacity_document` (and the specs); no
Streamlit here. Memory is reported in GiB for display; inputs are the document's SI bytes.
"""
from __future__ import annotations

import csv
import io
from collections import Counter
from typing import TYPE_CHECKING

from calculators.memory.kv_cache import kv_element_bytes, kv_heads_per_rank, stage_kv_layer_types
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.units import GiB
from calculators.vllm.versions import parse_vllm_version

if TYPE_CHECKING:
    import pandas as pd

BREAKDOWN_PARTS = ("weights", "activation", "non-torch", "CUDA graphs", "KV cache", "headroom")


def memory_breakdown(doc: dict) -> pd.DataFrame:
    """Per-GPU memory of every pipeline stage by part [GiB] (tidy: stage, part, gib, low_gib, high_gib, estimated).

    ``headroom = total − weights − activation − non-torch − CUDA graphs − KV`` (negative when the
    version does not deduct CUDA graphs and the GPU is oversubscribed; shown as 0 then). The
    measured-by-vLLM terms carry the range of their estimate (docs/vllm-memory.md §2.3–§2.5), the KV
    cache the range that follows from them; computed parts have ``low_gib = high_gib = gib``.
    """
    import pandas as pd
    rows = []
    total = doc["gpu_memory_bytes"]
    for st in doc["stages"]:
        parts = {"weights": (st["weights_bytes"],) * 3}
        for name, key in (("activation", "activation_peak"), ("non-torch", "non_torch"),
                          ("CUDA graphs", "cudagraph"), ("KV cache", "available_kv_cache")):
            e = st[key]
            parts[name] = tuple(max(0.0, x) for x in (e["bytes"], e["low_bytes"], e["high_bytes"]))
        used = sum(v[0] for v in parts.values())
        parts["headroom"] = (max(0.0, total - used),) * 3
        rows += [{"stage": f"stage {st['stage']}", "part": p, "gib": v / GiB, "low_gib": lo / GiB,
                  "high_gib": hi / GiB, "estimated": lo != hi}
                 for p, (v, lo, hi) in parts.items()]
    return pd.DataFrame(rows)


def memory_rows(doc: dict) -> list[dict]:
    """The binding stage's breakdown with ranges, for tables and CSV [GiB]."""
    st = doc["stages"][doc["binding_stage"]]
    rows = [("total GPU memory", doc["gpu_memory_bytes"], None, None, "GPU catalog / custom GPU"),
            ("budget = ceil(total × gpu_memory_utilization)", doc["budget_bytes"], None, None, "vLLM start-up"),
            ("weights", st["weights_bytes"], None, None, "sum of the linear layers, docs/vllm-memory.md §2.2")]
    for name, key in (("activation peak", "activation_peak"), ("non-torch", "non_torch"),
                      ("CUDA graphs", "cudagraph"), ("KV cache", "available_kv_cache")):
        e = st[key]
        rows.append((name, e["bytes"], e["low_bytes"], e["high_bytes"], e["basis"]))
    return [{"item": r[0], "gib": r[1] / GiB, "low_gib": None if r[2] is None else r[2] / GiB,
             "high_gib": None if r[3] is None else r[3] / GiB, "basis": r[4]} for r in rows]


def result_csv(doc: dict) -> str:
    """The headline numbers and the memory breakdown as CSV (units in the column names)."""
    s = doc["settings"]
    head = [("model", doc["model"]), ("gpu", doc["gpu"]), ("fits", doc["fits"]), ("message", doc["message"])]
    head += [(k, v) for k, v in s.items()]
    head += [(k, doc[k]) for k in ("gpu_memory_bytes", "budget_bytes", "weights_bytes", "available_kv_cache_bytes",
                                   "kv_cache_bytes_per_token", "num_gpu_blocks", "blocks_per_request",
                                   "kv_cache_tokens", "max_concurrency", "vllm_serve")]
    if doc.get("max_num_seqs_advice"):
        head += [(f"advice_{k}", v) for k, v in doc["max_num_seqs_advice"].items()]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["quantity", "value"])
    w.writerows([(k, csv_cell(v)) for k, v in head])
    buf.write("\n")
    rows = memory_rows(doc)
    w.writerow([csv_cell(k) for k in rows[0]])
    w.writerows([[csv_cell(v) for v in r.values()] for r in rows])
    return buf.getvalue()


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A CSV cell that a spreadsheet will not run as a formula (OWASP "CSV injection").

    Text starting with ``= + - @``, a tab or a carriage return gets a leading ``'``; numbers are
    kept as they are (``-1.5`` stays a number); ``None`` becomes an empty cell.
    """
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


# --- show the math -----------------------------------------------------------------------------

def _gib(x: float) -> str:
    return f"{x / GiB:,.2f} GiB"


def math_kv_bytes_per_token(model: ModelSpec, doc: dict) -> dict:
    """KV bytes per token per GPU, with the numbers substituted."""
    s = doc["settings"]
    st = doc["stages"][doc["binding_stage"]]
    s_bytes = kv_element_bytes(model, s["kv_cache_dtype"], s["dtype"])
    layers = st["num_layers"]
    if model.is_mla:
        formula = "(kv_lora_rank + qk_rope_head_dim) × bytes_per_element × layers_on_gpu"
        sub = (f"({model.kv_lora_rank} + {model.qk_rope_head_dim}) × {s_bytes} × {layers} = "
               f"{doc['kv_cache_bytes_per_token']:,} B")
    else:
        kinds = stage_kv_layer_types(model, s["pipeline_parallel_size"])[doc["binding_stage"]]
        per_kind = Counter(model.attention_dims(k) for k in kinds)  # (KV heads, head_dim) → layers keeping KV
        tp = s["tensor_parallel_size"]
        if len(per_kind) == 1 and len(kinds) == layers:
            (kv, d), n = next(iter(per_kind.items()))
            formula = ("2 (K and V) × max(1, num_key_value_heads // tensor_parallel_size) × head_dim × "
                       "bytes_per_element × layers_on_gpu")
            sub = (f"2 × max(1, {kv} // {tp}) × {d} × {s_bytes} × {n} = 2 × {int(kv_heads_per_rank(kv, tp))} × {d} "
                   f"× {s_bytes} × {n} = {doc['kv_cache_bytes_per_token']:,} B")
        else:
            formula = ("Σ over the layer kinds that keep a KV cache (KV-shared layers keep none): 2 (K and V) × "
                       "max(1, kv_heads // tensor_parallel_size) × head_dim × bytes_per_element × layers")
            terms = [f"2 × {int(kv_heads_per_rank(kv, tp))} × {d} × {s_bytes} × {n}" for (kv, d), n in per_kind.items()]
            sub = f"{' + '.join(terms)} = {doc['kv_cache_bytes_per_token']:,} B"
    return {"formula": formula, "substituted": sub, "sources": [
        f"num_key_value_heads, head_dim, num_hidden_layers: config of {model.id} ({model.source or 'user config'})",
        f"bytes_per_element = {s_bytes}: kv_cache_dtype={s['kv_cache_dtype']}, dtype={s['dtype']}",
        "rule: vLLM KVCacheSpec.page_size_bytes (docs/vllm-memory.md §3)"]}


def math_available_kv(doc: dict, gpu: GPUSpec | None = None) -> dict:
    """Available KV cache memory per GPU, with the numbers substituted."""
    s = doc["settings"]
    st = doc["stages"][doc["binding_stage"]]
    if s["kv_cache_memory_bytes"] is not None:
        return {"formula": "available = --kv-cache-memory", "substituted": f"{_gib(s['kv_cache_memory_bytes'])}",
                "sources": ["given by the user (or read from a pasted vLLM log)"]}
    cg = st["cudagraph"]["bytes"] if st["cudagraph_subtracted"] else 0.0
    formula = ("available = ceil(total × gpu_memory_utilization) − weights − activation_peak − non_torch"
               + (" − cuda_graphs" if st["cudagraph_subtracted"] else ""))
    sub = (f"ceil({_gib(doc['gpu_memory_bytes'])} × {s['gpu_memory_utilization']:g}) − {_gib(st['weights_bytes'])} − "
           f"{_gib(st['activation_peak']['bytes'])} − {_gib(st['non_torch']['bytes'])}"
           + (f" − {_gib(cg)}" if cg else "") + f" = {_gib(st['available_kv_cache']['bytes'])}")
    src = gpu.memory_note if gpu is not None else "custom GPU entered by the user"
    return {"formula": formula, "substituted": sub, "sources": [
        f"total GPU memory ({doc['gpu']}): {src}",
        "weights: sum of the model's linear layers at the resolved quantization (docs/vllm-memory.md §2.2)",
        f"activation peak (estimate): {st['activation_peak']['basis']} (docs/vllm-memory.md §2.3, fitted to "
        "public start-up logs)",
        f"non-torch (estimate): {st['non_torch']['basis']}",
        f"CUDA graphs (estimate): {st['cudagraph']['basis']}; "
        + ("deducted by this version" if st["cudagraph_subtracted"] else "not deducted by this version")]}


def math_blocks_and_tokens(doc: dict) -> dict:
    """GPU blocks and the ``GPU KV cache size`` tokens, with the numbers substituted."""
    s = doc["settings"]
    st = doc["stages"][doc["binding_stage"]]
    v = parse_vllm_version(s["vllm_version"], s["engine"])
    ng = len(st["kv_groups"])
    avail = st["available_kv_cache"]["bytes"]
    blocks = (f"num_gpu_blocks = floor(available / bytes_per_block) = floor({avail:,.0f} B / "
              f"{st['bytes_per_block']:,} B) = {doc['num_gpu_blocks']:,}")
    if v.engine == "V0" or not v.at_least(0, 9, 1):
        rule, sub = "tokens = num_gpu_blocks × block_size", f"{doc['num_gpu_blocks']:,} × {s['block_size']}"
    elif not v.at_least(0, 21):
        rule = "tokens = floor(num_gpu_blocks / kv_groups) × block_size"
        sub = f"floor({doc['num_gpu_blocks']:,} / {ng}) × {s['block_size']}"
    else:
        rule = "tokens = int(max_concurrency × max_model_len)"
        sub = f"int({doc['max_concurrency']:.4f} × {s['max_model_len']:,})"
    return {"formula": f"{blocks.split(' = ')[0]} = floor(available / (block_size × KV bytes per token)); {rule}",
            "substituted": f"{blocks}; tokens = {sub} = {doc['kv_cache_tokens']:,}",
            "sources": [f"block_size = {s['block_size']} (vLLM default unless set)",
                        f"rule of vLLM {v.text} ({v.engine}): docs/vllm-memory.md §5"]}


def math_concurrency(doc: dict) -> dict:
    """``Maximum concurrency`` at max_model_len, with the numbers substituted."""
    s = doc["settings"]
    v = parse_vllm_version(s["vllm_version"], s["engine"])
    if v.engine == "V0" or not v.at_least(0, 9, 1):
        formula = "max_concurrency = kv_cache_tokens / max_model_len"
        sub = f"{doc['kv_cache_tokens']:,} / {s['max_model_len']:,} = {doc['max_concurrency']:.2f}x"
    else:
        formula = "max_concurrency = num_gpu_blocks / blocks_per_request(max_model_len)"
        sub = f"{doc['num_gpu_blocks']:,} / {doc['blocks_per_request']:,} = {doc['max_concurrency']:.2f}x"
    return {"formula": formula, "substituted": sub,
            "sources": [f"max_model_len = {s['max_model_len']:,}", "docs/vllm-memory.md §5"]}


def math_advice(doc: dict) -> dict | None:
    """The suggested ``max_num_seqs`` and the concurrency at the typical length."""
    a = doc.get("max_num_seqs_advice")
    if not a:
        return None
    return {"formula": "concurrency_at_mean = floor(num_gpu_blocks / mean blocks per sequence); "
                       "recommended = that, rounded down to a multiple of 8",
            "substituted": f"floor({doc['num_gpu_blocks']:,} / {a['blocks_per_sequence_mean']:.2f}) = "
                           f"{a['concurrency_at_mean']:,} → {a['recommended_max_num_seqs']:,}",
            "sources": [f"mean length {a['mean_len']:g} tokens" + (f", p95 {a['p95_len']:g}" if a["p95_len"] else "")
                        + " (your workload; log-normal fitted to mean and p95)", "docs/vllm-memory.md §6"]}


def math_budget(doc: dict) -> dict:
    s = doc["settings"]
    return {"formula": "budget = ceil(total_gpu_memory × gpu_memory_utilization)",
            "substituted": f"ceil({doc['gpu_memory_bytes']:,.0f} B × {s['gpu_memory_utilization']:g}) = "
                           f"{doc['budget_bytes']:,.0f} B = {_gib(doc['budget_bytes'])}",
            "sources": ["vLLM gpu_worker.determine_available_memory (docs/vllm-memory.md §2.1)"]}
