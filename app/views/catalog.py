"""Catalog: browse GPUs and models (every field, unit, source) and add custom ones for this session."""
from __future__ import annotations

import streamlit as st

from app.ui import catalog_forms, state, widgets
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
            row = {"Id": g.id, "Name": g.name, "Vendor": g.vendor, "Architecture": g.architecture,
                   "Memory [GiB, reported]": g.memory_gib, "Memory [GB, marketed]": g.memory_gb_marketed,
                   "Memory bandwidth [GB/s]": g.memory_bandwidth_bytes_per_s / GB}
            row.update({f"{k} dense [TFLOP/s]": v / TFLOP for k, v in g.peak_flop_per_s.items()})
            row.update({"Scale-up link": g.scale_up_link,
                        "Scale-up [GB/s per direction]": g.scale_up_bytes_per_s_per_direction / GB,
                        "GPUs per node": g.gpus_per_node, "TDP [W]": g.tdp_w,
                        "Lowest on-demand $/GPU-hour": min((p.usd_per_gpu_hour for p in g.prices), default=None),
                        "Also called": ", ".join(g.aliases), "Memory note": g.memory_note, "Source": g.source,
                        "As of": g.as_of, "Not yet verified": ", ".join(g.unverified)})
            rows.append(row)
        st.caption(f"{len(rows)} of {len(gpus)} GPUs · memory in GiB as the framework reports it (binary), bandwidth "
                   "and compute in decimal GB/s and TFLOP/s (dense), link bandwidth per direction")
        widgets.table(rows, width="stretch", key="gpu_table")
    with tab_model:
        models = {**load_models(), **{k: v[0] for k, v in state.custom_models().items()}}
        query = st.text_input("Filter models (id, architecture)", key="model_filter")
        kinds = st.multiselect("Attention", ["MHA", "GQA", "MQA", "MLA"], key="model_attention")
        rows = []
        for m in models.values():
            text = " ".join([m.id, m.architecture, *m.aliases]).lower()
            if (query and query.lower() not in text) or (kinds and m.attention_type not in kinds):
                continue
            rows.append({"Id": m.id, "Architecture": m.architecture, "Attention": m.attention_type,
                         "Mixture of experts": m.is_moe,
                         "Parameters [billions]": None if m.params_total_card is None else m.params_total_card / 1e9,
                         "Active parameters [billions]": None if m.params_active_card is None
                         else m.params_active_card / 1e9,
                         "hidden_size": m.hidden_size, "num_hidden_layers": m.num_hidden_layers,
                         "num_attention_heads": m.num_attention_heads, "num_key_value_heads": m.num_key_value_heads,
                         "head_dim": m.head_dim, "intermediate_size": m.intermediate_size, "vocab_size": m.vocab_size,
                         "Context [tokens] (max_position_embeddings)": m.max_position_embeddings,
                         "torch_dtype": m.torch_dtype, "Sliding window [tokens]": m.sliding_window,
                         "kv_lora_rank": m.kv_lora_rank, "Experts": m.num_experts,
                         "Experts per token": m.num_experts_per_tok, "Quantization": m.quantization,
                         "Also called": ", ".join(m.aliases), "Source": m.source, "As of": m.as_of, "Notes": m.notes})
        st.caption(f"{len(rows)} of {len(models)} models · numbers from each model's config.json (its field names "
                   "kept where vLLM and transformers use them)")
        widgets.table(rows, width="stretch", key="model_table")
    with tab_custom:
        st.caption("Custom entries live in this browser session only and travel in the permalink. "
                   f"Total memory is what the framework reports [GiB]; 1 GiB = {GiB:,} bytes.")
        catalog_forms.gpu_form()
        catalog_forms.model_form()
        catalog_forms.config_upload()


render()
