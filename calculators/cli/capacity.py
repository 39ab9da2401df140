"""``llmcap capacity``: KV cache and concurrency as vLLM reports them at start-up."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from calculators.cli.flags import load_calibration, resolve_model
from calculators.errors import InvalidInputError
from calculators.report.capacity import capacity_document, capacity_text
from calculators.specs.catalog import get_gpu
from calculators.units import GiB
from calculators.validation import positive_int
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.overheads import FLASHINFER_SAMPLER_CHOICES
from calculators.vllm.versions import DEFAULT_VLLM_VERSION


def _add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="catalog id, any Hugging Face repo id (its config.json is fetched and cached), or a path to "
                        "a config.json")
    p.add_argument("--gpu", help="GPU name, alias or driver name (e.g. H100, A100-80GB)")
    p.add_argument("--gpu-memory-gib", type=float, help="total GPU memory as the framework reports it [GiB]")
    p.add_argument("--num-gpus", type=int, help="GPUs in all (default: TP × PP)")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--data-parallel-size", "-dp", type=int, default=1,
                   help="data-parallel ranks, each an engine of TP × PP GPUs with its own KV cache (the numbers are "
                        "one rank's, as each prints them)")
    p.add_argument("--enable-expert-parallel", action="store_true",
                   help="MoE: whole experts spread over all TP × DP GPUs instead of each expert split by TP")
    p.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32"])
    p.add_argument("--quantization", default=None)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--block-size", type=int)
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--language-model-only", action="store_true",
                   help="a multimodal model without its vision and audio towers (vLLM's flag of that name)")
    p.add_argument("--flashinfer-sampler", default="auto", choices=FLASHINFER_SAMPLER_CHOICES,
                   help="whether the profile run samples with FlashInfer: 'on' if the start-up log says 'Using "
                        "FlashInfer for top-p & top-k sampling', 'off' if it falls back to the PyTorch-native "
                        "implementation; auto = the release's default (0.8-0.11.0: FlashInfer when installed, as "
                        "in the vllm/vllm-openai images)")
    p.add_argument("--kv-cache-memory", type=int, help="KV-cache bytes per GPU (skips the estimate)")
    p.add_argument("--vllm-version", default=DEFAULT_VLLM_VERSION)
    p.add_argument("--engine", default="auto", choices=["auto", "v0", "v1", "V0", "V1"])
    p.add_argument("--seq-len-mean", type=float, help="mean prompt + output tokens, for max_num_seqs advice")
    p.add_argument("--seq-len-p95", type=float, help="95th percentile of prompt + output tokens")
    p.add_argument("--calibration", help="a calibration file; recorded in the result (memory is not timed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def cmd_capacity(a: argparse.Namespace) -> int:
    model = resolve_model(a.model)
    gpu = get_gpu(a.gpu) if a.gpu else None
    if gpu is None and a.gpu_memory_gib is None:
        raise InvalidInputError("gpu", None, "--gpu NAME or --gpu-memory-gib X")
    tp, pp = a.tensor_parallel_size, a.pipeline_parallel_size
    dp = int(positive_int("data_parallel_size", a.data_parallel_size, scalar=True))
    if a.num_gpus is not None and a.num_gpus != tp * pp * dp:
        raise InvalidInputError("num_gpus", a.num_gpus,
                                f"tensor_parallel_size × pipeline_parallel_size × data_parallel_size ({tp * pp * dp})")
    result = vllm_capacity(
        model, gpu=gpu, gpu_memory_bytes=None if a.gpu_memory_gib is None else a.gpu_memory_gib * GiB,
        tensor_parallel_size=tp, pipeline_parallel_size=pp, dtype=a.dtype, quantization=a.quantization,
        kv_cache_dtype=a.kv_cache_dtype, gpu_memory_utilization=a.gpu_memory_utilization,
        max_model_len=a.max_model_len, max_num_batched_tokens=a.max_num_batched_tokens, max_num_seqs=a.max_num_seqs,
        block_size=a.block_size, enforce_eager=a.enforce_eager, kv_cache_memory_bytes=a.kv_cache_memory,
        vllm_version=a.vllm_version, engine=a.engine,
        expert_parallel_size=tp * dp if a.enable_expert_parallel else None,
        flashinfer_sampler=a.flashinfer_sampler, language_model_only=a.language_model_only)
    cal = load_calibration(a.calibration)
    served = a.model if not (a.model.endswith(".json") or Path(a.model).is_file()) else model.id
    doc = capacity_document(model, result, mean_len=a.seq_len_mean, p95_len=a.seq_len_p95, served_name=served,
                            data_parallel_size=dp)
    if cal:
        doc["calibration"] = json.loads(cal.to_json())
    print(json.dumps(doc, indent=2) if a.json else capacity_text(doc))
    return 0


def register(sub) -> None:
    """Add ``capacity`` to the main parser's sub-parsers."""
    c = sub.add_parser("capacity", help="KV cache and concurrency as vLLM reports them at start-up")
    _add_args(c)
    c.set_defaults(func=cmd_capacity)
