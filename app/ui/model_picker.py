"""The sidebar's model picker: search the catalog by id or by the repo names a model is served under (its
Instruct variant, older names), or add a model by its Hugging Face id or by its ``config.json``, without
leaving the sidebar.

A model that cannot be fetched or read leaves the scenario as it was and says why next to the input.
"""
from __future__ import annotations

from pathlib import PurePath

import streamlit as st

from app.ui import keys, state
from calculators.errors import InvalidInputError
from calculators.specs.schema import ModelSpec

HUB_ID_KEY = "model_hub_id"
UPLOAD_KEY = "model_upload"


def _use(spec: ModelSpec) -> None:
    """Pick a model this session now holds (called from a widget callback) and say so."""
    st.session_state["model"] = spec.id
    st.session_state[keys.MODEL_PICKER_MESSAGE] = ("success", f"Added {spec.id} ({spec.num_hidden_layers} layers, "
                                                   f"{spec.attention_type}) for this session.")


def _fail(what: str, exc: InvalidInputError) -> None:
    st.session_state[keys.MODEL_PICKER_MESSAGE] = ("error", f"{what} — {exc}. The scenario is unchanged.")


def _fetch() -> None:
    """Callback of "Fetch": a catalog name is simply picked; anything else is looked up on the Hub."""
    name = str(st.session_state.get(HUB_ID_KEY) or "").strip()
    if not name:
        _fail("No model added", InvalidInputError("Hugging Face id", name, "an id such as google/gemma-3-27b-it"))
        return
    try:
        st.session_state["model"] = state.resolve_model(name).id
        st.session_state[keys.MODEL_PICKER_MESSAGE] = ("success", f"{name} is in the catalog: picked.")
        return
    except InvalidInputError:
        pass
    try:
        _use(state.add_hub_model(name))
    except InvalidInputError as exc:
        _fail(f"{name} could not be added", exc)


def model_from_upload(filename: str, raw: bytes) -> tuple[ModelSpec, dict]:
    """``(spec, config)`` of an uploaded ``config.json``, named by its ``_name_or_path``, else by the file's
    name (``org__name.json`` → ``org/name``); a file called ``config.json`` gives no name, so its
    ``model_type`` and layer count do (``uploaded/llama-32L``)."""
    from calculators.specs.hf_config import model_from_config, parse_config_json
    cfg = parse_config_json(raw)
    stem = PurePath(filename).stem
    fallback = None if stem.lower() == "config" else stem.replace("__", "/")
    shape = f"uploaded/{cfg.get('model_type') or 'model'}-{cfg.get('num_hidden_layers', '')}L"
    spec = model_from_config(cfg, id=str(cfg.get("_name_or_path") or fallback or shape))
    return spec, cfg


def _upload() -> None:
    """Callback of the uploader: add the uploaded model and pick it."""
    up = st.session_state.get(UPLOAD_KEY)
    if up is None:
        return
    try:
        spec, cfg = model_from_upload(up.name, up.getvalue())
    except InvalidInputError as exc:
        _fail(f"{up.name} could not be read", exc)
        return
    _use(state.add_model(spec, cfg))


def render(sb) -> str:
    """Draw the picker in the sidebar ``sb``; return the chosen model's id (or name)."""
    from app.ui.inputs import BIND, index_of  # the sidebar's URL binding
    from calculators.scenario import Scenario
    options = state.model_options()
    value = sb.selectbox("Model", options, key="model",
                         help="type any part of a name: the catalog id or the repo name you serve (an Instruct "
                              "variant, an older Meta- name); the id below is what the sizing uses",
                         **index_of("model", options, Scenario().model), **BIND)
    with sb.expander("Add a model: Hugging Face id or config.json"):
        st.text_input("Hugging Face id", key=HUB_ID_KEY, placeholder="google/gemma-3-27b-it",
                      help="fetches config.json from the Hub (HF_TOKEN for gated repos) and caches it")
        st.button("Fetch and use", key="model_fetch", on_click=_fetch)
        st.file_uploader("…or upload config.json", type=["json"], key=UPLOAD_KEY, on_change=_upload,
                         max_upload_size=2)
    msg = st.session_state.pop(keys.MODEL_PICKER_MESSAGE, None)
    if msg:
        getattr(sb, msg[0])(msg[1])
    return value


__all__ = ["model_from_upload", "render"]
