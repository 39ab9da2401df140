"""Catalog: browse GPUs and models (every field, unit, source) and add custom ones for this session."""
from __future__ import annotations

import streamlit as st

from app.ui import catalog_forms, state
from calculators.specs.catalog import load_gpus, load_models
from calculators.units import GB, TFLOP, GiB


def render() -> None:
    """Draw the page."""
    st.title("Catalog")
    tab_gpu, tab_model, tab_custom = st.tabs(["GPUs", "Models", "Add a custom GPU or model"])
    with tab_gpu:
        gpus = {**load_gpus(), **state.custom_gpus()}
        query = st.text_input("Filter GPUs (id, name, vendor, architecture)", key="gpu_filter")
        vendors = sorted({g.vendor for g in gpus.values()})
        chosen = st.multiselect("Vendor", vendors, key="gpu_vendor")
        rows = []
        for g in gpus.values():
            text = " ".join([g.id, g.name, g.vendor, g.architecture, *g.aliases]).lower()
            if (query and query.lower() not in text) or (chosen and g.vendor not in chosen):
                continue
            row = {"id": g.id, "name": g.name, "vendor": g.vendor, "architecture": g.architecture,
                   "memory_gib_reported": g.memory_gib, "memory_gb_marketed": g.memory_gb_marketed,
                   "memory_bandwidth_gb_per_s": g.memory_bandwidth_bytes_per_s / GB}
            row.update({f"{k}_dense_tflop_per_s": v / TFLOP for k, v in g.peak_flop_per_s.items()})
            row.update({"scale_up_link": g.scale_up_link,
                        "scale_up_gb_per_s_per_direction": g.scale_up_bytes_per_s_per_direction / GB,
                        "gpus_per_node": g.gpus_per_node, "tdp_w": g.tdp_w,
                        "usd_per_gpu_hour_min": min((p.usd_per_gpu_hour for p in g.prices), default=None),
                        "aliases": ", ".join(g.aliases), "memory_note": g.memory_note, "source": g.source,
                        "as_of": g.as_of, "unverified": ", ".join(g.unverified)})
            rows.append(row)
        st.caption(f"{len(rows)} of {len(gpus)} GPUs · memory in GiB as the framework reports it (binary), bandwidth "
                   "and compute in decimal GB/s and TFLOP/s (dense), link bandwidth per direction")
        st.dataframe(rows, hide_index=True, width="stretch", key="gpu_table")
    with tab_model:
        models = {**load_models(), **{k: v[0] for k, v in state.custom_models().items()}}
        query = st.text_input("Filter models (id, architecture)", key="model_filter")
        kinds = st.multiselect("Attention", ["MHA", "GQA", "MQA", "MLA"], key="model_attention")
        rows = []
        for m in models.values():
            text = " ".join([m.id, m.architecture, *m.aliases]).lower()
            if (query and query.lower() not in text) or (kinds and m.attention_type not in kinds):
                continue
            rows.append({"id": m.id, "architecture": m.architecture, "attention": m.attention_type, "moe": m.is_moe,
                         "params_total_billions": None if m.params_total_card is None else m.params_total_card / 1e9,
                         "params_active_billions": None if m.params_active_card is None else m.params_active_card / 1e9,
                         "hidden_size": m.hidden_size, "num_hidden_layers": m.num_hidden_layers,
                         "num_attention_heads": m.num_attention_heads, "num_key_value_heads": m.num_key_value_heads,
                         "head_dim": m.head_dim, "intermediate_size": m.intermediate_size, "vocab_size": m.vocab_size,
                         "max_position_embeddings_tokens": m.max_position_embeddings, "torch_dtype": m.torch_dtype,
                         "sliding_window_tokens": m.sliding_window, "kv_lora_rank": m.kv_lora_rank,
                         "num_experts": m.num_experts, "num_experts_per_tok": m.num_experts_per_tok,
                         "quantization": m.quantization, "aliases": ", ".join(m.aliases),
                         "source": m.source, "as_of": m.as_of, "notes": m.notes})
        st.caption(f"{len(rows)} of {len(models)} models · numbers from each model's config.json")
        st.dataframe(rows, hide_index=True, width="stretch", key="model_table")
    with tab_custom:
        st.caption("Custom entries live in this browser session only and travel in the permalink. "
                   f"Total memory is what the framework reports [GiB]; 1 GiB = {GiB:,} bytes.")
        catalog_forms.gpu_form()
        catalog_forms.model_form()
        catalog_forms.config_upload()


render()
