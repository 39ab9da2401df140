"""Flags and helpers every ``llmcap`` command shares: the parser, model and GPU flags, file reading."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from calculators.errors import InvalidInputError
from calculators.perf.calibration import Calibration, calibrated
from calculators.perf.roofline import (
    COMPUTE_EFFICIENCY,
    MAX_COST_S,
    MEMORY_EFFICIENCY,
    STEP_OVERHEAD_S,
    Efficiencies,
    Roofline,
)
from calculators.profiles import MAX_PROFILE_BYTES
from calculators.specs.catalog import get_gpu, get_model
from calculators.specs.hf_config import load_config_file
from calculators.specs.schema import ModelSpec
from calculators.validation import positive_int
from calculators.vllm.versions import serve_defaults


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own usage errors: one line, exit 2
        self.exit(2, f"llmcap: error: {message}\n")


def resolve_model(name: str) -> ModelSpec:
    """A catalog id, a path to a ``config.json`` (or to a model folder holding one), or a Hugging Face
    repo id (``org/name``) that is neither, whose ``config.json`` is fetched from the Hub (CLI only;
    the app never opens paths)."""
    if name.endswith(".json") or Path(name).is_file():
        return load_config_file(name)
    if (Path(name) / "config.json").is_file():
        return load_config_file(Path(name) / "config.json", id=name)
    try:
        return get_model(name)
    except InvalidInputError:
        from calculators.specs.hf_hub import is_repo_id, model_from_hub  # huggingface_hub only when needed
        if not is_repo_id(name):
            raise
        return model_from_hub(name)


def add_model_on_gpu(p: argparse.ArgumentParser) -> None:
    """The flags that pick a roofline: model, GPU, parallelism and formats (vLLM's names)."""
    p.add_argument("--model", required=True)
    p.add_argument("--gpu", required=True)
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16"])
    p.add_argument("--quantization", default=None)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--max-num-batched-tokens", type=int,
                   help="tokens per engine step (default: what vllm serve picks for this GPU)")
    p.add_argument("--enable-dp-attention", action="store_true",
                   help="MoE models: attention data-parallel across the tensor-parallel GPUs, experts split across "
                        "them (SGLang --enable-dp-attention, vLLM --data-parallel-size with --enable-expert-parallel)")


def add_perf(p: argparse.ArgumentParser) -> None:
    add_model_on_gpu(p)
    p.add_argument("--input-len", type=int, required=True)
    p.add_argument("--output-len", type=int, required=True)
    p.add_argument("--compute-efficiency", type=float, default=COMPUTE_EFFICIENCY)
    p.add_argument("--memory-efficiency", type=float, default=MEMORY_EFFICIENCY)
    p.add_argument("--step-overhead-ms", type=float, default=STEP_OVERHEAD_S * 1e3)
    p.add_argument("--calibration", help="a calibration file saved by `llmcap profile calibrate --output`")
    p.add_argument("--json", action="store_true")


def read_files(paths: list[str]) -> list[tuple[str, bytes]]:
    out = []
    for name in paths:
        path = Path(name)
        try:
            if path.stat().st_size > MAX_PROFILE_BYTES:
                raise InvalidInputError(name, f"{path.stat().st_size} bytes", f"at most {MAX_PROFILE_BYTES} bytes")
            out.append((path.name, path.read_bytes()))
        except OSError as exc:
            raise InvalidInputError("file", name, f"a readable file ({exc.strerror})") from None
    return out


def load_calibration(path: str | None) -> Calibration | None:
    if path is None:
        return None
    return Calibration.from_json(read_files([path])[0][1])


def plain_roofline(a: argparse.Namespace, eff: Efficiencies) -> Roofline:
    """The roofline the flags describe; the step's token budget is vLLM's default for the GPU unless given."""
    model, gpu = resolve_model(a.model), get_gpu(a.gpu)
    budget = serve_defaults(model, gpu, max_num_batched_tokens=a.max_num_batched_tokens)[0]
    return Roofline(model, gpu, tensor_parallel_size=a.tensor_parallel_size,
                    pipeline_parallel_size=a.pipeline_parallel_size, quantization=a.quantization, dtype=a.dtype,
                    kv_cache_dtype=a.kv_cache_dtype, efficiencies=eff,
                    max_num_batched_tokens=int(positive_int("max_num_batched_tokens", budget, scalar=True)),
                    scheduler_recv_interval=getattr(a, "scheduler_recv_interval", 1),
                    enable_dp_attention=a.enable_dp_attention)


def roofline(a: argparse.Namespace) -> Roofline:
    for name in ("input_len", "output_len"):
        positive_int(name, getattr(a, name))
    if not 0 <= a.step_overhead_ms <= MAX_COST_S * 1e3:  # NaN fails too; named as the user typed it
        raise InvalidInputError("step_overhead_ms", a.step_overhead_ms, f"0 to {MAX_COST_S * 1e3:,.0f} ms")
    eff = Efficiencies(compute=a.compute_efficiency, memory=a.memory_efficiency,
                       step_overhead_s=a.step_overhead_ms / 1e3)
    cal = load_calibration(getattr(a, "calibration", None))
    r = plain_roofline(a, eff)
    return calibrated(r, cal) if cal else r
