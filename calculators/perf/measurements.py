"""Public measured serving performance: the corpus the performance model is fitted and validated on.

One JSON file per source in ``calculators/data/measurements/`` (``{"source": {...}, "rows": [...]}``),
read with :func:`importlib.resources.files` and validated on load; a bad row stops the load with an
error that names the file, the row index and the field
(``measurements/dstack.json row 12: metrics.ttft_p99_ms: got -3; a positive finite number``).

Units live in the metric key names and every key must end in one of :data:`UNITS` and be one of
:data:`METRIC_KEYS`: ``_ms`` milliseconds, ``_s`` seconds, ``_tok_s`` tokens/s of the whole
deployment (all ``gpu_count`` GPUs), ``_tok_s_per_gpu`` tokens/s per GPU, ``_tok_s_per_user`` tokens/s
seen by one request, ``_req_s`` requests/s, and a few counts (``_tokens``, ``_requests``) and power or
energy units. Metrics computed by the collector rather than printed by the source (a per-GPU value
divided out of a whole-system one) are listed in ``extra["derived_metrics"]``.

Sources: InferenceX (SemiAnalysis), MLPerf Inference v5.1, dstack, DataCrunch, LMDeploy, LMSYS and vLLM
blogs, vLLM recipes, TensorRT-LLM docs and blogs, SGLang benchmark tables and cookbook, AMD ROCm blogs and ATOM CI,
Oracle Cloud and CloudRift, surajssd/llm-k8s, adithyaJRunpod/vllm_bench; each file's ``source`` gives URLs,
dates and terms. Sources held out as an independent test are refused by URL
(:data:`HELD_OUT`). See docs/data-policy.md §9.
"""
from __future__ import annotations

import json
import math
import re
from datetime import date
from functools import lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from calculators.errors import InvalidInputError
from calculators.specs.catalog import CatalogError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    import pandas as pd
    from pydantic_core import ErrorDetails

DATA_DIR = files("calculators.data") / "measurements"
"""Where the corpus lives: inside the package, one ``<source_id>.json`` per source."""

Engine = Literal["vllm", "sglang", "trtllm", "lmdeploy", "tgi", "dynamo", "atom", "mori", "llmboost", "ollama",
                 "other"]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "fp4", "nvfp4", "mxfp4", "int8", "int4", "int4-awq", "int4-gptq",
                    "w4a8"]
KVCacheDtype = Literal["auto", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8", "fp4", "nvfp4"]
LoadMode = Literal["concurrency", "request_rate", "offline_max", "static_batch"]
ENGINES: tuple[str, ...] = get_args(Engine)
PRECISIONS: tuple[str, ...] = get_args(Precision)

UNITS: dict[str, str] = {
    "_ms": "milliseconds",
    "_s": "seconds",
    "_tok_s": "tokens per second, whole deployment (all gpu_count GPUs)",
    "_tok_s_per_gpu": "tokens per second per GPU",
    "_tok_s_per_node": "tokens per second per node, as published",
    "_tok_s_per_user": "tokens per second seen by one request",
    "_req_s": "requests per second",
    "_req_min": "requests per minute",
    "_tokens": "a count of tokens",
    "_requests": "a count of requests",
    "_gb": "GB of GPU memory, as published",
    "_w_per_gpu": "watts per GPU",
    "_j_per_tok": "joules per token",
}
"""Every metric key ends in one of these unit suffixes (the longest one that matches)."""

LATENCIES = ("ttft", "tpot", "itl", "e2el", "token_latency")
STATS = ("mean", "median", "min", "max", "p50", "p75", "p90", "p95", "p99")
_RANK = {"min": 0, "p50": 1, "median": 1, "p75": 2, "p90": 3, "p95": 4, "p99": 5, "max": 6}


def _metric_keys() -> frozenset[str]:
    keys = {f"{q}_ms" for q in LATENCIES} | {f"{q}_{s}_ms" for q in LATENCIES for s in STATS}
    keys |= {"ttft_constraint_ms", "tpot_constraint_ms", "duration_s"}
    keys |= {f"{k}_tok_s{p}" for k in ("output", "input", "total", "prefill", "decode")
             for p in ("", "_per_gpu", "_per_node")}
    keys |= {f"interactivity_{s}_tok_s_per_user" for s in STATS}
    keys |= {"request_throughput_req_s", "scheduled_request_rate_req_s", "request_throughput_req_min"}
    keys |= {"completed_requests", "total_input_tokens", "total_output_tokens", "total_num_tokens",
             "output_len_mean_tokens", "gpu_mem_gb", "power_mean_w_per_gpu", "output_energy_j_per_tok",
             "total_energy_j_per_tok"}
    return frozenset(keys)


METRIC_KEYS = _metric_keys()
"""The metric keys the corpus may use (README.md in the data folder lists them with their meaning)."""

GPUS: dict[str, tuple[str, str | None]] = {
    "A100 SXM 40GB": ("NVIDIA Ampere", "A100-40GB-SXM"),
    "A100 SXM 80GB": ("NVIDIA Ampere", "A100-80GB-SXM"),
    "L40S": ("NVIDIA Ada", "L40S"),
    "H100 SXM 80GB": ("NVIDIA Hopper", "H100-SXM"),
    "H100 80GB": ("NVIDIA Hopper", None),
    "H200 SXM 141GB": ("NVIDIA Hopper", "H200-SXM"),
    "H200 NVL 141GB": ("NVIDIA Hopper", "H200-NVL"),
    "H200 141GB": ("NVIDIA Hopper", None),
    "H20": ("NVIDIA Hopper", None),
    "Hopper (SKU not stated)": ("NVIDIA Hopper", None),
    "B200": ("NVIDIA Blackwell", "B200"),
    "B300": ("NVIDIA Blackwell", "B300"),
    "GB200": ("NVIDIA Blackwell", "GB200"),
    "GB300": ("NVIDIA Blackwell", "GB300"),
    "RTX PRO 6000 Blackwell Server": ("NVIDIA Blackwell", "RTX-PRO-6000"),
    "RTX PRO 6000 Blackwell Workstation": ("NVIDIA Blackwell", "RTX-PRO-6000"),
    "RTX 5090": ("NVIDIA Blackwell", "RTX-5090"),
    "GB10 (DGX Spark)": ("NVIDIA Blackwell", None),
    "MI300X": ("AMD CDNA3", "MI300X"),
    "MI325X": ("AMD CDNA3", "MI325X"),
    "MI300X+MI325X (mixed cluster)": ("AMD CDNA3", None),
    "MI355X": ("AMD CDNA4", "MI355X"),
    "Arc Pro B60 24GB": ("other", None),
    "Arc Pro B60 Dual 48GB": ("other", None),
}
"""Normalised GPU names: family and catalog id (None where the catalog has no match or the SKU is not stated)."""

HELD_OUT: dict[str, str] = {
    "ROCm/vllm dev-docker README (MI300X tables)": r"rocm/vllm/.*dev-docker",
    "NVIDIA NIM benchmarking pages": r"docs\.nvidia\.com/nim",
    "GPUStack performance lab": r"gpustack.*performance-lab",
    "Vultr inference cookbook": r"docs\.vultr\.com|inference-cookbook",
    "MLPerf Inference v4.1 results": r"inference_results_v4\.1",
    "vLLM perf dashboard": r"vllm-project/perf-dashboard",
    "vLLM threads kept for the start-up accuracy check": (
        r"vllm-project/vllm/(?:issues|pull)/(?:2031|4454|9802|10511|10517|12126|12569|13061|13882|14447|15039"
        r"|16570|16580|17327|21348|25350|27508|33155|34076|48322|57047)(?:\D|$)"),
}
"""Sources kept out of the corpus as an independent accuracy test; a URL matching one is refused."""

_HELD_OUT_RE = re.compile("|".join(f"(?:{p})" for p in HELD_OUT.values()), re.IGNORECASE)
_DATE_RE = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$")
_COMMIT_RE = re.compile(r"/(?:blob|tree|raw)/[0-9a-f]{40}(?:/|$)")
_THREAD_RE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+(?:#[\w-]+)?$")
"""A GitHub issue, pull request or discussion (optionally one comment of it): a thread has no file to pin."""


class MeasurementError(CatalogError):
    """A measurement file is missing or invalid; the message names the file, the row and the field."""


def held_out(url: str) -> str | None:
    """The held-out source that ``url`` belongs to, or None."""
    if not _HELD_OUT_RE.search(url):
        return None
    return next(name for name, pat in HELD_OUT.items() if re.search(pat, url, re.IGNORECASE))


def unit_of(key: str) -> str | None:
    """The unit suffix ``key`` ends in (the longest of :data:`UNITS`), or None."""
    hits = [u for u in UNITS if key.endswith(u) and len(key) > len(u)]
    return max(hits, key=len) if hits else None


def _check_date(field: str, v: str) -> str:
    m = _DATE_RE.match(v)
    try:
        valid = m is not None and date(int(m[1]), int(m[2]), int(m[3] or 1)) is not None
    except ValueError:
        valid = False
    if not valid:
        raise InvalidInputError(field, v, "a date as YYYY-MM or YYYY-MM-DD")
    return v


def _check_url(field: str, v: str, *, pinned: bool = True) -> str:
    if not re.match(r"^https://\S+$", v):
        raise InvalidInputError(field, v, "an https:// URL without spaces")
    if pinned and "github.com" in v and not (_COMMIT_RE.search(v) or _THREAD_RE.match(v)):
        raise InvalidInputError(field, v, "a GitHub URL pinned to a 40-hex commit (/blob/<sha>/...), "
                                          "or an issue, pull request or discussion")
    if name := held_out(v):
        raise InvalidInputError(field, v, f"not a held-out source ({name}); see docs/data-policy.md §9")
    return v


def _check_metric(key: str, value: object) -> None:
    if not isinstance(key, str) or unit_of(key) is None:
        raise InvalidInputError(f"metrics.{key}", key, f"a key ending in a unit suffix ({', '.join(UNITS)})")
    if key not in METRIC_KEYS:
        raise InvalidInputError(f"metrics.{key}", key, "a known metric key (measurements.METRIC_KEYS)")
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok:
        raise InvalidInputError(f"metrics.{key}", value, "a positive finite number")


def _check_order(metrics: dict[str, float]) -> None:
    for q in LATENCIES:
        have = sorted((_RANK[s], s, metrics[f"{q}_{s}_ms"]) for s in _RANK if f"{q}_{s}_ms" in metrics)
        for (r_lo, lo, lo_v), (r_hi, hi, hi_v) in ((a, b) for a in have for b in have):
            if r_lo < r_hi and lo_v > hi_v:
                raise InvalidInputError(f"metrics.{q}_{lo}_ms", lo_v, f"at most metrics.{q}_{hi}_ms ({hi_v})")
        _check_mean(metrics, q)


def _check_mean(metrics: dict[str, float], q: str) -> None:
    mean = metrics.get(f"{q}_mean_ms")
    lo, hi = metrics.get(f"{q}_min_ms", 0.0), metrics.get(f"{q}_max_ms", math.inf)
    if mean is not None and not lo <= mean <= hi:
        raise InvalidInputError(f"metrics.{q}_mean_ms", mean, f"between metrics.{q}_min_ms and metrics.{q}_max_ms")


class Source(BaseModel):
    """One publisher's material: where it is, when it was published and retrieved, what it measured."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source_id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.]*$")
    publisher: str = Field(min_length=1)
    urls: tuple[str, ...] = Field(min_length=1)
    published_from: str
    published_to: str
    retrieved: str | None = None
    measured: str = Field(min_length=1)
    license: str | None = None
    caveats: str = ""
    #: Why the source's rows stay in the corpus but are not compared with the model (empty: compared).
    not_compared: str = ""

    @field_validator("urls")
    @classmethod
    def _urls(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_check_url(f"urls[{i}]", u) for i, u in enumerate(v))

    @field_validator("published_from", "published_to", "retrieved")
    @classmethod
    def _dates(cls, v: str | None, info: ValidationInfo) -> str | None:
        return None if v is None else _check_date(str(info.field_name), v)

    @model_validator(mode="after")
    def _range(self) -> Source:
        if self.published_from > self.published_to:
            raise InvalidInputError("published_from", self.published_from, f"at most published_to {self.published_to}")
        return self


class Measurement(BaseModel):
    """One published measurement: a configuration, a load point and the metrics the source printed."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    source_id: str = Field(min_length=1)
    source_url: str
    published: str
    engine: Engine
    engine_version: str | None
    gpu: str
    gpu_count: int = Field(ge=1)
    model: str = Field(min_length=1)
    precision: Precision
    kv_cache_dtype: KVCacheDtype | None = None
    tp: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    ep: int | None = Field(default=None, ge=1)
    dp: int | None = Field(default=None, ge=1)
    input_len: int | None = Field(default=None, ge=1)
    output_len: int | None = Field(default=None, ge=1)
    load_mode: LoadMode
    concurrency: int | None = Field(default=None, ge=1)
    request_rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    batch_size: int | None = Field(default=None, ge=1)
    num_prompts: int | None = Field(default=None, ge=1)
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    """Tokens one engine step may carry, where the run set it (vLLM's ``--max-num-batched-tokens``, SGLang's
    ``--chunked-prefill-size``); None: the engine's default."""
    scheduler_recv_interval: int | None = Field(default=None, ge=1)
    """Decode steps between the scheduler's polls for new requests (SGLang's ``--scheduler-recv-interval``);
    None: every step."""
    metrics: dict[str, float]
    notes: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("source_url")
    @classmethod
    def _url(cls, v: str) -> str:
        return _check_url("source_url", v)

    @field_validator("published")
    @classmethod
    def _published(cls, v: str) -> str:
        return _check_date("published", v)

    @field_validator("gpu")
    @classmethod
    def _gpu(cls, v: str) -> str:
        if v not in GPUS:
            raise InvalidInputError("gpu", v, f"a normalised GPU name ({', '.join(GPUS)})")
        return v

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics(cls, v: object) -> object:
        if not isinstance(v, dict) or not v:
            raise InvalidInputError("metrics", v, "a non-empty mapping of metric key to value")
        for key, value in v.items():
            _check_metric(key, value)
        _check_order(v)
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Measurement:
        need = {"concurrency": self.concurrency, "request_rate": self.request_rate, "static_batch": self.batch_size}
        if self.load_mode in need and need[self.load_mode] is None:
            field = "batch_size" if self.load_mode == "static_batch" else self.load_mode
            raise InvalidInputError(field, None, f"a value, because load_mode is {self.load_mode!r}")
        self._check_parallel()
        self._check_extra()
        return self

    def _check_parallel(self) -> None:
        for name in ("tp", "pp", "ep", "dp"):
            if (v := getattr(self, name)) is not None and v > self.gpu_count:
                raise InvalidInputError(name, v, f"at most gpu_count ({self.gpu_count})")
        if (self.tp or 1) * (self.pp or 1) > self.gpu_count:
            raise InvalidInputError("tp", self.tp, f"tp x pp at most gpu_count ({self.gpu_count})")

    def _check_extra(self) -> None:
        derived = self.extra.get("derived_metrics", [])
        if not isinstance(derived, list) or not set(derived) <= set(self.metrics):
            raise InvalidInputError("extra.derived_metrics", derived, "a list of keys present in metrics")
        for flag in ("disaggregated", "lockstep", "shared_prefix", "enable_chunked_prefill"):
            if not isinstance(self.extra.get(flag, False), bool):
                raise InvalidInputError(f"extra.{flag}", self.extra[flag], "true or false")
        low = self.extra.get("lengths_uniform_from")
        if low is not None and (isinstance(low, bool) or not isinstance(low, int | float) or not 0 <= low <= 1):
            raise InvalidInputError("extra.lengths_uniform_from", low, "a fraction from 0 to 1 of the stated lengths")
        spec = self.extra.get("spec_decoding")
        if spec is not None and (not isinstance(spec, str) or spec.lower() in ("", "none")):
            raise InvalidInputError("extra.spec_decoding", spec, "the method's name (absent when none)")
        if "run_url" in self.extra:
            _check_url("extra.run_url", self.extra["run_url"], pinned=False)

    @property
    def gpu_family(self) -> str:
        """NVIDIA Ampere/Ada/Hopper/Blackwell, AMD CDNA3/CDNA4 or other."""
        return GPUS[self.gpu][0]


def _explain(err: ErrorDetails) -> str:
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, InvalidInputError):
        return str(cause)
    field = ".".join(str(p) for p in err["loc"]) or "row"
    shown = repr(err.get("input"))
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return f"{field}: got {shown}; {err['msg'][0].lower()}{err['msg'][1:]}"


def _parse(model: type[BaseModel], data: object, where: str) -> Any:
    if not isinstance(data, dict):
        raise MeasurementError(f"{where}: got {type(data).__name__}; a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MeasurementError(f"{where}: {_explain(exc.errors()[0])}") from None


def parse_file(doc: object, name: str) -> tuple[Source, list[Measurement]]:
    """Validate one file's content (``{"source": ..., "rows": [...]}``); ``name`` is e.g. ``"dstack.json"``."""
    where = f"measurements/{name}"
    if not isinstance(doc, dict) or set(doc) != {"source", "rows"} or not isinstance(doc["rows"], list):
        raise MeasurementError(f"{where}: got {type(doc).__name__}; an object with 'source' and a list 'rows'")
    source: Source = _parse(Source, doc["source"], f"{where} source")
    stem = name.removesuffix(".json")
    if source.source_id != stem:
        raise MeasurementError(f"{where} source: source_id: got {source.source_id!r}; the file name {stem!r}")
    rows = [_parse(Measurement, row, f"{where} row {i}") for i, row in enumerate(doc["rows"])]
    for i, row in enumerate(rows):
        if row.source_id != stem:
            raise MeasurementError(f"{where} row {i}: source_id: got {row.source_id!r}; {stem!r} (the file)")
    return source, rows


def _read(path: Traversable) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MeasurementError(f"measurements/{path.name} is not valid JSON: {exc}") from None


@lru_cache(maxsize=1)
def _corpus() -> tuple[dict[str, Source], tuple[Measurement, ...]]:
    paths = sorted((p for p in DATA_DIR.iterdir() if p.name.endswith(".json")), key=lambda p: p.name)
    if not paths:
        raise MeasurementError(f"no measurement files in {DATA_DIR}")
    sources: dict[str, Source] = {}
    rows: list[Measurement] = []
    for path in paths:
        source, file_rows = parse_file(_read(path), path.name)
        sources[source.source_id] = source
        rows.extend(file_rows)
    return sources, tuple(rows)


def load_sources() -> dict[str, Source]:
    """Every source of the corpus by id."""
    return dict(_corpus()[0])


def load_measurements() -> list[Measurement]:
    """Every measurement of the corpus, file by file (raises :class:`MeasurementError` on bad data)."""
    return list(_corpus()[1])


def measurements_frame() -> pd.DataFrame:
    """The corpus as a tidy DataFrame: one row per measurement, its fields, then one column per metric key."""
    import pandas as pd

    records = [_record(m) for m in load_measurements()]
    frame = pd.DataFrame.from_records(records)
    fixed = [c for c in records[0] if c not in METRIC_KEYS]
    metrics = sorted(c for c in frame.columns if c in METRIC_KEYS)
    return frame[fixed + metrics]


def _record(m: Measurement) -> dict[str, Any]:
    row = m.model_dump(exclude={"metrics", "extra", "notes"})
    row["gpu_family"] = m.gpu_family
    row["catalog_gpu"] = GPUS[m.gpu][1]
    row["disaggregated"] = bool(m.extra.get("disaggregated", False))
    row["spec_decoding"] = m.extra.get("spec_decoding")
    row["lockstep"] = bool(m.extra.get("lockstep", False))
    row["shared_prefix"] = bool(m.extra.get("shared_prefix", False))
    row["enable_chunked_prefill"] = bool(m.extra.get("enable_chunked_prefill", False))
    row["lengths_uniform_from"] = m.extra.get("lengths_uniform_from")
    row["derived_metrics"] = ",".join(m.extra.get("derived_metrics", []))
    return row | dict(m.metrics)

