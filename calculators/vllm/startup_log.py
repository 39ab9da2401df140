"""Read a pasted vLLM start-up log: its version, the settings it reveals and the numbers it printed.

Line formats follow docs/vllm-memory.md §1 and §5 and real public
start-up logs. When the log has no version banner, the version is
inferred from which lines appear (the *fingerprint*) and reported as a range with a representative
release. Memory figures are GiB as printed (vLLM's V0 "GB" is GiB).
"""
from __future__ import annotations

import ast
import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from calculators.errors import InvalidInputError
from calculators.specs.schema import GPUSpec
from calculators.units import GiB

MAX_LOG_CHARS = 2_000_000
_NUM = r"(-?[\d,]*\.?\d+)"


@dataclass(frozen=True)
class VllmLog:
    """What a start-up log says. Numbers are ``None`` when the log does not print them."""

    version: str | None
    version_range: str
    engine: str | None
    settings: dict = field(default_factory=dict)
    weights_gib: float | None = None
    available_kv_cache_gib: tuple[float, ...] = ()
    kv_cache_tokens: tuple[int, ...] = ()
    max_concurrency: tuple[float, ...] = ()
    concurrency_len: int | None = None
    num_gpu_blocks: int | None = None
    num_cpu_blocks: int | None = None
    total_gpu_memory_gib: float | None = None
    gpu_memory_utilization: float | None = None
    budget_gib: float | None = None
    peak_torch_gib: float | None = None
    activation_gib: float | None = None
    non_torch_gib: float | None = None
    cudagraph_gib: float | None = None
    recognised_lines: int = 0

    @property
    def kv_cache_gib(self) -> float | None:
        """The smallest KV memory any worker reported (the one that binds) [GiB]."""
        return min(self.available_kv_cache_gib) if self.available_kv_cache_gib else None


def _f(text: str) -> float:
    return float(text.replace(",", ""))


_PATTERNS = {
    "weights_v1": re.compile(r"Model loading took\s+" + _NUM + r"\s*GiB"),
    "weights_v0": re.compile(r"Loading model weights took\s+" + _NUM + r"\s*GB"),
    "available": re.compile(r"Available KV cache memory:\s*" + _NUM + r"\s*GiB"),
    "tokens": re.compile(r"GPU KV cache size:\s*" + _NUM + r"\s*tokens"),
    "concurrency": re.compile(r"Maximum concurrency for\s+" + _NUM + r"\s+tokens per request:\s*" + _NUM + r"x"),
    "blocks_v1": re.compile(r"#\s*GPU blocks:\s*" + _NUM + r"(?!,\s*#\s*CPU)"),
    "blocks_v0": re.compile(r"#?\s*(GPU|cuda) blocks:\s*" + _NUM + r",\s*#\s*CPU blocks:\s*" + _NUM),
    "blocks_info": re.compile(r"num_gpu_blocks is:\s*" + _NUM),
    "profiling": re.compile(r"Memory profiling results:.*?total_gpu_memory=" + _NUM + r"GiB.*?peak_torch_memory="
                            + _NUM + r"GiB.*?non_torch_memory=" + _NUM + r"GiB.*?kv_cache_size=" + _NUM
                            + r"GiB.*?gpu_memory_utilization=" + _NUM),
    "budget_v0": re.compile(r"can use total_gpu_memory \(" + _NUM + r"GiB\) x gpu_memory_utilization \(" + _NUM
                            + r"\) = " + _NUM + r"GiB"),
    "breakdown_v0": re.compile(r"model weights take " + _NUM + r"GiB; non_torch_memory takes " + _NUM
                               + r"GiB; PyTorch activation peak memory takes " + _NUM
                               + r"GiB; the rest of the memory reserved for KV Cache is " + _NUM + r"GiB"),
    "debug_v1": re.compile(r"Desired GPU memory utilization is \(" + _NUM + r", " + _NUM + r" GiB\)\. Actual usage is "
                           + _NUM + r" GiB for weight, " + _NUM + r" GiB for peak activation, " + _NUM
                           + r" GiB for non-torch memory, and " + _NUM + r" GiB for CUDAGraph"),
    "sampler_on": re.compile(r"Using FlashInfer for top-p & top-k sampling"),
    "sampler_off": re.compile(r"[Ff]alling back to the PyTorch-native implementation of top-p & top-k sampling"
                              r"|FlashInfer top-p/top-k sampling disabled via VLLM_USE_FLASHINFER_SAMPLER=0"),
    "version": re.compile(r"(?:vLLM API server version|vLLM version|LLM engine \(v|version)\s*v?(\d+\.\d+(?:\.\d+)?)"),
    "non_default": re.compile(r"non-default args:\s*(\{.*\})"),
    "config": re.compile(r"with config:\s*(.*)$"),
}
_CONFIG_KEYS = {"model": str, "tensor_parallel_size": int, "pipeline_parallel_size": int, "data_parallel_size": int,
                "enable_expert_parallel": bool, "max_seq_len": int,
                "max_model_len": int, "dtype": str, "quantization": str, "kv_cache_dtype": str,
                "enforce_eager": bool, "gpu_memory_utilization": float, "block_size": int,
                "max_num_seqs": int, "max_num_batched_tokens": int}


def _config_settings(text: str) -> dict:
    """``key=value`` pairs of vLLM's "Initializing ... with config:" line that matter here."""
    out = {}
    for key, kind in _CONFIG_KEYS.items():
        m = re.search(r"(?<![\w.])" + key + r"=('([^']*)'|[^,\s)]+)", text)
        if not m:
            continue
        raw = m.group(2) if m.group(2) is not None else m.group(1)
        raw = raw.removeprefix("torch.")
        if raw == "None":
            continue
        try:
            value = (raw == "True") if kind is bool else kind(raw)
        except ValueError:
            continue
        if kind is str or kind is bool or (math.isfinite(value) and value >= 0):
            out["max_model_len" if key == "max_seq_len" else key] = value
    return out


def _args_settings(text: str) -> dict:
    if len(text) > 20_000:  # literal_eval's cost grows with nesting; real "non-default args" are short
        return {}
    try:
        with warnings.catch_warnings():  # a pasted log's "\)" is the user's text, not our code's escape
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            args = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):  # {{...}}: unhashable dict in a set
        return {}
    if not isinstance(args, dict):
        return {}
    return {k: v for k, v in args.items() if k in _CONFIG_KEYS and isinstance(v, str | int | float | bool)
            and (isinstance(v, str | bool) or (math.isfinite(v) and v >= 0))}


def _fingerprint(found: set[str], has_combined_line: bool) -> tuple[str | None, str, str | None]:
    """(representative version, range in words, engine) from which line formats occur."""
    if "profiling" in found:
        return "0.6.4", "0.6.4–0.6.5 (one-line 'Memory profiling results')", "V0"
    if "budget_v0" in found or "breakdown_v0" in found:
        return "0.6.6", "0.6.6–0.10.x, V0 engine ('the current vLLM instance can use')", "V0"
    if "weights_v0" in found or "blocks_v0" in found:
        return "0.7.3", "0.6–0.10.x, V0 engine ('Loading model weights took … GB')", "V0"
    if has_combined_line:
        return "0.28.0", "0.28 or later (KV cache size and concurrency on one line)", "V1"
    if "available" in found:
        return "0.10.2", "0.9.1–0.27 (V1, 'Available KV cache memory')", "V1"
    if "blocks_v1" in found:
        return "0.7.3", "0.7–0.7.x (V1, '# GPU blocks')", "V1"
    if "tokens" in found:
        return "0.8.5", "0.8–0.9.0 (V1, 'GPU KV cache size' without 'Available KV cache memory')", "V1"
    return None, "unknown", None


def _check_log_text(text: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("log", text, "the text vLLM printed at start-up (paste it here)")
    if len(text) > MAX_LOG_CHARS:
        raise InvalidInputError("log", f"{len(text)} characters", f"at most {MAX_LOG_CHARS:,} characters")


#: Line formats that reveal a setting or the version but print no start-up number.
_SETTINGS_ONLY = ("version", "non_default", "config", "sampler_on", "sampler_off")


def _take_settings(name: str, m: re.Match, settings: dict) -> None:
    """Settings from a "with config:" line (the first value of a key wins), a "non-default args" line,
    or the sampler line (``flashinfer_sampler``: on / off)."""
    if name in ("sampler_on", "sampler_off"):
        settings.setdefault("flashinfer_sampler", "on" if name == "sampler_on" else "off")
    if name == "config":
        settings.update({k: x for k, x in _config_settings(m.group(1)).items() if k not in settings})
    if name == "non_default":
        settings.update(_args_settings(m.group(1)))


def _scan_line(line: str, v: dict, found: set[str]) -> tuple[bool, str | None]:
    """Take every line format found on ``line`` into ``v`` and ``found``.

    Returns whether the line gave a number, and the version it prints (``None`` if none)."""
    hit, printed = False, None
    for name, pat in _PATTERNS.items():
        m = pat.search(line)
        if not m:
            continue
        if name == "blocks_v1" and _PATTERNS["blocks_v0"].search(line):
            continue
        try:
            _take(name, m, v)
        except ValueError:  # a negative count or a number too large: not a line vLLM prints
            continue
        found.add(name)
        hit = hit or name not in _SETTINGS_ONLY
        if name == "version":
            printed = m.group(1)
        _take_settings(name, m, v["settings"])
    return hit, printed


def _printed_version(version: str, versions: dict[str, None], engine: str | None) -> tuple[str, str]:
    """(range in words, engine) when the log prints its version; ``versions`` are all it prints, in order."""
    span = f"{version} (printed in the log)"
    if len(versions) > 1:
        span = f"{version} (the log prints several versions: {', '.join(versions)}; the first is used)"
    return span, engine or ("V1" if tuple(map(int, version.split(".")[:2])) >= (0, 8) else "V0")


def parse_vllm_log(text: str) -> VllmLog:
    """Read the start-up numbers and settings from a vLLM log (raises InvalidInputError("log", ...))."""
    _check_log_text(text)
    v: dict = {"available": [], "tokens": [], "concurrency": [], "settings": {}}
    found: set[str] = set()
    combined = False
    recognised = 0
    version = None
    versions: dict[str, None] = {}  # every version printed, in order
    for line in text.splitlines():
        hit, printed = _scan_line(line, v, found)
        if printed is not None:
            version = version or printed
            versions.setdefault(printed)
        if "GPU KV cache size" in line and "Maximum concurrency" in line:
            combined = True
        recognised += hit
    if not recognised:
        raise InvalidInputError("log", text.strip()[:60], "a vLLM start-up log with lines such as 'Available KV "
                                "cache memory: 32.06 GiB' or 'GPU KV cache size: 420,208 tokens'")
    rep, span, engine = _fingerprint(found, combined)
    if version is not None:
        span, engine = _printed_version(version, versions, engine)
    return VllmLog(
        version=version or rep, version_range=span, engine=engine, settings=v["settings"],
        weights_gib=v.get("weights"), available_kv_cache_gib=tuple(v["available"]),
        kv_cache_tokens=tuple(v["tokens"]), max_concurrency=tuple(v["concurrency"]),
        concurrency_len=v.get("concurrency_len"), num_gpu_blocks=v.get("blocks"), num_cpu_blocks=v.get("cpu_blocks"),
        total_gpu_memory_gib=v.get("total"), gpu_memory_utilization=v.get("util"), budget_gib=v.get("budget"),
        peak_torch_gib=v.get("peak_torch"), activation_gib=v.get("activation"), non_torch_gib=v.get("non_torch"),
        cudagraph_gib=v.get("cudagraph"), recognised_lines=recognised)


def _n(text: str) -> int:
    """A count printed by vLLM (tokens, blocks): a whole number ≥ 0, else ValueError."""
    x = _f(text)
    if not 0 <= x < 2**63:
        raise ValueError(f"not a count: {text}")
    return int(x)


def _take(name: str, m: re.Match, v: dict) -> None:  # noqa: C901 - one branch per line format
    g = m.groups()
    if name in ("weights_v1", "weights_v0"):
        v["weights"] = _f(g[0])
    elif name == "available":
        v["available"].append(_f(g[0]))
    elif name == "tokens":
        v["tokens"].append(_n(g[0]))
    elif name == "concurrency":
        length, conc = _n(g[0]), _f(g[1])
        if conc < 0:
            raise ValueError("negative concurrency")
        v["concurrency_len"] = length
        v["concurrency"].append(conc)
    elif name in ("blocks_v1", "blocks_info"):
        v["blocks"] = _n(g[0])
    elif name == "blocks_v0":
        v["blocks"], v["cpu_blocks"] = _n(g[1]), _n(g[2])
    elif name == "profiling":
        v["total"], v["peak_torch"], v["non_torch"] = _f(g[0]), _f(g[1]), _f(g[2])
        v["available"].append(_f(g[3]))
        v["util"] = _f(g[4])
    elif name == "budget_v0":
        v["total"], v["util"], v["budget"] = _f(g[0]), _f(g[1]), _f(g[2])
    elif name == "breakdown_v0":
        v["weights"], v["non_torch"], v["activation"] = _f(g[0]), _f(g[1]), _f(g[2])
        v["available"].append(_f(g[3]))
    elif name == "debug_v1":
        v["util"], v["budget"], v["weights"] = _f(g[0]), _f(g[1]), _f(g[2])
        v["activation"], v["non_torch"], v["cudagraph"] = _f(g[3]), _f(g[4]), _f(g[5])


def scenario_updates(log: VllmLog) -> dict:
    """Scenario fields (vLLM names) that the log reveals, ready for ``Scenario.model_copy(update=...)``."""
    s = log.settings
    out: dict = {}
    if log.version:
        out["vllm_version"] = log.version
    mml = log.concurrency_len or s.get("max_model_len")
    if mml:
        out["max_model_len"] = int(mml)
    for key in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel",
                "block_size", "max_num_seqs", "max_num_batched_tokens", "enforce_eager", "flashinfer_sampler"):
        if key in s:
            out[key] = s[key]
    util = log.gpu_memory_utilization or s.get("gpu_memory_utilization")
    if util:
        out["gpu_memory_utilization"] = float(util)
    if s.get("kv_cache_dtype") in (None, "auto") or "kv_cache_dtype" not in s:
        pass
    else:
        out["kv_cache_dtype"] = s["kv_cache_dtype"]
    if log.kv_cache_gib is not None and log.kv_cache_gib > 0:
        out["kv_cache_memory_gib"] = log.kv_cache_gib
    return out


def comparison_rows(log: VllmLog, doc: dict) -> list[dict]:
    """The log's numbers beside a capacity document's, with the difference (predicted − log)."""
    from calculators.units import GiB
    st = doc["stages"][doc["binding_stage"]]
    pairs = [
        ("Model weights [GiB]", log.weights_gib, doc["weights_bytes"] / GiB),
        ("Available KV cache memory [GiB]", log.kv_cache_gib, doc["available_kv_cache_bytes"] / GiB),
        ("GPU KV cache size [tokens]", min(log.kv_cache_tokens) if log.kv_cache_tokens else None,
         doc["kv_cache_tokens"]),
        ("Maximum concurrency [x]", min(log.max_concurrency) if log.max_concurrency else None, doc["max_concurrency"]),
        ("GPU blocks", log.num_gpu_blocks, doc["num_gpu_blocks"]),
        ("Activation peak [GiB]", log.activation_gib, st["activation_peak"]["bytes"] / GiB),
        ("Non-torch memory [GiB]", log.non_torch_gib, st["non_torch"]["bytes"] / GiB),
        ("CUDA graphs [GiB]", log.cudagraph_gib, st["cudagraph"]["bytes"] / GiB),
    ]
    rows = []
    for name, seen, predicted in pairs:
        if seen is None:
            continue
        diff = predicted - seen
        rows.append({"quantity": name, "log": float(seen), "predicted": float(predicted), "difference": float(diff),
                     "difference_pct": float(100 * diff / seen) if seen else None})
    return rows


MISMATCH_TOLERANCE = 0.05
"""Weights or total GPU memory further apart than this (a fraction) mean the log is of another setup."""


@dataclass(frozen=True)
class LogMismatch:
    """One way a start-up log disagrees with the scenario it is checked against.

    ``field``: the scenario field concerned (``model``, ``gpu``, or a vLLM flag); ``log_value`` and
    ``scenario_value`` as the user knows them; ``suggestion``: what to switch the scenario to (a model
    name, a catalog GPU id or the log's flag value), ``None`` where the log does not say."""

    field: str
    message: str
    log_value: Any
    scenario_value: Any
    suggestion: Any = None


def _relative_gap(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


def gpus_with_memory(total_gpu_memory_gib: float, gpus: dict[str, GPUSpec]) -> list[str]:
    """Catalog GPU ids whose memory is within 2 % of ``total_gpu_memory_gib`` (what torch reported)."""
    return [g.id for g in gpus.values() if _relative_gap(g.memory_gib, total_gpu_memory_gib) <= 0.02]


def _model_mismatch(log: VllmLog, model_ids: tuple[str, ...]) -> list[LogMismatch]:
    name = log.settings.get("model")
    known = {m.lower() for m in model_ids} | {m.split("/")[-1].lower() for m in model_ids}
    if not name or str(name).lower() in known or str(name).split("/")[-1].lower() in known:
        return []
    return [LogMismatch("model", f"this log is of {name}, not {model_ids[0]}", name, model_ids[0], name)]


def _weights_mismatch(log: VllmLog, doc: dict) -> list[LogMismatch]:
    predicted = doc["weights_bytes"] / GiB
    seen = log.weights_gib
    if not seen or _relative_gap(predicted, seen) <= MISMATCH_TOLERANCE:
        return []
    return [LogMismatch("weights", f"its weights ({seen:.2f} GiB per GPU) are {100 * (predicted / seen - 1):+.0f} % "
                                   f"off the scenario's ({predicted:.2f} GiB): another model, quantization or "
                                   "parallel layout", seen, predicted)]


def _gpu_mismatch(log: VllmLog, gpu_memory_gib: float, gpus: dict[str, GPUSpec]) -> list[LogMismatch]:
    total = log.total_gpu_memory_gib
    if not total or _relative_gap(gpu_memory_gib, total) <= MISMATCH_TOLERANCE:
        return []
    like = gpus_with_memory(total, gpus)
    looks = f" — it looks like {' or '.join(like)}" if like else ""
    return [LogMismatch("gpu", f"its GPU has {total:.2f} GiB, the scenario's {gpu_memory_gib:.2f} GiB{looks}",
                        total, gpu_memory_gib, like[0] if like else None)]


def _flag_mismatches(log: VllmLog, doc: dict) -> list[LogMismatch]:
    settings = doc["settings"]
    return [LogMismatch(key, f"it ran with {key}={value}, the scenario has {settings[key]}", value, settings[key],
                        value)
            for key, value in scenario_updates(log).items()
            if key in settings and key != "vllm_version" and settings[key] != value]


def log_mismatches(log: VllmLog, doc: dict, *, model_ids: tuple[str, ...], gpu_memory_gib: float,
                   gpus: dict[str, GPUSpec]) -> list[LogMismatch]:
    """How ``log`` disagrees with the capacity document ``doc`` of the scenario it is pasted into.

    ``model_ids``: the names the scenario's model answers to (id first, then aliases); ``gpu_memory_gib``:
    the scenario GPU's memory [GiB]; ``gpus``: the catalog, to suggest a GPU of the log's size. Weights or
    total memory more than :data:`MISMATCH_TOLERANCE` apart say the log is of another setup; flags the
    log reveals that differ (tensor_parallel_size, …) are listed too (the check applies them anyway)."""
    return (_model_mismatch(log, model_ids) + _weights_mismatch(log, doc) + _gpu_mismatch(log, gpu_memory_gib, gpus)
            + _flag_mismatches(log, doc))
