"""What public runs of the same setup measured, beside the model's figure: the held-out error of the corpus rows
that ran the same model on the same GPUs in the same layout with the same weights, at prompts of the same size.

The 80 % bands (:mod:`calculators.perf.bands`) say how far off the model comes out on a setup it has not seen, over
every setup. Where the public corpus ran *this* setup, its own rows say more: DeepSeek-R1 in FP8 on eight B200s at
prompts of 3,750–7,372 tokens measured a TTFT 1.9 × the model's at the median, at the top of the band that every
setup shares. Each entry is one (model, GPU, tensor- and pipeline-parallel sizes, data-parallel attention or not,
weight format, prompt size, metric): its rows' median signed error ``predicted / measured − 1`` with every row
predicted by the coefficients fitted without its source (leave-one-source-out, as ``llmcap accuracy`` reports it,
docs/performance-model.md §11), the 10th and 90th percentiles where there are :data:`MIN_ROWS_FOR_SPREAD` rows or
more, and the sources, engines, prompt lengths and loads they cover. The entries are written by
``benchmarks/published_runs.py`` into ``calculators/data/published_runs.toml`` (validated on load) from the shipped
fit; they describe the shipped model, not a calibration.

Where the corpus ran no such setup, the next thing known is how the model fares on the GPU's family: a second kind
of entry (:class:`FamilyRuns`) summarises the same held-out errors over every row on a GPU family, whatever the
model or layout. The accuracy report's per-family bias of the held-out rows is that entry's median (on the Ada
GPUs, TTFT 24 % high: the model is the more pessimistic there; on Blackwell, 15 % low).

Pure: pydantic and NumPy at import; pandas only in the functions that build the entries, for the script.
"""
from __future__ import annotations

import bisect
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, computed_field

from calculators.memory.weights import resolve_quantization
from calculators.perf.coefficients import gpu_family, parse_toml_as
from calculators.specs.catalog import get_model
from calculators.specs.schema import GPUSpec, ModelSpec

if TYPE_CHECKING:
    import pandas as pd

PUBLISHED_RUNS_FILE = "published_runs.toml"
PROMPT_BIN_EDGES = (2048, 8192)
"""Prompt sizes [tokens] that split the entries: up to 2,048, up to 8,192, beyond. A prompt of 7,372 tokens and
one of 922 cost different terms (attention's ``P²``, the experts' matmuls at many tokens), and the corpus' largest
source runs both."""
METRIC_ORDER = ("ttft", "tpot", "throughput")
"""The order a setup's entries are shown in."""
MIN_ROWS_FOR_SPREAD = 5
"""Rows an entry needs before its 10th–90th percentile errors are stated."""


class HeldOutRatios:
    """The measured ÷ model ratios of a group of held-out rows, from its ``median_error``, ``low_error`` and
    ``high_error`` (held-out ``predicted / measured − 1``: the median and the 10th and 90th percentiles)."""

    if TYPE_CHECKING:  # the fields of the models that mix it in (declared there, in their own order)
        median_error: float
        low_error: float | None
        high_error: float | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ratio(self) -> float:
        """Measured ÷ the model's figure at the median, ``1 / (1 + median_error)`` [×]."""
        return 1 / (1 + self.median_error)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ratio_low(self) -> float | None:
        """Measured ÷ the model's figure at the 10th percentile of the ratio (the 90th of the error) [×]."""
        return None if self.high_error is None else 1 / (1 + self.high_error)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ratio_high(self) -> float | None:
        """The 90th percentile of the ratio (the 10th of the error) [×]."""
        return None if self.low_error is None else 1 / (1 + self.low_error)


class PublishedRun(HeldOutRatios, BaseModel):
    """One setup's public rows against the model, for one metric (errors as fractions, held out)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="catalog model id")
    gpu: str = Field(min_length=1, description="catalog GPU id")
    tensor_parallel_size: int = Field(ge=1)
    pipeline_parallel_size: int = Field(ge=1)
    dp_attention: bool = Field(description="attention data-parallel across the tensor-parallel GPUs")
    weights: str = Field(min_length=1, description="weight format in use (resolve_quantization)")
    prompt_bin: int = Field(ge=0, le=len(PROMPT_BIN_EDGES), description="index into PROMPT_BIN_EDGES' bins")
    metric: str = Field(pattern="^(tpot|ttft|throughput)$")
    rows: int = Field(ge=1)
    sources: tuple[str, ...] = Field(min_length=1, description="publishers, as the corpus names them")
    engines: tuple[str, ...] = Field(min_length=1)
    input_len_min: int = Field(ge=1)
    input_len_max: int = Field(ge=1)
    in_flight_min: float = Field(gt=0, description="fewest requests in flight among the rows (the model's, at "
                                 "their loads: a closed loop's concurrency, a batch, an open loop's mean)")
    in_flight_max: float = Field(gt=0)
    median_error: float = Field(gt=-1, description="held-out predicted / measured − 1, median over the rows")
    low_error: float | None = Field(default=None, gt=-1, description="10th percentile; None below MIN_ROWS_FOR_SPREAD")
    high_error: float | None = Field(default=None, gt=-1, description="90th percentile")


class FamilyRuns(HeldOutRatios, BaseModel):
    """Every public row on one GPU family against the model, for one metric (errors as fractions, held out): what
    is known of the model's error on a setup the corpus did not run, on GPUs of this family."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu_family: str = Field(min_length=1, description="the fit's family label, e.g. 'NVIDIA Hopper'")
    metric: str = Field(pattern="^(tpot|ttft|throughput)$")
    rows: int = Field(ge=1)
    models: int = Field(ge=1, description="distinct catalog models among the rows")
    sources: tuple[str, ...] = Field(min_length=1, description="publishers, as the corpus names them")
    engines: tuple[str, ...] = Field(min_length=1)
    median_error: float = Field(gt=-1, description="held-out predicted / measured − 1, median over the rows")
    low_error: float | None = Field(default=None, gt=-1, description="10th percentile; None below MIN_ROWS_FOR_SPREAD")
    high_error: float | None = Field(default=None, gt=-1, description="90th percentile")


class PublishedRunsFile(BaseModel):
    """The file: when and from which fit it was written, and its entries: per setup (``run``) and per GPU family
    (``family``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    written: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    fit: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="date of the fit whose held-out errors these are")
    corpus: str = Field(min_length=1)
    method: str = Field(min_length=1)
    run: tuple[PublishedRun, ...] = ()
    family: tuple[FamilyRuns, ...] = ()


def prompt_bin(input_len: float) -> int:
    """The bin of :data:`PROMPT_BIN_EDGES` that holds a prompt of ``input_len`` tokens (edges inclusive)."""
    return bisect.bisect_left(PROMPT_BIN_EDGES, input_len)


def prompt_bin_label(index: int) -> str:
    """A bin of :data:`PROMPT_BIN_EDGES` in words: "≤ 2,048", "2,049–8,192", "> 8,192" [tokens]."""
    edges = PROMPT_BIN_EDGES
    if index == 0:
        return f"≤ {edges[0]:,}"
    return f"> {edges[-1]:,}" if index == len(edges) else f"{edges[index - 1] + 1:,}–{edges[index]:,}"


@cache
def load_published_runs() -> PublishedRunsFile:
    """The shipped file, validated (a bad entry is refused with its field)."""
    text = files("calculators.data").joinpath(PUBLISHED_RUNS_FILE).read_text(encoding="utf-8")
    return parse_toml_as(PublishedRunsFile, text, PUBLISHED_RUNS_FILE)


def published_runs(model: ModelSpec, gpu_id: str, tensor_parallel_size: int, quantization: str | None,
                   input_len: float, *, pipeline_parallel_size: int = 1,
                   dp_attention: bool = False) -> list[PublishedRun]:
    """The entries of ``model`` on ``tensor_parallel_size`` × ``pipeline_parallel_size`` × ``gpu_id`` (attention
    data-parallel or not) with these weights at prompts the size of ``input_len``, one per metric the corpus
    measured, TTFT, TPOT, then throughput (none where it ran no such setup)."""
    key = (model.id, gpu_id, tensor_parallel_size, pipeline_parallel_size, dp_attention,
           resolve_quantization(model, quantization), prompt_bin(input_len))
    found = [e for e in load_published_runs().run
             if (e.model, e.gpu, e.tensor_parallel_size, e.pipeline_parallel_size, e.dp_attention, e.weights,
                 e.prompt_bin) == key]
    return sorted(found, key=lambda e: METRIC_ORDER.index(e.metric))


def family_runs(gpu: GPUSpec) -> list[FamilyRuns]:
    """The entries of ``gpu``'s family, one per metric the corpus measured on it, TTFT, TPOT, then throughput
    (none for a family without public runs)."""
    family = gpu_family(gpu.vendor, gpu.architecture)
    found = [e for e in load_published_runs().family if e.gpu_family == family]
    return sorted(found, key=lambda e: METRIC_ORDER.index(e.metric))


def _spread(errors: pd.Series) -> tuple[float, float | None, float | None]:
    """The median and, from :data:`MIN_ROWS_FOR_SPREAD` rows, the 10th and 90th percentiles of held-out errors."""
    if len(errors) < MIN_ROWS_FOR_SPREAD:
        return float(errors.median()), None, None
    return float(errors.median()), float(errors.quantile(0.1)), float(errors.quantile(0.9))


def family_run_entries(loso: pd.DataFrame, publishers: dict[str, str]) -> list[FamilyRuns]:
    """The entries of held-out predictions ``loso`` (as :func:`published_run_entries` takes them) grouped by GPU
    family and metric."""
    out = []
    for (family, metric), g in loso.groupby(["gpu_family", "metric"], sort=True):
        median, low, high = _spread(g["loso_error"].astype(float))
        out.append(FamilyRuns(gpu_family=family, metric=metric, rows=len(g), models=int(g["model_id"].nunique()),
                              sources=tuple(sorted({publishers[s] for s in g["source_id"]})),
                              engines=tuple(sorted(set(g["engine"]))), median_error=median, low_error=low,
                              high_error=high))
    return out


def published_run_entries(loso: pd.DataFrame, publishers: dict[str, str]) -> list[PublishedRun]:
    """The entries of held-out predictions ``loso`` (:func:`calculators.perf.accuracy.loso_rows`' frame: one row
    per compared row and metric, ``loso_error`` its held-out signed error), grouped by setup, prompt bin and
    metric; ``publishers`` names each source."""
    import pandas as pd
    f = loso.assign(weights=[resolve_quantization(get_model(m), None if pd.isna(q) else str(q))
                             for m, q in zip(loso["model_id"], loso["quantization"], strict=True)],
                    prompt_bin=[prompt_bin(i) for i in loso["input_len"]])
    out = []
    keys = ["model_id", "catalog_gpu", "tp", "pp", "dp_attention", "weights", "prompt_bin", "metric"]
    for (model, gpu, tp, pp, dp, weights, pbin, metric), g in f.groupby(keys, sort=True):
        median, low, high = _spread(g["loso_error"].astype(float))
        out.append(PublishedRun(
            model=model, gpu=gpu, tensor_parallel_size=int(tp), pipeline_parallel_size=int(pp), dp_attention=bool(dp),
            weights=weights, prompt_bin=int(pbin), metric=metric,
            rows=len(g),
            sources=tuple(sorted({publishers[s] for s in g["source_id"]})), engines=tuple(sorted(set(g["engine"]))),
            input_len_min=int(g["input_len"].min()), input_len_max=int(g["input_len"].max()),
            in_flight_min=float(g["predicted_batch"].min()), in_flight_max=float(g["predicted_batch"].max()),
            median_error=median, low_error=low, high_error=high))
    return out


__all__ = ["METRIC_ORDER", "MIN_ROWS_FOR_SPREAD", "PROMPT_BIN_EDGES", "PUBLISHED_RUNS_FILE", "FamilyRuns",
           "HeldOutRatios", "PublishedRun", "PublishedRunsFile", "family_run_entries", "family_runs",
           "load_published_runs", "prompt_bin", "prompt_bin_label", "published_run_entries", "published_runs"]
