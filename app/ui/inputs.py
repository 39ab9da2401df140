"""The scenario inputs in the sidebar, bound to URL query parameters with short stable keys.

Widget keys are the URL keys of :data:`calculators.scenario.QUERY_KEYS`. On a session's first run
the raw URL is read once: unknown or invalid parameters become messages, aliases become ids, and
custom GPUs/models carried in ``cgpu``/``cmodel`` are added to this session.
"""
from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from app.ui import keys, state
from calculators.errors import InvalidInputError
from calculators.scenario import (
    DTYPE_CHOICES,
    FIELD_TO_KEY,
    FLASHINFER_SAMPLER_CHOICES,
    KV_DTYPE_CHOICES,
    QUANT_CHOICES,
    QUERY_KEYS,
    VLLM_RELEASES,
    Scenario,
    decode_config,
    decode_custom_gpu,
    encode_config,
    encode_custom_gpu,
    pinned_scenario,
    scenario_from_query,
    scenario_to_query,
)

BIND = {"bind": "query-params"}
_AUTO = "0 = vLLM's default"


def _read_custom_specs(params: dict, messages: list[str]) -> None:
    """Add the custom GPU (``cgpu``) and model (``cmodel``) the link carries to this session."""
    if "cgpu" in params:
        try:
            g = decode_custom_gpu(params["cgpu"])
            state.custom_gpus()[g.id] = g
        except InvalidInputError as exc:
            messages.append(f"custom GPU in the link ignored: {exc}")
    if "cmodel" in params:
        try:
            from calculators.specs.hf_config import model_from_config
            cfg = decode_config(params["cmodel"])
            mid = str(cfg.get("_name_or_path") or "custom-model")
            m = model_from_config(cfg, id=mid)
            state.custom_models()[m.id] = (m, cfg)
        except InvalidInputError as exc:
            messages.append(f"custom model in the link ignored: {exc}")


def _read_calibration(param: str, messages: list[str]) -> None:
    """Keep the link's ``cal`` parameter for this session if it parses."""
    from calculators.perf.calibration import Calibration
    try:
        Calibration.efficiencies_from_param(param)
        st.session_state[keys.CALIBRATION_PARAM] = param
    except InvalidInputError as exc:
        messages.append(f"cal ignored: {exc.allowed}")


def _resolve_ids(params: dict, messages: list[str]) -> None:
    """Model and GPU names of the link: aliases become ids; unknown names become messages."""
    ss = st.session_state
    for key, resolve, options in (("model", state.resolve_model, state.model_options),
                                  ("gpu", state.resolve_gpu, state.gpu_options)):
        if key not in params:
            continue
        raw = params[key]
        try:
            spec = resolve(raw) if key == "gpu" else _model_from_link(raw)
        except InvalidInputError as exc:
            messages.append(f"{key}={raw!r} ignored: {exc.allowed}; using the default")
            continue
        if key == "model" and spec.id != raw and raw not in state.custom_models():
            ss.setdefault(keys.MODEL_ALIASES, []).append(raw)  # keep the name the user gave, like the CLI
        elif spec.id != raw and spec.id in options():
            ss[key] = spec.id


_EMPTY = {"opt_int": 0, "opt_float": 0.0}  # what the sidebar shows for "vLLM's default" / "no target"
_CAST = {"int": int, "opt_int": int, "float": float, "opt_float": float}  # number_input wants one type


def widget_values(fields: dict) -> dict:
    """The sidebar's widget values (keyed by their URL keys) for scenario ``fields`` (vLLM's names); set
    them from a button's callback, before the widgets are drawn."""
    out = {}
    for name, value in fields.items():
        key = FIELD_TO_KEY[name]
        kind = QUERY_KEYS[key][1]
        if kind != "opt_str":  # the calibration is not a widget
            out[key] = _EMPTY[kind] if value is None else _CAST.get(kind, lambda v: v)(value)
    return out


def _model_from_link(name: str):
    """A link's model: a catalog name, a model this session has, or else a Hugging Face id to fetch."""
    try:
        return state.resolve_model(name)
    except InvalidInputError:
        from calculators.specs.hf_hub import is_repo_id
        if not is_repo_id(name):
            raise
        return state.add_hub_model(name)


def _first_run() -> None:
    """Read the URL once per session: messages, aliases, custom specs."""
    ss = st.session_state
    if keys.URL_MESSAGES in ss:
        return
    params = {k: v for k, v in st.query_params.to_dict().items() if k not in keys.PAGE_URL_KEYS}  # pages read theirs
    messages: list[str] = []
    _read_custom_specs(params, messages)
    scenario, msgs = scenario_from_query(params)
    messages += msgs
    if scenario.calibration:
        _read_calibration(scenario.calibration, messages)
    _resolve_ids(params, messages)
    ss[keys.URL_MESSAGES] = messages
    ss[keys.OPENED_WITH_SCENARIO] = any(k in QUERY_KEYS for k in params)


def sidebar() -> tuple[Scenario, dict]:
    """Render the inputs; return the scenario and one placeholder per field for error messages."""
    _first_run()
    sb = st.sidebar
    ph: dict[str, object] = {}
    sb.header("Scenario")
    v: dict = {}
    _deployment_inputs(sb, v, ph)
    _vllm_flag_inputs(sb, v, ph)
    _workload_inputs(sb, v)
    return _scenario(sb, v), ph


def _deployment_inputs(sb, v: dict, ph: dict) -> None:
    """Model, GPU, parallelism, memory share, context and sequence lengths and the vLLM release, into ``v``; one
    error placeholder per field into ``ph``."""
    gpus = state.gpu_options()
    from calculators.specs.catalog import load_gpus
    names = {g.id: g.name for g in load_gpus().values()}
    from app.ui import model_picker
    v["model"] = model_picker.render(sb)
    ph["model"] = sb.empty()
    v["gpu"] = sb.selectbox("GPU", gpus, key="gpu", **index_of("gpu", gpus, Scenario().gpu),
                            help="catalog id (the URL key); the full name is shown below", **BIND)
    sb.caption(names.get(v["gpu"], f"{v['gpu']} (custom GPU, this session)"))
    ph["gpu"] = sb.empty()
    # one per row: two columns cut these names mid-word in a 300 px sidebar
    v["tensor_parallel_size"] = sb.number_input("tensor_parallel_size", 1, 1024, 1, key="tp", **BIND,
                                                help="GPUs each layer is split across (vLLM --tensor-parallel-size)")
    v["pipeline_parallel_size"] = sb.number_input("pipeline_parallel_size", 1, 1024, 1, key="pp", **BIND,
                                                  help="consecutive groups of layers on different GPUs "
                                                       "(--pipeline-parallel-size); GPUs = TP × PP")
    v["data_parallel_size"] = sb.number_input("data_parallel_size", 1, 1024, 1, key="dp", **BIND,
                                              help="engines of TP × PP GPUs side by side, each with its own KV cache "
                                                   "(--data-parallel-size); the KV figures are one rank's")
    ph["tensor_parallel_size"] = ph["pipeline_parallel_size"] = ph["data_parallel_size"] = sb.empty()
    v["gpu_memory_utilization"] = sb.number_input("gpu_memory_utilization", 0.05, 1.0, 0.9, 0.01, format="%.2f",
                                                  key="util", help="share of each GPU's memory vLLM may use for "
                                                  "weights, activations and the KV cache", **BIND)
    ph["gpu_memory_utilization"] = sb.empty()
    v["max_model_len"] = sb.number_input("max_model_len [tokens]", 0, 10_000_000, 0, 1024, key="max_len",
                                         help=f"{_AUTO} (the model's max_position_embeddings)", **BIND)
    ph["max_model_len"] = sb.empty()
    v["vllm_version"] = sb.selectbox("vLLM version", VLLM_RELEASES, index=len(VLLM_RELEASES) - 1, key="vllm",
                                     accept_new_options=True, help="pick a release or type another (0.5.5 to 0.x)",
                                     **BIND)
    ph["vllm_version"] = sb.empty()
    c3, c4 = sb.columns(2)
    v["mean_len"] = c3.number_input("mean_len [tokens]", 0.0, 10_000_000.0, 0.0, 256.0, format="%g",
                                    key="mean_len", help="typical prompt + output tokens per sequence; 0 = the "
                                                         "workload's input_len + output_len", **BIND)
    v["p95_len"] = c4.number_input("p95_len [tokens]", 0.0, 10_000_000.0, 0.0, 256.0, format="%g", key="p95_len",
                                   help="95th percentile of prompt + output; 0 = all requests at the mean", **BIND)
    ph["mean_len"] = ph["p95_len"] = sb.empty()


def _vllm_flag_inputs(sb, v: dict, ph: dict) -> None:
    """The "More vLLM flags" expander, into ``v``; their error placeholder (above the expander, so that a message
    shows while it is collapsed) into ``ph``."""
    flags = sb.empty()
    for name in ("dtype", "quantization", "kv_cache_dtype", "max_num_batched_tokens", "max_num_seqs", "block_size",
                 "kv_cache_memory", "expert_parallel_size"):
        ph[name] = flags
    with sb.expander("More vLLM flags"):
        v["dtype"] = st.selectbox("dtype", DTYPE_CHOICES, key="dtype", **BIND,
                                  help="precision of weights and activations; auto = the model's torch_dtype")
        v["quantization"] = st.selectbox("quantization", QUANT_CHOICES, key="quant", **BIND,
                                         help="weight format; auto = what the model's config says")
        v["kv_cache_dtype"] = st.selectbox("kv_cache_dtype", KV_DTYPE_CHOICES, key="kv_dtype", **BIND,
                                           help="precision of the KV cache; fp8 halves its bytes per token")
        v["max_num_batched_tokens"] = st.number_input("max_num_batched_tokens", 0, 10_000_000, 0, 1024, key="mnbt",
                                                      help=f"tokens one engine step may process; {_AUTO}", **BIND)
        v["max_num_seqs"] = st.number_input("max_num_seqs", 0, 1_000_000, 0, 8, key="max_seqs",
                                            help=f"requests running at once; {_AUTO}", **BIND)
        v["block_size"] = st.number_input("block_size [tokens]", 0, 4096, 0, 16, key="block",
                                          help=f"tokens per KV-cache page; {_AUTO}", **BIND)
        v["enable_expert_parallel"] = st.checkbox(
            "enable_expert_parallel", key="ep", **BIND,
            help="mixture-of-experts models: whole experts spread over all TP × DP GPUs instead of each expert split "
                 "by TP (vLLM's --enable-expert-parallel)")
        v["enforce_eager"] = st.checkbox("enforce_eager", key="eager", **BIND,
                                         help="no CUDA graphs: saves their memory, costs time per step")
        v["language_model_only"] = st.checkbox(
            "language_model_only", key="lm_only", **BIND,
            help="multimodal models: load and profile no vision or audio tower (vLLM's --language-model-only)")
        v["flashinfer_sampler"] = st.selectbox(
            "FlashInfer sampler", FLASHINFER_SAMPLER_CHOICES, key="sampler", **BIND,
            help="on if your start-up log says 'Using FlashInfer for top-p & top-k sampling', off if it falls back "
                 "to the PyTorch-native implementation; auto = the release's default. In 0.8-0.11.0 the profile "
                 "run's sampler needs about 2.5x less memory with FlashInfer, which the vllm/vllm-openai images "
                 "ship and a plain pip install does not")
        v["kv_cache_memory_gib"] = st.number_input("kv_cache_memory [GiB per GPU]", 0.0, 4096.0, 0.0, 0.5,
                                                   format="%g", key="kv_mem",
                                                   help="0 = estimate it; otherwise vLLM's --kv-cache-memory", **BIND)


def _workload_inputs(sb, v: dict) -> None:
    """The workload and its latency targets (the throughput, latency and fleet pages), into ``v``."""
    with sb.expander("Workload & SLO (throughput, latency and fleet pages)"):
        c5, c6 = st.columns(2)
        v["input_len"] = c5.number_input("input_len [tokens]", 1.0, 10_000_000.0, 2000.0, 256.0, format="%g",
                                         key="in", help="mean prompt tokens", **BIND)
        v["output_len"] = c6.number_input("output_len [tokens]", 1.0, 10_000_000.0, 300.0, 64.0, format="%g",
                                          key="out", help="mean output tokens", **BIND)
        v["request_rate_per_s"] = st.number_input("request rate [requests/s]", 0.001, 1e7, 10.0, 1.0, format="%g",
                                                  key="rate", help="mean arrivals per second (Poisson)", **BIND)
        c7, c8 = st.columns(2)
        v["ttft_p99_ms"] = c7.number_input("p99 TTFT target [ms]", 0.0, 1e7, 1000.0, 50.0, format="%g",
                                           key="ttft_ms", help="time to first token, 99th percentile; 0 = no target",
                                           **BIND)
        v["tpot_p99_ms"] = c8.number_input("p99 TPOT target [ms]", 0.0, 1e7, 50.0, 5.0, format="%g",
                                           key="tpot_ms", help="time per output token after the first, 99th "
                                                               "percentile; 0 = no target", **BIND)


def _scenario(sb, v: dict) -> Scenario:
    """The scenario of the inputs ``v`` (0 = unset for the optional fields), and the permalink's messages."""
    v["calibration"] = st.session_state.get(keys.CALIBRATION_PARAM)
    for k in ("max_model_len", "max_num_batched_tokens", "max_num_seqs", "block_size", "kv_cache_memory_gib",
              "mean_len", "p95_len", "ttft_p99_ms", "tpot_p99_ms"):
        v[k] = v[k] or None
    try:
        scenario = Scenario(**v)
    except Exception as exc:  # widget limits make this unreachable; never show a traceback
        sb.error(f"invalid input: {exc}")
        scenario = Scenario()
    for msg in st.session_state.get(keys.URL_MESSAGES, []):
        sb.warning(f"Link: {msg}")
    return scenario


def index_of(key: str, options: list[str], value: str) -> dict:
    """``index=`` of the default, unless session state already holds the widget's value."""
    if key in st.session_state:
        return {}
    return {"index": options.index(value) if value in options else 0}


def show_input_error(ctx: state.Computed, ph: dict) -> None:
    """Put the calculator's error next to the input it names."""
    if ctx.error_field is not None:
        for msg in ctx.messages:
            ph[ctx.error_field].warning(f"{msg} — max_num_seqs advice skipped")
    if ctx.error is None:
        return
    field = ctx.error.field
    target = ph.get(field) or ph.get(field.split(".")[0])
    if target is None:
        target = ph["model"] if field.startswith(("config", "num_", "head")) else ph["gpu"]
    target.error(str(ctx.error))


def permalink(ctx: state.Computed) -> str:
    """Every input, defaults included (vLLM's resolved defaults written in), with ``v=1``."""
    scn = ctx.scenario
    if ctx.doc is not None:
        scn = pinned_scenario(scn, ctx.doc["settings"])
    cg = state.custom_gpus().get(scn.gpu)
    cm = state.custom_models().get(scn.model)
    query = scenario_to_query(scn, custom_gpu=encode_custom_gpu(cg) if cg else None,
                              custom_model=encode_config(cm[1]) if cm else None)
    base = "/"
    try:
        url = st.context.url
        if url:
            base = url.split("?")[0]
    except Exception:  # AppTest and old servers have no URL
        pass
    return f"{base}?{urlencode(query)}"


def show_permalink(ctx: state.Computed) -> None:
    """A link and its text. (Not ``st.code``: its highlighter chunk delays the first paint by ~1 s.)"""
    url = permalink(ctx)
    st.sidebar.markdown(f"[Permalink]({url}) — every input, defaults included, format v=1")
    st.sidebar.caption(f"`{url}`")


def unbound_params() -> dict[str, str]:
    """The link's parameters that no widget is bound to (custom specs, format version), to carry through
    ``st.switch_page``, which may not set a widget's bound parameter itself (the widgets write those back)."""
    bound = set(QUERY_KEYS) | set(keys.PAGE_URL_KEYS)
    return {k: v for k, v in st.query_params.to_dict().items() if k not in bound}


__all__ = ["FIELD_TO_KEY", "index_of", "permalink", "show_input_error", "show_permalink", "sidebar", "unbound_params",
           "widget_values"]
