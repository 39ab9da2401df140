"""The performance model's default coefficients, fitted on the public measurement corpus and shipped as data.

``calculators/data/performance_fit.toml`` holds one **profile**: a reference set of efficiencies and costs
(the fields of :class:`calculators.perf.roofline.Efficiencies`), compute and memory efficiencies and a factor on
the GPU-side per-layer costs per GPU family, and factors on the per-step software costs per engine generation
(vLLM V0/V1, SGLang, TensorRT-LLM, LMDeploy, ATOM). It also holds the
profiles refitted with each source of the corpus left out, which the accuracy harness uses to score the model on
the source it did not see (docs/performance-model.md §4 and §11). ``benchmarks/fit_performance.py`` writes the file.

A calibration that would put an efficiency above 1 (faster than the datasheet) or a cost below 0 is refused
on load with the field and the reason. Pure: pydantic and the standard library (no NumPy, pandas, Streamlit).
"""
from __future__ import annotations

import datetime as dt
import re
import tomllib
from functools import cache
from importlib.resources import files
from typing import Annotated, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from calculators.errors import InvalidInputError

FIT_FILE = "performance_fit.toml"
M = TypeVar("M", bound=BaseModel)
#: The engine generation a product figure assumes when none is named: vLLM's V1 engine (default since 0.8).
DEFAULT_ENGINE = "vllm-v1"
_FAMILIES = {"Ada Lovelace": "Ada", "Blackwell Ultra": "Blackwell", "CDNA 2": "CDNA2", "CDNA 3": "CDNA3",
             "CDNA 4": "CDNA4"}
#: Each engine's generations: ``(first release after it, generation)`` in release order, then the current one.
_GENERATIONS = {"vllm": (((0, 8), "vllm-v0"), ((0, 11), "vllm-v1-piecewise"), (None, DEFAULT_ENGINE)),
                "sglang": (((0, 5), "sglang-old"), (None, "sglang")),
                "trtllm": (((1, 0), "trtllm-old"), (None, "trtllm"))}
_ENGINES = {"tensorrt-llm": "trtllm", "trt-llm": "trtllm"}


def _efficiency(v: float) -> float:
    if not 0 < v <= 1:
        raise ValueError(f"efficiency {v} is outside (0, 1]: no kernel runs faster than the datasheet peak")
    return v


def _cost(v: float) -> float:
    if v < 0:
        raise ValueError(f"cost {v} is negative: an engine cannot finish its work before starting it")
    return v


def _factor(v: float) -> float:
    if not v > 0:
        raise ValueError(f"overhead_factor {v} is not positive: software costs cannot vanish or turn negative")
    return v


Efficiency = Annotated[float, AfterValidator(_efficiency)]
Cost = Annotated[float, AfterValidator(_cost)]


class ReferenceSet(BaseModel):
    """The efficiencies and costs of GPU families and engines that have no entry of their own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    compute: Efficiency = Field(description="share of dense peak FLOP/s reached by the matmuls")
    memory: Efficiency = Field(description="share of HBM bandwidth reached by weight and KV reads")
    step_overhead_s: Cost = Field(description="fixed cost of one engine step [s]")
    layer_overhead_s: Cost = Field(description="cost per layer per step: launches and small kernels [s]")
    sequence_overhead_s: Cost = Field(description="cost per running sequence per step [s]")
    allreduce_latency_s: Cost = Field(description="latency of one tensor-parallel all-reduce [s]")
    pcie_allreduce_latency_s: Cost = Field(description="latency of one tensor-parallel all-reduce between GPUs "
                                           "joined by PCIe only (NCCL, not the custom all-reduce) [s]")
    pcie_link_efficiency: Efficiency = Field(description="share of the PCIe link's bandwidth a tensor-parallel "
                                             "all-reduce between GPUs joined by PCIe only reaches")
    attention_halving_context_tokens: float = Field(gt=0, description="context where decode attention's "
                                                    "bandwidth efficiency halves [tokens]")
    moe_small_batch_penalty: Cost = Field(description="extra expert-read time at no tokens per expert (×)")
    moe_layer_overhead_s: Cost = Field(description="cost per MoE layer per step: routing, permutation [s]")
    moe_expert_efficiency: Efficiency = Field(description="expert (grouped GEMM) reads' share of the dense bandwidth")
    mla_attention: Efficiency = Field(description="MLA decode kernel efficiency relative to plain KV reads")
    request_overhead_s: Cost = Field(description="latency each request spends outside the engine's steps: "
                                     "API server, tokenisation, admission, first chunk streamed [s]")
    prefill_layer_overhead_s: Cost = Field(description="cost per layer of a step with prompt tokens, run outside "
                                           "the captured graphs [s]")
    prefill_moe_layer_overhead_s: Cost = Field(description="cost per MoE layer of a step with prompt tokens, run "
                                               "outside the captured graphs [s]")
    fp8_compute_share: Efficiency = Field(description="8-bit (FP8, INT8) matmuls' compute efficiency as a share "
                                          "of the family's 16-bit one (of the 8-bit peak)")
    fp4_compute_share: Efficiency = Field(description="4-bit (NVFP4, MXFP4) matmuls' compute efficiency as a "
                                          "share of the family's 16-bit one (of the 4-bit peak)")
    moe_compute_share: Efficiency = Field(1.0, description="expert (grouped GEMM) matmuls' compute efficiency as a "
                                          "share of the dense matmuls' (1: none lost)")
    attention_compute_share: Efficiency = Field(1.0, description="attention kernels' compute efficiency as a share "
                                                "of the 16-bit linear matmuls' (1: none lost)")


class FamilyEntry(BaseModel):
    """Compute and memory efficiency of one GPU family (e.g. ``"AMD CDNA3"``), and a factor on the per-layer
    costs its GPUs run themselves (:data:`GPU_SIDE_COSTS`): the short kernels between the matmuls of a captured
    decode step run at the family's clocks and kernel-launch latency, with its kernel library."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    compute: Efficiency
    memory: Efficiency
    overhead_factor: Annotated[float, AfterValidator(_factor)] = 1.0


class FactorEntry(BaseModel):
    """A factor on the per-step software costs (fixed, per layer, per sequence) of an engine generation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    overhead_factor: Annotated[float, AfterValidator(_factor)]


class Profile(BaseModel):
    """One fitted set: the reference and its per-family and per-engine entries."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reference: ReferenceSet
    family: dict[str, FamilyEntry] = {}
    engine: dict[str, FactorEntry] = {}


class HeldOut(BaseModel):
    """The profile refitted without one source's rows (leave-one-source-out)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(min_length=1)
    profile: Profile


class HeldOutFamily(BaseModel):
    """The profile refitted without one GPU family's rows (leave one family out): it has no entry for the
    family, so the family's GPUs take its reference set, as a GPU of a family without runs does."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: str = Field(min_length=1)
    profile: Profile

    @model_validator(mode="after")
    def _unseen(self) -> HeldOutFamily:
        if self.family in self.profile.family:
            raise ValueError(f"the refit without {self.family} has an entry for {self.family}")
        return self


class FitFile(BaseModel):
    """``performance_fit.toml``: provenance, the shipped profile and the held-out refits (one per source left
    out, written by ``benchmarks/fit_performance.py``; one per GPU family left out, by
    ``benchmarks/family_holdout.py --write``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fitted: dt.date
    corpus: str = Field(min_length=1)
    method: str = Field(min_length=1)
    script: str = Field(min_length=1)
    shipped: Profile
    held_out: list[HeldOut] = []
    held_out_family: list[HeldOutFamily] = []

    def without(self, source: str) -> Profile | None:
        """The profile fitted without ``source``, None when the file has none."""
        return next((h.profile for h in self.held_out if h.source == source), None)

    def without_family(self, family: str) -> Profile | None:
        """The profile fitted without GPU family ``family``'s rows, None when the file has none."""
        return next((h.profile for h in self.held_out_family if h.family == family), None)


def parse_toml_as(schema: type[M], text: str, name: str) -> M:
    """``text`` (TOML) validated by ``schema``; a bad value raises with the file ``name``, the field and why."""
    try:
        return schema.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as e:
        raise InvalidInputError(name, str(e), "TOML text") from e
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise InvalidInputError(f"{name}: {field}", err.get("input"), err["msg"]) from e


def parse_fit_file(text: str) -> FitFile:
    """Validate a fit file's TOML text; a bad value names its field and the reason."""
    return parse_toml_as(FitFile, text, FIT_FILE)


@cache
def load_fit() -> FitFile:
    """The shipped fit file, validated once."""
    return parse_fit_file(files("calculators.data").joinpath(FIT_FILE).read_text(encoding="utf-8"))


def gpu_family(vendor: str, architecture: str) -> str:
    """``"NVIDIA Hopper"``, ``"AMD CDNA3"``: the family label the corpus and the fit use."""
    return f"{vendor} {_FAMILIES.get(architecture, architecture)}"


def fitted_on(profile: Profile, vendor: str, architecture: str) -> str | None:
    """The GPU family whose runs fitted a GPU's efficiencies, as :func:`resolved` picks them (``"NVIDIA Hopper"``);
    None where the family has no entry (no run of it in the corpus: it takes the reference set, fitted on every
    family's runs)."""
    family = gpu_family(vendor, architecture)
    return family if family in profile.family else None


def engine_generation(engine: str, version: object = None) -> str:
    """The engine key of the fit: vLLM split at 0.8, where V1 became the default engine
    (https://blog.vllm.ai/2025/01/27/v1-alpha-release.html, default from v0.8.0), or where the version says the
    run fell back to the V0 engine (0.8 to 0.10 did for features V1 did not support yet, such as pipeline
    parallelism under the default executor: https://github.com/vllm-project/vllm/pull/18915), and again at 0.11,
    whose V1 captures whole decode steps in CUDA graphs by default where 0.8 to 0.10 captured the pieces between
    the attention kernels and launched those one by one (``FULL_AND_PIECEWISE`` default: v0.11.0 release notes,
    https://github.com/vllm-project/vllm/releases/tag/v0.11.0) as ``vllm-v1-piecewise``; SGLang
    before 0.5 and TensorRT-LLM before 1.0 (the PyTorch-backend rewrite) as ``sglang-old`` and ``trtllm-old``;
    others by name. The release is :func:`engine_release`'s reading of ``version``."""
    name = _ENGINES.get(engine.lower(), engine.lower())
    found = engine_release(engine, version)
    release = found[:2] if found else None
    if name == "vllm" and re.search(r"\bV0 engine\b", str(version or ""), re.I):
        return "vllm-v0"
    for until, generation in _GENERATIONS.get(name, ((None, name),)):
        if until is None or (release is not None and release < until):
            return generation
    return name


def engine_release(engine: str, version: object = None) -> tuple[int, int, int] | None:
    """The engine's release ``(X, Y, Z)`` a version string names: the first ``X.Y[.Z]`` after the engine's name
    (``rocm/vllm:rocm6.4.1_vllm_0.9.1`` is vLLM 0.9.1, not 6.4.1), else the first in the string (``Z`` 0
    where not given); None where there is none."""
    name = _ENGINES.get(engine.lower(), engine.lower())
    text = str(version or "")
    found = (re.search(rf"{re.escape(name)}\D{{0,3}}?(\d+)\.(\d+)(?:\.(\d+))?", text, re.I)
             or re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text))
    return (int(found[1]), int(found[2]), int(found[3] or 0)) if found else None


#: The per-step software costs, which the engine's factor scales.
SOFTWARE_COSTS = ("step_overhead_s", "layer_overhead_s", "sequence_overhead_s", "moe_layer_overhead_s",
                  "prefill_layer_overhead_s", "prefill_moe_layer_overhead_s")
#: The software costs the GPU runs itself (the short kernels between the matmuls of a captured decode step,
#: the MoE layers' routing and permutation), which the family's factor scales; the others are the host's
#: (scheduling, per-request bookkeeping, the launches of a step run outside the captured graphs).
GPU_SIDE_COSTS = ("layer_overhead_s", "moe_layer_overhead_s")
#: The share of the 16-bit compute efficiency that applies to each narrower compute dtype (absent: 1).
COMPUTE_SHARES = {"fp8": "fp8_compute_share", "int8": "fp8_compute_share", "fp4": "fp4_compute_share"}


def resolved(profile: Profile, vendor: str, architecture: str, engine: str,
             compute_dtype: str = "bf16") -> dict[str, float]:
    """The efficiencies and costs for one GPU, engine and compute dtype: the family's efficiencies where it has
    an entry, the dtype's share of the compute efficiency for 8- and 4-bit matmuls as ``compute_dtype_share``
    (they reach less of their doubled and quadrupled peaks than 16-bit ones reach of theirs; 1 for 16-bit), the
    software costs times the engine's factor, and the GPU-side ones times the family's too
    (docs/performance-model.md §4)."""
    ref = profile.reference.model_dump()
    shares = {key: ref.pop(key) for key in set(COMPUTE_SHARES.values())}
    fam = profile.family.get(gpu_family(vendor, architecture))
    if fam is not None:
        ref["compute"], ref["memory"] = fam.compute, fam.memory
    ref["compute_dtype_share"] = shares.get(COMPUTE_SHARES.get(compute_dtype, ""), 1.0)
    factor = eng.overhead_factor if (eng := profile.engine.get(engine)) is not None else 1.0
    gpu_side = fam.overhead_factor if fam is not None else 1.0
    for key in SOFTWARE_COSTS:
        ref[key] *= factor * (gpu_side if key in GPU_SIDE_COSTS else 1.0)
    return ref


__all__ = ["COMPUTE_SHARES", "DEFAULT_ENGINE", "FIT_FILE", "GPU_SIDE_COSTS", "SOFTWARE_COSTS", "FactorEntry",
           "FamilyEntry", "FitFile", "HeldOut", "HeldOutFamily",
           "Profile", "ReferenceSet", "engine_generation", "gpu_family", "load_fit", "parse_fit_file", "parse_toml_as",
           "fitted_on", "resolved"]
