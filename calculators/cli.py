"""``llmcap``: the command-line face of the calculators. Bad input exits 2 with one clear line."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from calculators.capacity_report import capacity_document, capacity_text
from calculators.catalog import CatalogError, get_gpu, get_model, load_gpus, load_models
from calculators.errors import InvalidInputError
from calculators.hf_config import load_config_file
from calculators.specs import ModelSpec
from calculators.units import GiB
from calculators.vllm_capacity import vllm_capacity
from calculators.vllm_version import DEFAULT_VLLM_VERSION


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own usage errors: one line, exit 2
        self.exit(2, f"llmcap: error: {message}\n")


def resolve_model(name: str) -> ModelSpec:
    """A catalog id, or a path to a ``config.json`` (CLI only; the app never opens paths)."""
    if name.endswith(".json") or Path(name).is_file():
        return load_config_file(name)
    return get_model(name)


def _capacity_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="catalog id (Hugging Face repo id) or path to a config.json")
    p.add_argument("--gpu", help="GPU name, alias or driver name (e.g. H100, A100-80GB)")
    p.add_argument("--gpu-memory-gib", type=float, help="total GPU memory as the framework reports it [GiB]")
    p.add_argument("--num-gpus", type=int, help="GPUs in all (default: TP × PP)")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--enable-expert-parallel", action="store_true")
    p.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32"])
    p.add_argument("--quantization", default=None)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--block-size", type=int)
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--kv-cache-memory", type=int, help="KV-cache bytes per GPU (skips the estimate)")
    p.add_argument("--vllm-version", default=DEFAULT_VLLM_VERSION)
    p.add_argument("--engine", default="auto", choices=["auto", "v0", "v1", "V0", "V1"])
    p.add_argument("--seq-len-mean", type=float, help="mean prompt + output tokens, for max_num_seqs advice")
    p.add_argument("--seq-len-p95", type=float, help="95th percentile of prompt + output tokens")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def cmd_capacity(a: argparse.Namespace) -> int:
    model = resolve_model(a.model)
    gpu = get_gpu(a.gpu) if a.gpu else None
    if gpu is None and a.gpu_memory_gib is None:
        raise InvalidInputError("gpu", None, "--gpu NAME or --gpu-memory-gib X")
    tp, pp = a.tensor_parallel_size, a.pipeline_parallel_size
    if a.num_gpus is not None and a.num_gpus != tp * pp:
        raise InvalidInputError("num_gpus", a.num_gpus, f"tensor_parallel_size × pipeline_parallel_size ({tp * pp})")
    result = vllm_capacity(
        model, gpu=gpu, gpu_memory_bytes=None if a.gpu_memory_gib is None else a.gpu_memory_gib * GiB,
        tensor_parallel_size=tp, pipeline_parallel_size=pp, dtype=a.dtype, quantization=a.quantization,
        kv_cache_dtype=a.kv_cache_dtype, gpu_memory_utilization=a.gpu_memory_utilization,
        max_model_len=a.max_model_len, max_num_batched_tokens=a.max_num_batched_tokens, max_num_seqs=a.max_num_seqs,
        block_size=a.block_size, enforce_eager=a.enforce_eager, kv_cache_memory_bytes=a.kv_cache_memory,
        vllm_version=a.vllm_version, engine=a.engine, expert_parallel_size=tp if a.enable_expert_parallel else None)
    served = a.model if not (a.model.endswith(".json") or Path(a.model).is_file()) else model.id
    doc = capacity_document(model, result, mean_len=a.seq_len_mean, p95_len=a.seq_len_p95, served_name=served)
    print(json.dumps(doc, indent=2) if a.json else capacity_text(doc))
    return 0


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
    rows = [{"id": m.id, "attention": m.attention_type, "layers": m.num_hidden_layers,
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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="llmcap", description="LLM serving capacity planner")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser("capacity", help="KV cache and concurrency as vLLM reports them at start-up")
    _capacity_args(c)
    c.set_defaults(func=cmd_capacity)
    for name, func, text in (("gpus", cmd_gpus, "list the GPU catalog"), ("models", cmd_models, "list the models")):
        s = sub.add_parser(name, help=text)
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=func)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except InvalidInputError as exc:
        print(f"llmcap: error: {exc}", file=sys.stderr)
        return 2
    except CatalogError as exc:
        print(f"llmcap: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
