"""Session state: the catalogs, this session's custom GPUs and models, and the computed result.

Custom specs live in ``st.session_state`` only (never a process-wide cache), so one user's custom
GPU never shows up in another user's session.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from app.ui import keys
from calculators.errors import InvalidInputError
from calculators.scenario import Scenario
from calculators.specs.catalog import get_gpu, get_model, load_gpus, load_models
from calculators.specs.schema import GPUSpec, ModelSpec


@dataclass
class Computed:
    """What every view reads: the scenario, its specs, the capacity document, or the error."""

    scenario: Scenario
    model: ModelSpec | None = None
    gpu: GPUSpec | None = None
    result: object | None = None
    doc: dict | None = None
    error: InvalidInputError | None = None
    messages: list[str] = field(default_factory=list)
    error_field: str | None = None  # a field whose message is a warning (the rest still computed)


def custom_gpus() -> dict[str, GPUSpec]:
    return st.session_state.setdefault(keys.CUSTOM_GPUS, {})


def custom_models() -> dict[str, tuple[ModelSpec, dict]]:
    return st.session_state.setdefault(keys.CUSTOM_MODELS, {})


def add_model(spec: ModelSpec, config: dict) -> ModelSpec:
    """Keep ``spec`` and its ``config.json`` (named by its id, so the permalink's ``cmodel`` rebuilds it) as
    one of this session's models; a model already kept under that id stays as it was."""
    custom_models().setdefault(spec.id, (spec, {**config, "_name_or_path": spec.id}))
    return spec


def add_hub_model(repo_id: str) -> ModelSpec:
    """Fetch ``repo_id``'s ``config.json`` from the Hugging Face Hub (or its cache) and keep the model for this
    session; raises :class:`InvalidInputError` with the reason (unknown, gated, offline) where it cannot."""
    from calculators.specs.hf_config import model_from_config
    from calculators.specs.hf_hub import config_from_hub
    config, source = config_from_hub(repo_id)
    return add_model(model_from_config(config, id=repo_id, source=source), config)


def gpu_options() -> list[str]:
    return list(load_gpus()) + [k for k in custom_gpus() if k not in load_gpus()]


def model_options() -> list[str]:
    """Each catalog id followed by the repo names it is served under (its ``org/name`` aliases: the Instruct
    variant, older names), so that the picker's search finds any of them and ``vllm serve`` shows the name
    picked, as the CLI does; then other names a link used, then this session's custom models."""
    names = [n for m in load_models().values() for n in (m.id, *(a for a in m.aliases if "/" in a))]
    known = set(names)
    return names + [a for a in st.session_state.get(keys.MODEL_ALIASES, []) if a not in known] + [
        k for k in custom_models() if k not in known]


def served_name(scenario: Scenario, model: ModelSpec) -> str:
    return model.id if scenario.model in custom_models() else scenario.model


def resolve_gpu(name: str) -> GPUSpec:
    if name in custom_gpus():
        return custom_gpus()[name]
    return get_gpu(name)


def resolve_model(name: str) -> ModelSpec:
    if name in custom_models():
        return custom_models()[name][0]
    return get_model(name)


def compute(scenario: Scenario) -> Computed:
    """Run the calculators for a scenario (memoised on the scenario and the specs, see :mod:`app.ui.memo`)."""
    from app.ui.memo import memoised
    out = Computed(scenario)
    try:
        out.model = resolve_model(scenario.model)
        out.gpu = resolve_gpu(scenario.gpu)
        served = served_name(scenario, out.model)
        key = (scenario.model_copy(update={"calibration": None}), out.model, out.gpu, served)
        value = memoised("capacity", key, lambda: _capacity(scenario, out.model, out.gpu, served))
    except InvalidInputError as exc:
        out.error = exc
        return out
    if isinstance(value, InvalidInputError):
        out.error = value
    else:
        out.result, out.doc, messages, out.error_field = value
        out.messages = list(messages)
    return out


def _capacity(scenario: Scenario, model: ModelSpec, gpu: GPUSpec,
              served: str) -> tuple[object, dict, tuple[str, ...], str | None] | InvalidInputError:
    """(result, document, messages, error field) for a scenario, or the input error (kept, so that a
    rerun with the same wrong input does not compute it again). Shared: the caller must not mutate it."""
    from calculators.report.capacity import capacity_document
    from calculators.vllm.capacity import vllm_capacity
    try:
        result = vllm_capacity(model, gpu=gpu, **scenario.capacity_kwargs())
        dp = scenario.data_parallel_size
        try:
            doc = capacity_document(model, result, mean_len=scenario.length_mix_mean, p95_len=scenario.p95_len,
                                    served_name=served, data_parallel_size=dp)
        except InvalidInputError as exc:  # only the length mix is wrong: show the rest without advice
            if exc.field not in ("mean_len", "p95_len"):
                raise
            return (result, capacity_document(model, result, served_name=served, data_parallel_size=dp),
                    (str(exc),), exc.field)
    except InvalidInputError as exc:
        return exc
    return result, doc, (), None


def computed() -> Computed:
    """The result of this run's sidebar inputs (set by the entry point)."""
    return st.session_state[keys.COMPUTED]


def compute_detached(scenario: Scenario, model: ModelSpec, gpu: GPUSpec) -> dict | InvalidInputError:
    """A capacity document for a variant of the scenario (version selector, log check)."""
    from calculators.report.capacity import capacity_document
    from calculators.vllm.capacity import vllm_capacity
    try:
        result = vllm_capacity(model, gpu=gpu, **scenario.capacity_kwargs())
        return capacity_document(model, result, mean_len=scenario.length_mix_mean, p95_len=scenario.p95_len,
                                 served_name=served_name(scenario, model),
                                 data_parallel_size=scenario.data_parallel_size)
    except InvalidInputError as exc:
        return exc
