"""Recognise a profile file by its content, load it, and combine several files of one sweep.

Detection looks at the content (JSON keys, CSV header), never at the file name alone; the name is used only
in error messages. Every failure is an :class:`~calculators.errors.InvalidInputError` naming the file.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from calculators.errors import InvalidInputError
from calculators.profiles import aiperf, generic, guidellm, llmperf, nvidia, vllm
from calculators.profiles._common import decode, loads_json, loads_jsonl, read_csv
from calculators.profiles.model import Profile, build_profile

FORMATS = (
    "vllm-serve", "vllm-throughput", "vllm-latency", "vllm-nightly-summary", "vllm-nightly-commands",
    "inferencemax-agg", "guidellm", "aiperf-json", "genai-perf-json", "aiperf-csv", "genai-perf-csv",
    "genai-perf-analyze-csv", "aiperf-sweep-csv", "aiperf-jsonl", "llmperf-summary", "llmperf-individual",
    "generic-json", "generic-csv",
)
"""Every format :func:`detect_format` can name."""

_NO_MEASUREMENTS = "vllm-nightly-commands"


def _classify_json(obj: object) -> str | None:
    if isinstance(obj, dict):
        checks = (
            (generic.is_generic_json, "generic-json"), (vllm.is_serve_record, "vllm-serve"),
            (vllm.is_throughput_record, "vllm-throughput"), (vllm.is_latency_record, "vllm-latency"),
            (vllm.is_inferencemax_agg, "inferencemax-agg"), (nvidia.is_aiperf_json, "aiperf-json"),
            (guidellm.is_guidellm, "guidellm"), (llmperf.is_summary, "llmperf-summary"),
            (lambda o: vllm.nightly_rows(o) is not None, "vllm-nightly-summary"),
            (vllm.is_nightly_commands, "vllm-nightly-commands"),
        )
        for check, fmt in checks:
            if check(obj):
                if fmt == "aiperf-json" and not ("records" in obj or "schema_version" in obj
                                                 or "aiperf_version" in obj or "error_summary" in obj):
                    return "genai-perf-json"
                return fmt
        return None
    if isinstance(obj, list):
        if vllm.nightly_rows(obj) is not None:
            return "vllm-nightly-summary"
        if llmperf.is_individual(obj):
            return "llmperf-individual"
        if obj and all(vllm.is_serve_record(r) for r in obj):
            return "vllm-serve"
    return None


def _parse(name: str, data: bytes) -> tuple[str, object]:
    text = decode(name, data)
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        lines = [ln for ln in stripped.splitlines() if ln.strip()]
        try:
            obj = loads_json(name, text)
        except InvalidInputError as whole:
            if len(lines) < 2:
                raise
            try:
                loads_json(name, lines[0], line=1)
            except InvalidInputError:
                raise whole from None
            obj = loads_jsonl(name, text)  # JSON Lines: each line a record
            if nvidia.is_aiperf_jsonl(obj):
                return "aiperf-jsonl", obj
            if all(vllm.is_serve_record(r) for r in obj):
                return "vllm-serve", obj
            raise _unknown(name, obj) from None
        fmt = _classify_json(obj)
        if fmt is None:
            raise _unknown(name, obj)
        return fmt, obj
    rows = read_csv(name, text)
    for check, fmt in ((nvidia.is_analyze_csv, "genai-perf-analyze-csv"), (nvidia.is_stats_csv, "aiperf-csv"),
                       (aiperf.is_sweep_csv, "aiperf-sweep-csv"), (generic.is_generic_csv, "generic-csv")):
        if check(rows):
            return fmt, rows
    raise InvalidInputError(f"{name}: format", rows[0][:6] if rows else text[:40],
                            "a known benchmark file (" + ", ".join(FORMATS) + ")")


def _unknown(name: str, obj: object) -> InvalidInputError:
    shown = sorted(obj)[:8] if isinstance(obj, dict) else f"{type(obj).__name__} of {len(obj)}" if isinstance(
        obj, list) else type(obj).__name__
    return InvalidInputError(f"{name}: format", shown, "a known benchmark file (" + ", ".join(FORMATS) + ")")


def detect_format(name: str, data: bytes) -> str:
    """The format of a profile file, one of :data:`FORMATS`, from its content."""
    fmt, obj = _parse(name, data)
    if fmt == "aiperf-csv":
        assert isinstance(obj, list)  # CSV formats are only detected on read_csv's rows
        return nvidia.load_stats_csv(name, obj).source_format  # tells AIPerf from GenAI-Perf by column order
    return fmt


def _load_parsed(name: str, fmt: str, obj: object) -> Profile:
    # Each loader takes what _parse returned for its format (a JSON object, a list of records, CSV rows).
    loaders: dict[str, Callable[[str, Any], Profile]] = {
        "vllm-serve": vllm.load_serve, "vllm-throughput": vllm.load_throughput, "vllm-latency": vllm.load_latency,
        "vllm-nightly-summary": vllm.load_nightly, "inferencemax-agg": vllm.load_inferencemax,
        "guidellm": guidellm.load_guidellm, "aiperf-json": nvidia.load_aiperf_json,
        "genai-perf-json": nvidia.load_aiperf_json, "aiperf-csv": nvidia.load_stats_csv,
        "genai-perf-analyze-csv": nvidia.load_analyze_csv,
        "aiperf-sweep-csv": aiperf.load_sweep_csv, "aiperf-jsonl": nvidia.load_aiperf_jsonl,
        "llmperf-summary": llmperf.load_summary, "llmperf-individual": llmperf.load_individual,
        "generic-json": generic.load_generic_json, "generic-csv": generic.load_generic_csv,
    }
    if fmt == _NO_MEASUREMENTS:
        raise InvalidInputError(f"{name}: format", fmt, "a file with measurements; this *.commands sidecar only "
                                "describes a run: pass it to load_many() together with its benchmark_results.json")
    return loaders[fmt](name, obj)


def detect_and_load(name: str, data: bytes) -> Profile:
    """Recognise ``data`` (the bytes of the file called ``name``) and import it as a :class:`Profile`.

    Raises
    ------
    InvalidInputError
        Unknown format, bad encoding, truncated JSON, too large (``MAX_PROFILE_BYTES``), empty sweep, NaN,
        negative or non-monotone values; the message names the file and the field.
    """
    fmt, obj = _parse(name, data)
    return _load_parsed(name, fmt, obj)


def _one(values: Iterable[object], field: str, what: str) -> object:
    seen = sorted({v for v in values if v is not None}, key=str)
    if len(seen) > 1:
        raise InvalidInputError(field, seen, f"profiles of one {what}; combine each {what} separately")
    return seen[0] if seen else None


def combine(profiles: Iterable[Profile]) -> Profile:
    """Merge profiles of one sweep (same model, GPU, TP, engine) into one, load points sorted by load.

    Refuses profiles of different models, GPUs, tensor-parallel sizes or engine versions, and the same
    file twice.
    """
    profiles = list(profiles)
    if not profiles:
        raise InvalidInputError("profiles", [], "at least one profile (empty sweep)")
    files = [f for p in profiles for f in p.source_files]
    dup = sorted({f for f in files if files.count(f) > 1})
    if dup:
        raise InvalidInputError("source_files", dup, "each file once")
    meta = {
        "model": _one((p.model for p in profiles), "model", "model"),
        "gpu": _one((p.gpu for p in profiles), "gpu", "GPU"),
        "tensor_parallel_size": _one((p.tensor_parallel_size for p in profiles), "tensor_parallel_size",
                                     "tensor_parallel_size"),
        "engine": _one((p.engine for p in profiles), "engine", "engine"),
        "engine_version": _one((p.engine_version for p in profiles), "engine_version", "engine version"),
    }
    formats = list(dict.fromkeys(p.source_format for p in profiles))
    notes = tuple(dict.fromkeys(n for p in profiles for n in p.notes))
    return build_profile(", ".join(files), source_format="+".join(formats), source_files=tuple(files),
                         load_points=[lp for p in profiles for lp in p.load_points], notes=notes, **meta)


def load_many(files: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> Profile:
    """Load several files of one sweep and :func:`combine` them.

    vLLM nightly ``*.commands`` sidecars carry no measurements; their model and GPU fill what the profiles
    lack (a conflicting value is an error, as in :func:`combine`).
    """
    items = list(files.items()) if isinstance(files, Mapping) else list(files)
    profiles, sidecars = [], []
    for name, data in items:
        fmt, obj = _parse(name, data)
        if fmt == _NO_MEASUREMENTS:
            assert isinstance(obj, dict)  # is_nightly_commands only accepts a JSON object
            sidecars.append((name, vllm.read_nightly_commands(name, obj)))
        else:
            profiles.append(_load_parsed(name, fmt, obj))
    if not profiles:
        raise InvalidInputError("files", [n for n, _ in items], "at least one file with measurements (empty sweep)")
    combined = combine(profiles)
    if not sidecars:
        return combined
    fields = combined.model_dump()
    model = _one([combined.model] + [s["model"] for _, s in sidecars], "model", "model")
    fields["model"] = model
    if combined.gpu is None:
        fields["gpu"] = _one([s["gpu"] for _, s in sidecars], "gpu", "GPU")
    fields["source_files"] = combined.source_files + tuple(n for n, _ in sidecars)
    fields["notes"] = combined.notes + ("model/GPU taken from the *.commands sidecar(s)",)
    return build_profile(", ".join(fields["source_files"]), **fields)
