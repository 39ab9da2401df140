"""The capacity scenario: every input of ``llmcap capacity``, with vLLM's names, and its URL form.

The URL form (format version ``v=1``) uses short, stable keys; :func:`scenario_from_query` never
raises on a bad URL: it keeps the defaults for what it cannot read and returns one message per
unknown or invalid parameter. Custom GPUs and models travel as compact parameters (``cgpu``,
``cmodel``) so that a permalink restores them too.
"""
from __future__ import annotations

import base64
import json
import math
import zlib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from calculators.errors import InvalidInputError
from calculators.memory.kv_cache import KV_CACHE_DTYPES
from calculators.memory.weights import QUANTIZATIONS
from calculators.specs.schema import GPUSpec
from calculators.units import GB, TFLOP, GiB
from calculators.vllm.overheads import FLASHINFER_SAMPLER_CHOICES
from calculators.vllm.versions import DEFAULT_VLLM_VERSION, parse_vllm_version

FORMAT_VERSION = "1"
DTYPE_CHOICES = ("auto", "bfloat16", "float16", "float32")
QUANT_CHOICES = ("auto", *QUANTIZATIONS)
KV_DTYPE_CHOICES = tuple(KV_CACHE_DTYPES)
#: vLLM releases offered in the version selector (any 0.5.5–0.x release is accepted).
VLLM_RELEASES = ("0.6.3", "0.6.4", "0.6.6", "0.7.3", "0.8.5", "0.9.0", "0.9.2", "0.10.0", "0.10.1", "0.10.2",
                 "0.11.0", "0.12.0", "0.14.0", "0.16.0", "0.18.0", "0.20.0", "0.21.0", "0.24.0", "0.26.0",
                 "0.28.0", "0.30.0", "0.33.0")
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"
DEFAULT_GPU = "H100-SXM"
MAX_COMPACT_CHARS = 8000


class Scenario(BaseModel):
    """One capacity question. ``None`` (``0`` in the URL) means "what vLLM would choose"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = DEFAULT_MODEL
    gpu: str = DEFAULT_GPU
    tensor_parallel_size: int = Field(default=1, ge=1, le=1024)
    pipeline_parallel_size: int = Field(default=1, ge=1, le=1024)
    data_parallel_size: int = Field(default=1, ge=1, le=1024)
    enable_expert_parallel: bool = False
    dtype: str = "auto"
    quantization: str = "auto"
    kv_cache_dtype: str = "auto"
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_model_len: int | None = Field(default=None, ge=1)
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    block_size: int | None = Field(default=None, ge=1, le=4096)
    enforce_eager: bool = False
    language_model_only: bool = False
    flashinfer_sampler: str = "auto"
    vllm_version: str = DEFAULT_VLLM_VERSION
    kv_cache_memory_gib: float | None = Field(default=None, gt=0)
    mean_len: float | None = Field(default=None, gt=0)
    p95_len: float | None = Field(default=None, gt=0)
    input_len: float = Field(default=2000, gt=0, le=10_000_000)
    output_len: float = Field(default=300, gt=0, le=10_000_000)
    request_rate_per_s: float = Field(default=10.0, gt=0, le=1e7)
    ttft_p99_ms: float | None = Field(default=1000.0, gt=0)
    tpot_p99_ms: float | None = Field(default=50.0, gt=0)
    calibration: str | None = None

    def capacity_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`calculators.vllm.capacity.vllm_capacity` (no model/GPU): one data-parallel
        rank's, whose experts spread over every rank's GPUs with ``enable_expert_parallel`` (vLLM: EP = TP × DP)."""
        kv = self.kv_cache_memory_gib
        return {"tensor_parallel_size": self.tensor_parallel_size,
                "pipeline_parallel_size": self.pipeline_parallel_size, "dtype": self.dtype,
                "quantization": None if self.quantization == "auto" else self.quantization,
                "kv_cache_dtype": self.kv_cache_dtype, "gpu_memory_utilization": self.gpu_memory_utilization,
                "max_model_len": self.max_model_len, "max_num_batched_tokens": self.max_num_batched_tokens,
                "max_num_seqs": self.max_num_seqs, "block_size": self.block_size,
                "enforce_eager": self.enforce_eager, "flashinfer_sampler": self.flashinfer_sampler,
                "language_model_only": self.language_model_only,
                "expert_parallel_size": (self.tensor_parallel_size * self.data_parallel_size
                                         if self.enable_expert_parallel else None),
                "vllm_version": self.vllm_version,
                "kv_cache_memory_bytes": None if kv is None else int(kv * GiB)}

    def attention_ranks(self, model) -> int:
        """Data-parallel ranks the performance model prices as data-parallel attention: ``data_parallel_size``
        where each rank is one GPU holding attention whole with the experts spread over all of them (vLLM's
        ``--data-parallel-size D --enable-expert-parallel`` at tensor_parallel_size and pipeline_parallel_size 1,
        a mixture-of-experts ``model``); 1 for every other layout (a single engine, or data-parallel ranks the
        timed figures do not model)."""
        dp_attention = (self.data_parallel_size > 1 and self.enable_expert_parallel and model.is_moe
                        and self.tensor_parallel_size == 1 and self.pipeline_parallel_size == 1)
        return self.data_parallel_size if dp_attention else 1

    def timed(self, model) -> bool:
        """Whether the performance model prices this layout: one engine, or data-parallel ranks it takes as
        data-parallel attention (:meth:`attention_ranks`); other data-parallel ranks are engines of their own."""
        return self.data_parallel_size == 1 or self.attention_ranks(model) > 1

    @property
    def length_mix_mean(self) -> float:
        """Mean tokens per sequence (prompt + output) of the length mix the ``max_num_seqs`` advice uses:
        ``mean_len`` where given, else the workload's ``input_len + output_len`` — one mix for every figure."""
        return self.mean_len if self.mean_len is not None else self.input_len + self.output_len

    def workload(self):
        """The sidebar's traffic and targets as a :class:`calculators.planning.fleet.Workload` (ms → s)."""
        from calculators.planning.fleet import Workload
        return Workload(request_rate_per_s=self.request_rate_per_s, input_len=self.input_len,
                        output_len=self.output_len,
                        ttft_p99_s=None if self.ttft_p99_ms is None else self.ttft_p99_ms / 1e3,
                        tpot_p99_s=None if self.tpot_p99_ms is None else self.tpot_p99_ms / 1e3)

    def cli_args(self) -> list[str]:
        """The same question as ``llmcap capacity`` arguments (built-in model and GPU only)."""
        kw = self.capacity_kwargs()
        args = ["capacity", "--model", self.model, "--gpu", self.gpu]
        kw["data_parallel_size"] = self.data_parallel_size if self.data_parallel_size > 1 else None
        for flag, key in (("--tensor-parallel-size", "tensor_parallel_size"),
                          ("--pipeline-parallel-size", "pipeline_parallel_size"),
                          ("--data-parallel-size", "data_parallel_size"), ("--dtype", "dtype"),
                          ("--quantization", "quantization"), ("--kv-cache-dtype", "kv_cache_dtype"),
                          ("--gpu-memory-utilization", "gpu_memory_utilization"), ("--max-model-len", "max_model_len"),
                          ("--max-num-batched-tokens", "max_num_batched_tokens"), ("--max-num-seqs", "max_num_seqs"),
                          ("--block-size", "block_size"), ("--vllm-version", "vllm_version"),
                          ("--flashinfer-sampler", "flashinfer_sampler"),
                          ("--kv-cache-memory", "kv_cache_memory_bytes")):
            if kw[key] is not None:
                args += [flag, str(kw[key])]
        if self.enable_expert_parallel:
            args.append("--enable-expert-parallel")
        if self.enforce_eager:
            args.append("--enforce-eager")
        if self.language_model_only:
            args.append("--language-model-only")
        args += ["--seq-len-mean", repr(float(self.length_mix_mean))]
        if self.p95_len is not None:
            args += ["--seq-len-p95", repr(float(self.p95_len))]
        return args


#: URL key → (Scenario field, kind). Kinds: str, opt_str (empty = unset), int, opt_int (0 = auto), float,
#: opt_float (0 = unset), bool.
QUERY_KEYS: dict[str, tuple[str, str]] = {
    "model": ("model", "str"), "gpu": ("gpu", "str"), "tp": ("tensor_parallel_size", "int"),
    "pp": ("pipeline_parallel_size", "int"), "dp": ("data_parallel_size", "int"),
    "ep": ("enable_expert_parallel", "bool"), "dtype": ("dtype", "str"), "quant": ("quantization", "str"),
    "kv_dtype": ("kv_cache_dtype", "str"), "util": ("gpu_memory_utilization", "float"),
    "max_len": ("max_model_len", "opt_int"), "mnbt": ("max_num_batched_tokens", "opt_int"),
    "max_seqs": ("max_num_seqs", "opt_int"), "block": ("block_size", "opt_int"),
    "eager": ("enforce_eager", "bool"), "lm_only": ("language_model_only", "bool"),
    "sampler": ("flashinfer_sampler", "str"), "vllm": ("vllm_version", "str"),
    "kv_mem": ("kv_cache_memory_gib", "opt_float"), "mean_len": ("mean_len", "opt_float"),
    "p95_len": ("p95_len", "opt_float"),
    "in": ("input_len", "float"), "out": ("output_len", "float"), "rate": ("request_rate_per_s", "float"),
    "ttft_ms": ("ttft_p99_ms", "opt_float"), "tpot_ms": ("tpot_p99_ms", "opt_float"),
    "cal": ("calibration", "opt_str"),
}
FIELD_TO_KEY = {f: k for k, (f, _) in QUERY_KEYS.items()}
EXTRA_KEYS = ("v", "cgpu", "cmodel")
_CHOICES = {"dtype": DTYPE_CHOICES, "quantization": QUANT_CHOICES, "kv_cache_dtype": KV_DTYPE_CHOICES,
            "flashinfer_sampler": FLASHINFER_SAMPLER_CHOICES}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


def _read_value(kind: str, raw: str) -> Any:
    text = raw.strip()
    if kind == "str":
        if not text:
            raise ValueError("an empty value")
        return text
    if kind == "opt_str":
        return text or None
    if kind == "bool":
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ValueError("true or false")
    number = float(text)
    if not math.isfinite(number):
        raise ValueError("a finite number")
    if kind in ("int", "opt_int"):
        if number != int(number):
            raise ValueError("a whole number")
        number = int(number)
    if kind.startswith("opt") and number == 0:
        return None
    return number


def _first(value: Any) -> str:
    if isinstance(value, list | tuple):
        return str(value[-1]) if value else ""
    return str(value)


def scenario_from_query(params: Mapping[str, Any]) -> tuple[Scenario, list[str]]:
    """Read a scenario from URL parameters; return it and a message for each parameter ignored."""
    messages: list[str] = []
    values: dict[str, Any] = {}
    version = _first(params.get("v", FORMAT_VERSION))
    if version != FORMAT_VERSION:
        messages.append(f"v={version!r}: this app reads format version {FORMAT_VERSION}; read as version 1")
    for key, raw in params.items():
        if key in EXTRA_KEYS:
            continue
        if key not in QUERY_KEYS:
            messages.append(f"unknown parameter {key!r} ignored (known: {', '.join(QUERY_KEYS)})")
            continue
        field, kind = QUERY_KEYS[key]
        text = _first(raw)
        try:
            value = _read_value(kind, text)
            if field in _CHOICES and value not in _CHOICES[field]:
                raise ValueError(f"one of {', '.join(_CHOICES[field])}")
            if field == "vllm_version":
                parse_vllm_version(value)
            Scenario(**{field: value})
        except (ValueError, InvalidInputError) as exc:
            messages.append(f"{key}={text!r} ignored: expected {_reason(exc)}; using the default")
            continue
        values[field] = value
    try:
        return Scenario(**values), messages
    except ValidationError as exc:  # cross-field problems: fall back to defaults entirely
        messages.append(f"parameters ignored: {exc.errors()[0]['msg']}")
        return Scenario(), messages


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return err["msg"].lower()
    if isinstance(exc, InvalidInputError):
        return exc.allowed
    text = str(exc)
    return "a number" if text.startswith("could not convert") else text


def _write_value(value: Any, kind: str = "") -> str:
    if value is None:
        return "" if kind == "opt_str" else "0"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}" if value == round(value, 6) else repr(value)
    return str(value)


def scenario_to_query(scenario: Scenario, *, custom_gpu: str | None = None,
                      custom_model: str | None = None) -> dict[str, str]:
    """Every input as URL parameters, defaults included, with ``v=1`` first."""
    out = {"v": FORMAT_VERSION}
    for key, (field, kind) in QUERY_KEYS.items():
        out[key] = _write_value(getattr(scenario, field), kind)
    if custom_gpu:
        out["cgpu"] = custom_gpu
    if custom_model:
        out["cmodel"] = custom_model
    return out


# --- custom GPUs and models ---------------------------------------------------------------------

def custom_gpu(name: str, memory_gib: float, *, memory_bandwidth_gb_per_s: float = 1000.0,
               bf16_tflop_per_s: float = 100.0, gpus_per_node: int = 8) -> GPUSpec:
    """A user-described GPU (memory as the framework reports it [GiB]); validated."""
    name = str(name).strip()
    if not name or len(name) > 60 or any(c in name for c in "~&?#=/"):
        raise InvalidInputError("gpu name", name, "1-60 characters without ~ & ? # = /")
    for field, value in (("memory_gib", memory_gib), ("memory_bandwidth_gb_per_s", memory_bandwidth_gb_per_s),
                         ("bf16_tflop_per_s", bf16_tflop_per_s)):
        if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise InvalidInputError(field, value, "a positive number")
    if memory_gib > 4096:
        raise InvalidInputError("memory_gib", memory_gib, "at most 4096 GiB")
    return GPUSpec(id=name, name=name, vendor="custom", architecture="custom",
                   memory_gb_marketed=memory_gib * GiB / GB, memory_bytes=memory_gib * GiB,
                   memory_note="entered by the user", memory_bandwidth_bytes_per_s=memory_bandwidth_gb_per_s * GB,
                   peak_flop_per_s={"bf16": bf16_tflop_per_s * TFLOP}, scale_up_link="unknown",
                   scale_up_bytes_per_s_per_direction=0, gpus_per_node=gpus_per_node,
                   source="custom GPU entered in this session", as_of="session")


def encode_custom_gpu(gpu: GPUSpec) -> str:
    """``name~memory_gib~bandwidth_gb_per_s~bf16_tflop_per_s`` for the ``cgpu`` parameter."""
    return "~".join([gpu.name, f"{gpu.memory_bytes / GiB:g}", f"{gpu.memory_bandwidth_bytes_per_s / GB:g}",
                     f"{gpu.peak_flop_per_s.get('bf16', 0) / TFLOP:g}"])


def decode_custom_gpu(text: str) -> GPUSpec:
    """Inverse of :func:`encode_custom_gpu` (raises InvalidInputError("cgpu", ...))."""
    parts = str(text).split("~")
    if len(parts) != 4:
        raise InvalidInputError("cgpu", text, "name~memory_gib~bandwidth_gb_per_s~bf16_tflop_per_s")
    try:
        numbers = [float(p) for p in parts[1:]]
    except ValueError:
        raise InvalidInputError("cgpu", text, "numbers after the name") from None
    return custom_gpu(parts[0], numbers[0], memory_bandwidth_gb_per_s=numbers[1], bf16_tflop_per_s=numbers[2])


def encode_config(config: dict) -> str:
    """A ``config.json`` dictionary as a compact URL-safe string (zlib + base64url)."""
    raw = json.dumps(config, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def decode_config(text: str) -> dict:
    """Inverse of :func:`encode_config` (raises InvalidInputError("cmodel", ...))."""
    text = str(text)
    if len(text) > MAX_COMPACT_CHARS:
        raise InvalidInputError("cmodel", f"{len(text)} characters", f"at most {MAX_COMPACT_CHARS}")
    try:
        raw = zlib.decompress(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), bufsize=100_000)
        cfg = json.loads(raw)
    except (ValueError, zlib.error, RecursionError):  # RecursionError: JSON nested thousands deep
        raise InvalidInputError("cmodel", text[:40], "a custom model written by this app's permalink") from None
    if not isinstance(cfg, dict):
        raise InvalidInputError("cmodel", text[:40], "a JSON object")
    return cfg


def config_from_fields(*, id: str, hidden_size: int, num_hidden_layers: int, num_attention_heads: int,
                       num_key_value_heads: int, intermediate_size: int, vocab_size: int,
                       max_position_embeddings: int, head_dim: int | None = None,
                       torch_dtype: str = "bfloat16", tie_word_embeddings: bool = False) -> dict:
    """A minimal Llama-style ``config.json`` dictionary from the numbers of a form."""
    cfg = {"_name_or_path": id, "architectures": ["LlamaForCausalLM"], "model_type": "llama",
           "hidden_size": hidden_size, "num_hidden_layers": num_hidden_layers,
           "num_attention_heads": num_attention_heads, "num_key_value_heads": num_key_value_heads,
           "intermediate_size": intermediate_size, "vocab_size": vocab_size,
           "max_position_embeddings": max_position_embeddings, "torch_dtype": torch_dtype,
           "tie_word_embeddings": tie_word_embeddings}
    if head_dim:
        cfg["head_dim"] = head_dim
    return cfg


def pinned_scenario(scenario: Scenario, settings: Mapping[str, Any]) -> Scenario:
    """The scenario with vLLM's resolved defaults written in (so a permalink survives default changes).

    ``settings`` is the ``settings`` object of a capacity document.
    """
    return scenario.model_copy(update={
        "dtype": settings["dtype"], "quantization": settings["quantization"],
        "max_model_len": settings["max_model_len"], "max_num_batched_tokens": settings["max_num_batched_tokens"],
        "max_num_seqs": settings["max_num_seqs"], "block_size": settings["block_size"],
        "vllm_version": settings["vllm_version"]})
