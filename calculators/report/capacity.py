"""The one JSON document of a capacity result, shared by ``llmcap capacity --json`` and the app."""
from __future__ import annotations

from dataclasses import asdict

from calculators.specs.schema import ModelSpec
from calculators.units import GiB
from calculators.validation import positive_int
from calculators.vllm.advice import max_num_seqs_advice, vllm_serve_command
from calculators.vllm.capacity import CapacityResult
from calculators.vllm.concurrency import pool_blocks

FORMAT_VERSION = 1


def _block_tokens(stage: dict, settings: dict) -> str:
    """Tokens a block holds: ``block_size``, or per layer kind where vLLM gave the kinds with smaller pages
    bigger blocks (Gemma 4)."""
    sizes = {g["layer_type"].replace("_attention", ""): g["block_size"] for g in stage["kv_groups"]}
    if len(set(sizes.values())) <= 1:
        return f"{settings['block_size']} tokens"
    return ", ".join(f"{n} tokens of {kind} attention" for kind, n in sizes.items())


def _estimate(e) -> dict:
    return {"bytes": e.value, "low_bytes": e.low, "high_bytes": e.high, "basis": e.basis}


def capacity_document(model: ModelSpec, result: CapacityResult, *, mean_len: float | None = None,
                      p95_len: float | None = None, served_name: str | None = None,
                      data_parallel_size: int = 1) -> dict:
    """Everything a user needs to check the result: headline numbers (SI units), the per-stage
    breakdown, the resolved flags, vLLM's printed lines and the ``max_num_seqs`` advice.

    ``served_name`` is the name the user gave (an Instruct variant of a catalog entry, say), used in
    the ``vllm serve`` line. With ``data_parallel_size`` above 1 (vLLM's ``--data-parallel-size``) the result is one
    rank's: vLLM starts that many engines, each printing these lines for its own KV cache and ``max_num_seqs``."""
    dp = int(positive_int("data_parallel_size", data_parallel_size, scalar=True))
    notes = list(result.notes)
    st = result.binding
    s = result.settings
    advice = (max_num_seqs_advice(model, result, mean_len=mean_len, p95_len=p95_len)
              if mean_len is not None and result.fits else None)
    doc = {
        "format_version": FORMAT_VERSION,
        "model": model.id,
        "defaults_assumed": list(model.defaults_assumed),
        "gpu": result.gpu,
        "gpu_memory_bytes": result.gpu_memory_bytes,
        "settings": asdict(s),
        "fits": result.fits,
        "message": result.message,
        "kv_cache_bytes_per_token": max(x.kv_bytes_per_token for x in result.stages),  # as the engine pages it
        "weights_bytes": max(x.weights_bytes for x in result.stages),
        "budget_bytes": result.budget_bytes,
        "available_kv_cache_bytes": st.available.value,
        "available_kv_cache_bytes_low": st.available.low,
        "available_kv_cache_bytes_high": st.available.high,
        "num_gpu_blocks": pool_blocks(result),
        "blocks_per_request": result.blocks_per_request,
        "kv_cache_tokens": result.kv_cache_tokens,
        "kv_cache_tokens_low": result.kv_cache_tokens_low,
        "kv_cache_tokens_high": result.kv_cache_tokens_high,
        "max_concurrency": result.max_concurrency,
        "max_concurrency_low": result.max_concurrency_low,
        "max_concurrency_high": result.max_concurrency_high,
        "binding_stage": result.binding_stage,
        "stages": [{
            "stage": x.stage, "num_layers": x.num_layers, "weights_bytes": x.weights_bytes,
            "activation_peak": _estimate(x.activation), "non_torch": _estimate(x.non_torch),
            "cudagraph": _estimate(x.cudagraph), "cudagraph_subtracted": x.cudagraph_subtracted,
            "available_kv_cache": _estimate(x.available), "kv_bytes_per_token": x.kv_bytes_per_token,
            "kv_groups": [asdict(g) for g in x.groups], "bytes_per_block": x.bytes_per_block,
            "num_blocks": x.num_blocks,
        } for x in result.stages],
        "vllm_lines": list(result.vllm_lines),
        "notes": notes,
        "max_num_seqs_advice": advice,
        "vllm_serve": vllm_serve_command(served_name or model.id, result,
                                         None if advice is None else advice["recommended_max_num_seqs"],
                                         data_parallel_size=dp),
        "data_parallel_size": dp,
    }
    if dp > 1:
        notes.append(f"per data-parallel rank: vLLM starts {dp} engines of tensor_parallel_size "
                     f"{s.tensor_parallel_size}, each with this KV cache, these lines and its own max_num_seqs "
                     f"({dp * s.tensor_parallel_size * s.pipeline_parallel_size} GPUs in all)")
    if result.estimated_max_model_len is not None:
        doc["estimated_max_model_len"] = result.estimated_max_model_len
    return doc


def capacity_text(doc: dict) -> str:
    """Human-readable report: vLLM's lines first, then the arithmetic behind them."""
    g = GiB
    st = doc["stages"][doc["binding_stage"]]
    s = doc["settings"]
    lines = [f"{doc['model']} on {doc['gpu']}  (vLLM {s['vllm_version']}, {s['engine']} engine)", "",
             "What vLLM prints at start-up (predicted):"]
    lines += [f"  {x}" for x in doc["vllm_lines"]]
    cg = st["cudagraph"]
    lines += ["", f"Per GPU (pipeline stage {st['stage']}, {st['num_layers']} layers):",
              f"  budget        {doc['budget_bytes'] / g:9.2f} GiB  = ceil({doc['gpu_memory_bytes'] / g:.2f} GiB × "
              f"gpu_memory_utilization {s['gpu_memory_utilization']:g})",
              f"  weights       {st['weights_bytes'] / g:9.2f} GiB  ({s['quantization']}, dtype {s['dtype']}, "
              f"TP {s['tensor_parallel_size']}, PP {s['pipeline_parallel_size']})",
              f"  activation    {st['activation_peak']['bytes'] / g:9.2f} GiB  (estimate, "
              f"{st['activation_peak']['low_bytes'] / g:.2f}–{st['activation_peak']['high_bytes'] / g:.2f}; "
              f"{st['activation_peak']['basis']})",
              f"  non-torch     {st['non_torch']['bytes'] / g:9.2f} GiB  (estimate, "
              f"{st['non_torch']['low_bytes'] / g:.2f}–{st['non_torch']['high_bytes'] / g:.2f})",
              f"  CUDA graphs   {cg['bytes'] / g:9.2f} GiB  ("
              + ("deducted" if st["cudagraph_subtracted"] else "not deducted by this version") + ")",
              f"  KV cache      {st['available_kv_cache']['bytes'] / g:9.2f} GiB  "
              f"({st['available_kv_cache']['basis']})",
              "",
              f"KV cache: {doc['kv_cache_bytes_per_token']:,} B/token per GPU; block of {_block_tokens(st, s)} = "
              f"{st['bytes_per_block']:,} B; num_gpu_blocks = floor(KV bytes / block bytes) = "
              f"{doc['num_gpu_blocks']:,}",
              f"Result: {doc['message']}"]
    if doc.get("max_num_seqs_advice"):
        a = doc["max_num_seqs_advice"]
        lines.append(f"max_num_seqs: {a['recommended_max_num_seqs']} recommended (pool holds "
                     f"{a['concurrency_at_mean']} sequences of mean length, {a['concurrency_at_p95']} at p95)")
    lines += ["", f"  {doc['vllm_serve']}"] + [f"note: {n}" for n in doc["notes"]]
    return "\n".join(lines)
