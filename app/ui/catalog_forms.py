"""Forms that add a custom GPU or model to this session (validated; errors shown beside them)."""
from __future__ import annotations

import streamlit as st

from app.ui import state
from calculators.errors import InvalidInputError


def _select(key: str, value: str) -> None:
    st.session_state[key] = value


def _use_button(kind: str, ident: str) -> None:
    st.button(f"Use {ident} in the scenario", key=f"use_{kind}_{ident}", on_click=_select, args=(kind, ident))


def gpu_form() -> None:
    with st.form("custom_gpu_form"):
        st.markdown("**Custom GPU**")
        name = st.text_input("Name (becomes its id)", key="cg_name")
        c1, c2, c3 = st.columns(3)
        mem = c1.number_input("Total memory [GiB]", value=0.0, step=1.0, key="cg_mem")
        bw = c2.number_input("Memory bandwidth [GB/s]", value=1000.0, step=100.0, key="cg_bw")
        tf = c3.number_input("Dense bf16 [TFLOP/s]", value=100.0, step=10.0, key="cg_tflops")
        submitted = st.form_submit_button("Add GPU")
    if submitted:
        from calculators.scenario import custom_gpu
        try:
            if name.strip() in state.gpu_options() and name.strip() not in state.custom_gpus():
                raise InvalidInputError("gpu name", name, "a name not already in the catalog")
            g = custom_gpu(name, mem, memory_bandwidth_gb_per_s=bw, bf16_tflop_per_s=tf)
        except InvalidInputError as exc:
            st.error(f"GPU not added — {exc}")
        else:
            state.custom_gpus()[g.id] = g
            st.success(f"Added GPU {g.id} ({g.memory_gib:.2f} GiB) for this session.")
    for gid in state.custom_gpus():
        _use_button("gpu", gid)


def model_form() -> None:
    with st.form("custom_model_form"):
        st.markdown("**Custom model (Llama-style dense decoder)**")
        mid = st.text_input("Id", key="cm_id")
        c = st.columns(4)
        nums = {
            "hidden_size": c[0].number_input("hidden_size", 1, 1_000_000, 4096, key="cm_hidden"),
            "num_hidden_layers": c[1].number_input("num_hidden_layers", 1, 10_000, 32, key="cm_layers"),
            "num_attention_heads": c[2].number_input("num_attention_heads", 1, 10_000, 32, key="cm_heads"),
            "num_key_value_heads": c[3].number_input("num_key_value_heads", 1, 10_000, 8, key="cm_kv"),
            "head_dim": c[0].number_input("head_dim (0 = hidden/heads)", 0, 10_000, 0, key="cm_head_dim"),
            "intermediate_size": c[1].number_input("intermediate_size", 0, 10_000_000, 14336, key="cm_ffn"),
            "vocab_size": c[2].number_input("vocab_size", 1, 10_000_000, 128256, key="cm_vocab"),
            "max_position_embeddings": c[3].number_input("max_position_embeddings [tokens]", 1, 100_000_000, 131072,
                                                         key="cm_maxpos")}
        submitted = st.form_submit_button("Add model")
    if submitted:
        from calculators.scenario import config_from_fields
        from calculators.specs.hf_config import model_from_config
        try:
            if not mid.strip():
                raise InvalidInputError("id", mid, "a non-empty id")
            cfg = config_from_fields(id=mid.strip(), **{k: int(v) for k, v in nums.items()})
            m = model_from_config(cfg, id=mid.strip())
        except InvalidInputError as exc:
            st.error(f"Model not added — {exc}")
        else:
            state.custom_models()[m.id] = (m, cfg)
            st.success(f"Added model {m.id} for this session.")


def config_upload() -> None:
    st.markdown("**…or upload a Hugging Face config.json** (also in the sidebar, under the model)")
    up = st.file_uploader("config.json", type=["json"], key="cm_upload", max_upload_size=2)
    if up is not None:
        from app.ui.model_picker import model_from_upload
        try:
            m, cfg = model_from_upload(up.name, up.getvalue())
        except InvalidInputError as exc:
            st.error(f"{up.name} is not a usable config.json — {exc}")
        else:
            state.add_model(m, cfg)
            st.success(f"Model {m.id} ({m.attention_type}, {m.num_hidden_layers} layers) is available in this session.")
    for mid in state.custom_models():
        _use_button("model", mid)
