"""Import a Hugging Face ``config.json`` into a :class:`~calculators.specs.schema.ModelSpec`.

Field names and their defaults follow the ``transformers`` configuration classes and vLLM's model
code (layer patterns of Gemma 2/3, Llama 4 chunked attention, Qwen/DeepSeek/Mixtral MoE layouts,
DeepSeek MLA, Falcon's RefinedWeb names). Anything the product cannot interpret raises
:class:`~calculators.errors.InvalidInputError` naming the field.

Configs on the Hub omit every field that equals its ``transformers`` default (google/gemma-3-27b-it's
``text_config`` has no ``vocab_size``). The importer fills such a field the way ``transformers`` does
for the config's ``model_type`` (:data:`TRANSFORMERS_DEFAULTS`), and any other value it needs but the
file does not give by the rule named beside it (``head_dim = hidden_size / num_attention_heads``,
bf16 when no dtype is given…). Every value so assumed is listed in ``ModelSpec.defaults_assumed`` as
``field=value (rule)``, so a config of a ``model_type`` this module has never seen still imports
when the fields it needs are there, and says what it took for granted. Layers that keep a per-request
state instead of a KV cache (Mamba/SSM, linear attention, recurrent, convolution) are refused, naming
the layer kind.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calculators.errors import InvalidInputError
from calculators.specs.schema import ModelSpec
from calculators.specs.vision import vision_encoder_from_config

#: vLLM sizes a multimodal rope's cos/sin cache for this many times ``max_position_embeddings`` (:func:`_rope`).
MROPE_CACHE_FACTOR = 4
#: ``model_type``s whose MLP is two matrices (up, activation, down) rather than gate + up + down:
#: ``PhiMLP`` (fc1/fc2), GPT-NeoX, GPT-J, GPT-2, StarCoder2, BLOOM, OPT, MPT, GPTBigCode, CodeGen in
#: transformers' modelling code (https://github.com/huggingface/transformers/tree/v4.57.0/src/transformers/models).
UNGATED_MLP_MODEL_TYPES = frozenset({"phi", "gpt_neox", "gptj", "gpt2", "starcoder2", "bloom", "opt", "mpt",
                                     "gpt_bigcode", "codegen"})

MAX_CONFIG_BYTES = 2_000_000
#: Vision towers whose MLP is gated (gate, up, down) though their activation is not SiLU: Gemma 4's
#: (``Gemma4VisionMLP`` in transformers' modeling_gemma4.py).
GATED_VISION_ENCODERS = frozenset({"gemma4_vision"})
#: Audio encoders built as conformers (Gemma 3n, Gemma 4 E2B/E4B): sized by :func:`_conformer_params`.
CONFORMER_AUDIO_ENCODERS = frozenset({"gemma4_audio", "gemma3n_audio"})
_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "half": "float16", "float32": "float32",
           "float": "float32", "bf16": "bfloat16", "fp16": "float16"}
_SUPPORTED_LAYER_TYPES = {"full_attention", "sliding_attention", "chunked_attention"}
#: Layer-kind names some configs use for plain (global) attention.
_ATTENTION_ALIASES = {"attention": "full_attention", "full_attention": "full_attention",
                      "sliding_attention": "sliding_attention", "chunked_attention": "chunked_attention"}

_GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
    "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096, "sliding_window_pattern": 6,
    "rope_local_base_freq": 10_000.0,
}
_GEMMA4_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_144, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 30,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
    "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 512, "global_head_dim": 512,
    "hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262_144, "num_kv_shared_layers": 0,
    "attention_k_eq_v": False, "use_double_wide_mlp": False, "enable_moe_block": False,
}
#: ``model_type`` → (the ``transformers`` class whose ``__init__`` defaults these are, the defaults of the
#: fields this importer reads). Gemma 3: ``Gemma3TextConfig`` in
#: ``src/transformers/models/gemma3/configuration_gemma3.py`` as released with Gemma 3 in transformers
#: v4.50.0 (read at commit 008f5c8c29be; docs: https://huggingface.co/docs/transformers/v4.50.0/model_doc/gemma3).
#: ``Gemma3Config`` (``model_type`` "gemma3") builds its language model from ``Gemma3TextConfig`` with the
#: same defaults. Later releases keep these values but derive ``layer_types`` from a private
#: ``_sliding_window_pattern`` (6) and move the RoPE bases into ``rope_parameters``. Gemma 4:
#: ``Gemma4TextConfig`` in ``src/transformers/models/gemma4/configuration_gemma4.py`` (transformers 5.5,
#: read at commit 351f643ab9f5): note ``hidden_size_per_layer_input`` 256, so a config that omits it has
#: per-layer embeddings.
TRANSFORMERS_DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "gemma3_text": ("transformers Gemma3TextConfig default", _GEMMA3_TEXT_DEFAULTS),
    "gemma3": ("transformers Gemma3TextConfig default", _GEMMA3_TEXT_DEFAULTS),
    "gemma4_text": ("transformers Gemma4TextConfig default", _GEMMA4_TEXT_DEFAULTS),
    "gemma4": ("transformers Gemma4TextConfig default", _GEMMA4_TEXT_DEFAULTS),
}
#: A default is not filled in when the config states the same thing under another name.
_STATED_AS = {"sliding_window_pattern": ("sliding_window_pattern", "_sliding_window_pattern", "layer_types"),
              "rope_local_base_freq": ("rope_local_base_freq", "rope_parameters")}

#: Model types made only of layers that keep a recurrent state per request (no per-token KV cache).
_STATEFUL_MODEL_TYPES = {"mamba": "mamba", "mamba2": "mamba", "falcon_mamba": "mamba", "rwkv": "rwkv",
                         "rwkv5": "rwkv", "rwkv6": "rwkv", "rwkv7": "rwkv", "xlstm": "mlstm",
                         "recurrent_gemma": "recurrent", "lfm2": "conv", "qwen3_next": "linear_attention",
                         "kimi_linear": "linear_attention", "minimax": "linear_attention"}
#: Config keys that only hybrid state-space / linear-attention models carry, and the layer kind they imply.
_STATEFUL_KEYS = {"full_attention_interval": "linear_attention", "linear_attn_config": "linear_attention",
                  "attn_layer_period": "mamba", "mamba_d_state": "mamba", "mamba_expand": "mamba",
                  "mamba_n_heads": "mamba", "ssm_cfg": "mamba", "ssm_state_size": "mamba"}


def load_config_file(path: str | Path, **metadata: Any) -> ModelSpec:
    """Read a ``config.json`` from disk (at most 2 MB) and import it.

    A file named ``config.json`` whose folder also holds ModelOpt's ``hf_quant_config.json`` (and
    which has no ``quantization_config`` of its own) takes its format from that file, as vLLM does.
    """
    path = Path(path)
    cfg = parse_config_json(_read_limited(path, "config.json"))
    sibling = path.with_name("hf_quant_config.json")
    if path.name == "config.json" and sibling.is_file():
        cfg = with_hf_quant_config(cfg, parse_config_json(_read_limited(sibling, "hf_quant_config.json"),
                                                          name="hf_quant_config.json"))
    metadata.setdefault("id", cfg.get("_name_or_path") or path.stem.replace("__", "/"))
    return model_from_config(cfg, **metadata)


def _read_limited(path: Path, label: str) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInputError("model", str(path), f"a readable {label} ({exc.strerror})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise InvalidInputError(label, f"{len(raw)} bytes", "at most 2 MB")
    return raw


def model_from_json_text(text: str | bytes, *, default_id: str = "custom", **metadata: Any) -> ModelSpec:
    """Parse JSON text (UTF-8, rejecting NaN/Infinity) and import it."""
    cfg = parse_config_json(text)
    metadata.setdefault("id", cfg.get("_name_or_path") or default_id)
    return model_from_config(cfg, **metadata)


def parse_config_json(text: str | bytes, *, name: str = "config.json") -> dict[str, Any]:
    """A JSON object from UTF-8 text (a BOM is dropped; NaN and Infinity are refused)."""
    if isinstance(text, bytes | bytearray):
        try:  # json.loads would guess UTF-16/32 from bytes; config.json files are UTF-8 (a BOM is dropped)
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(name, f"byte {exc.object[exc.start]:#04x} at offset {exc.start}",
                                    "UTF-8 text (save the file as UTF-8)") from None
    try:
        cfg = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(name, "file", f"valid JSON ({str(exc)[:80]})") from None
    if not isinstance(cfg, dict):
        raise InvalidInputError(name, type(cfg).__name__, "a JSON object")
    return cfg


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def with_hf_quant_config(cfg: dict[str, Any], quant: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` with the ``quantization_config`` vLLM derives from ModelOpt's ``hf_quant_config.json``.

    That file (``{"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8" | "NVFP4", …}}``)
    is what NVIDIA's ModelOpt checkpoints carry instead of a ``quantization_config``; vLLM reads it the
    same way (``ModelOptFp8Config`` / ``ModelOptNvFp4Config``). A config that has its own
    ``quantization_config`` keeps it.
    """
    text = cfg.get("text_config")
    if cfg.get("quantization_config") or (isinstance(text, dict) and text.get("quantization_config")):
        return cfg
    section = quant.get("quantization")
    if not isinstance(section, dict) or not isinstance(section.get("quant_algo"), str):
        raise InvalidInputError("hf_quant_config.json", section, "a ModelOpt 'quantization' object with a quant_algo")
    return {**cfg, "quantization_config": {"quant_method": "modelopt", "quant_algo": section["quant_algo"]}}


def model_from_config(cfg: dict[str, Any], *, id: str, **metadata: Any) -> ModelSpec:
    """Build a :class:`ModelSpec` from a parsed ``config.json`` dictionary.

    A config whose values have the wrong JSON types (a list where a string belongs…) is an
    :class:`InvalidInputError` too, never a ``TypeError``.
    """
    if not isinstance(cfg, dict):
        raise InvalidInputError("config.json", type(cfg).__name__, "a JSON object")
    try:
        return _model_from_config(cfg, id=id, **metadata)
    except InvalidInputError:
        raise
    except (TypeError, AttributeError, ValueError, OverflowError, KeyError, IndexError) as exc:
        raise InvalidInputError("config.json", f"{type(exc).__name__}: {str(exc)[:60]}",
                                "the value types of a Hugging Face config.json") from None


def _model_from_config(cfg: dict[str, Any], *, id: str, **metadata: Any) -> ModelSpec:
    assumed: list[str] = []
    _refuse_unsized_families(cfg)
    text = _gemma4_text(_fill_transformers_defaults(_text_config(cfg), assumed))
    _refuse_stateful_layers(text)
    fields: dict[str, Any] = {"id": id, "architecture": _architecture(cfg)}
    fields.update(_core_dims(text, assumed))
    fields.update(_attention_layout(text, fields["num_hidden_layers"]))
    fields["qk_norm_over_heads"] = _qk_norm_over_heads(text)
    fields.update(_mla(text))
    fields.update(_layer_sharing(text, fields["num_hidden_layers"]))
    fields.update(_moe(text, fields["num_hidden_layers"], fields["intermediate_size"]))
    fields.update(_quantization(cfg.get("quantization_config") or text.get("quantization_config")))
    fields.update(_rope(text, fields))
    fields["max_position_embeddings"] = _derived_max_len(text, fields["max_position_embeddings"], assumed)
    fields["encoder_params"] = sum(_encoder_params(cfg.get(key), fields["hidden_size"])
                                   for key in ("vision_config", "audio_config"))
    fields["vision_encoder"] = vision_encoder_from_config(cfg, fields["hidden_size"])
    fields.update(_unsplit_mm_item(cfg))
    fields["defaults_assumed"] = tuple(assumed)
    fields.update(metadata)
    try:
        return ModelSpec(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "config.json"
        raise InvalidInputError(loc, err.get("input"), err["msg"]) from None


def _encoder_params(enc: Any, text_hidden: int) -> float:
    """Parameters [count] of a vision or audio encoder and its projector, from its sub-config.

    A transformer encoder of ``L`` layers, width ``h`` and MLP width ``i``: ``L × (4h² + k·h·i)``
    (``k`` = 3 for gated SiLU MLPs, else 2), plus the patch embedding (channels × patch² × temporal
    patch × h), the position table and the projector into the language model: Qwen-VL's merger
    ``(h·m)² + h·m·out`` per merger (``m`` = spatial_merge_size², one more per deepstack level),
    otherwise one ``h × text hidden`` matrix (docs/vllm-memory.md §2.2).
    """
    if not isinstance(enc, dict):
        return 0.0
    layers = _int(enc, "depth", "num_hidden_layers", "encoder_layers", "num_layers", default=0, minimum=0)
    h = _int(enc, "embed_dim", "hidden_size", "d_model", default=0, minimum=0)  # Qwen2-VL: hidden_size is the output
    if not layers or not h:
        return 0.0
    layers += _int(enc, "num_global_layers", default=0, minimum=0)
    kind = str(enc.get("model_type") or "")
    if kind in CONFORMER_AUDIO_ENCODERS:
        return _conformer_params(enc, layers, h, text_hidden)
    inter = _int(enc, "intermediate_size", "encoder_ffn_dim", default=4 * h, minimum=0)
    gated = "silu" in str(enc.get("hidden_act", "")) or kind in GATED_VISION_ENCODERS
    body = layers * (4 * h * h + (3 if gated else 2) * h * inter)
    patch = _int(enc, "patch_size", default=0, minimum=0)
    channels = _int(enc, "in_channels", "num_channels", default=3, minimum=0)
    embed = channels * patch * patch * _int(enc, "temporal_patch_size", default=1) * h
    image = _int(enc, "image_size", default=0, minimum=0)
    # Gemma 4's patch embedder keeps a table per axis (x and y) of position_embedding_size rows
    table = 2 * _int(enc, "position_embedding_size", default=0, minimum=0) if kind in GATED_VISION_ENCODERS else 0
    positions = _int(enc, "num_position_embeddings", default=table or ((image // patch) ** 2 if patch else 0),
                     minimum=0)
    merge = _int(enc, "spatial_merge_size", default=0, minimum=0)
    if merge:
        wide = h * merge * merge
        out = _int(enc, "out_hidden_size", default=text_hidden)
        levels = 1 + len(enc.get("deepstack_visual_indexes") or ())
        projector = levels * (wide * wide + wide * out)
    else:
        projector = h * text_hidden
    return float(body + embed + positions * h + projector)


def _conformer_params(enc: dict[str, Any], layers: int, h: int, text_hidden: int) -> float:
    """Parameters [count] of Gemma 3n/4's conformer audio encoder, an estimate: per layer two feed-forward
    modules (``h → 4h → h``, 8h² each), attention (4h²) and a convolution module (``h → 2h`` pointwise, a
    depthwise kernel, ``h → h``: about 3h²); then its output projection (``h × output_proj_dims``) and the
    projector into the language model (``output_proj_dims × text hidden``). Gemma 4 E2B: 12 layers of 1,024
    give 0.29 B, about the 0.3 B its published size leaves for the audio tower."""
    out = _int(enc, "output_proj_dims", default=h)
    return float(layers * 23 * h * h + h * out + out * text_hidden)


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Multimodal configs (Llama 4, Gemma 3) nest the language model in ``text_config``."""
    text = cfg.get("text_config")
    if text is None:
        return cfg
    if not isinstance(text, dict):
        raise InvalidInputError("text_config", text, "a JSON object")
    merged = {k: v for k, v in cfg.items() if k != "text_config"}
    merged.update(text)
    return merged


def _fill_transformers_defaults(c: dict[str, Any], assumed: list[str]) -> dict[str, Any]:
    """``c`` with the fields it omits set to the ``transformers`` defaults of its ``model_type``."""
    rule, defaults = TRANSFORMERS_DEFAULTS.get(str(c.get("model_type") or ""), ("", {}))
    out = dict(c)
    for name, value in defaults.items():
        if not any(key in c for key in _STATED_AS.get(name, (name,))):
            out[name] = value
            assumed.append(f"{name}={value} ({rule})")
    return out


#: Families whose memory depends on parts the importer does not size, with what those parts are.
_UNSIZED_MODEL_TYPES = {
    "gemma3n": "Gemma 3n's AltUp streams, LAuReL blocks, per-layer MLP widths and MobileNet vision tower",
    "gemma3n_text": "Gemma 3n's AltUp streams, LAuReL blocks and per-layer MLP widths",
}


def _refuse_unsized_families(cfg: dict[str, Any]) -> None:
    """Refuse a family whose parts this importer cannot size, naming them (rather than a misleading estimate)."""
    kind = str(cfg.get("model_type") or "")
    if kind in _UNSIZED_MODEL_TYPES:
        raise InvalidInputError("model_type", kind, f"a family llmcap can size; {_UNSIZED_MODEL_TYPES[kind]} "
                                                    "are not modelled yet")


def _refuse_stateful_layers(c: dict[str, Any]) -> None:
    """Refuse layers that keep a per-request state instead of a KV cache, naming their kind."""
    kind = _stateful_layer_kind(c)
    if kind is not None:
        raise InvalidInputError("layer_types", kind,
                                f"attention layers only (full, sliding-window or chunked); llmcap cannot account "
                                f"for {kind!r} layers yet (Mamba/SSM, linear-attention, recurrent and convolution "
                                "layers keep a per-request state instead of a KV cache)")


def _stateful_layer_kind(c: dict[str, Any]) -> str | None:
    for key in ("layer_types", "layers_block_type", "block_types"):
        kinds = c.get(key)
        if isinstance(kinds, list):
            other = [k for k in kinds if isinstance(k, str) and k not in _ATTENTION_ALIASES]
            if other:
                return other[0]
    pattern = c.get("hybrid_override_pattern")  # Nemotron-H: M = Mamba-2, * = attention, - = MLP, E = MoE
    if isinstance(pattern, str) and "M" in pattern:
        return "mamba"
    types = c.get("attn_type_list")  # MiniMax-01: 0 = lightning (linear) attention, 1 = softmax attention
    if isinstance(types, list) and 0 in types:
        return "linear_attention"
    for key, kind in _STATEFUL_KEYS.items():
        if c.get(key) is not None:
            return kind
    return _STATEFUL_MODEL_TYPES.get(str(c.get("model_type") or ""))


def _architecture(cfg: dict[str, Any]) -> str:
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    if isinstance(cfg.get("model_type"), str):
        return cfg["model_type"]
    raise InvalidInputError("architectures", archs, "a list naming the model class")


def _present(c: dict[str, Any], *names: str) -> bool:
    return any(c.get(name) is not None for name in names)


def _int(c: dict[str, Any], *names: str, default: int | None = None, minimum: int = 1) -> int:
    """The first of ``names`` present in ``c``, as a positive integer."""
    for name in names:
        if name in c and c[name] is not None:
            value = c[name]
            if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
                    or value != int(value)):
                raise InvalidInputError(name, value, "an integer")
            if value < minimum or value > 10**9:
                raise InvalidInputError(name, value, f"an integer between {minimum} and 10^9")
            return int(value)
    if default is None:
        raise InvalidInputError(names[0], None, "a value in config.json (the field is missing)")
    return default


def _assumed_int(c: dict[str, Any], names: tuple[str, ...], default: int | None, rule: str,
                 assumed: list[str], minimum: int = 1) -> int:
    """Like :func:`_int`; a ``default`` that is used is recorded as assumed."""
    if default is not None and not _present(c, *names):
        assumed.append(f"{names[0]}={default} ({rule})")
    return _int(c, *names, default=default, minimum=minimum)


def _core_dims(c: dict[str, Any], assumed: list[str]) -> dict[str, Any]:
    hidden = _int(c, "hidden_size", "n_embd", "d_model")
    heads = _int(c, "num_attention_heads", "n_head", "n_heads")
    layers = _int(c, "num_hidden_layers", "n_layer", "num_layers")
    if c.get("multi_query") and "n_head_kv" not in c and "num_kv_heads" not in c:
        kv_heads = 1
    else:
        kv_heads = _assumed_int(c, ("num_key_value_heads", "n_head_kv", "num_kv_heads"), heads,
                                "= num_attention_heads: multi-head attention", assumed)
    if heads % kv_heads:
        raise InvalidInputError("num_key_value_heads", kv_heads,
                                f"a divisor of num_attention_heads ({heads})")
    head_dim = _int(c, "head_dim", default=0, minimum=0)
    if not head_dim:
        head_dim = hidden // heads
        if c.get("kv_lora_rank") is None:  # MLA models take head_dim from their rope + nope dims
            assumed.append(f"head_dim={head_dim} (hidden_size / num_attention_heads)")
    is_falcon = "n_head" in c or c.get("model_type") in {"falcon", "RefinedWeb", "RefinedWebModel"}
    return {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": _assumed_int(c, ("intermediate_size_mlp", "intermediate_size", "ffn_hidden_size",
                                              "n_inner"), 4 * hidden if is_falcon else None,
                                          "4 × hidden_size, Falcon", assumed, minimum=0),
        "vocab_size": _int(c, "vocab_size", "padded_vocab_size"),
        "max_position_embeddings": _assumed_int(c, ("max_position_embeddings", "max_sequence_length",
                                                    "seq_length", "n_positions"),
                                                2048 if is_falcon else None, "Falcon", assumed),
        "tie_word_embeddings": _tied(c, is_falcon, assumed),
        "torch_dtype": _dtype(c, assumed),
        "gated_mlp": not is_falcon and c.get("model_type") not in UNGATED_MLP_MODEL_TYPES,
        "attention_bias": _attention_bias(c, assumed),
        "norm_bias": is_falcon,
    }


def _dtype(c: dict[str, Any], assumed: list[str]) -> str:
    dtype = c.get("torch_dtype") or c.get("dtype")
    if dtype is None:
        assumed.append("torch_dtype=bfloat16 (no torch_dtype or dtype in config.json)")
        dtype = "bfloat16"
    if str(dtype) not in _DTYPES:
        raise InvalidInputError("torch_dtype", dtype, f"one of {sorted(_DTYPES)}")
    return _DTYPES[str(dtype)]


def _tied(c: dict[str, Any], is_falcon: bool, assumed: list[str]) -> bool:
    """``transformers`` defaults: Gemma and Falcon configs tie the LM head to the embedding, others do not."""
    if "tie_word_embeddings" in c:
        return bool(c["tie_word_embeddings"])
    tied = is_falcon or str(c.get("model_type", "")).startswith("gemma")
    assumed.append(f"tie_word_embeddings={tied} ("
                   + ("Gemma and Falcon tie the LM head to the embedding" if tied else "a separate LM head") + ")")
    return tied


def _attention_bias(c: dict[str, Any], assumed: list[str]) -> bool:
    """Bias on q/k/v: the config's flag, else Qwen2's rule (biased q/k/v, no flag in its config)."""
    if "attention_bias" in c or "qkv_bias" in c:
        return bool(c.get("attention_bias", c.get("qkv_bias")))
    qwen2 = str(c.get("model_type") or "").startswith("qwen2")
    assumed.append(f"attention_bias={qwen2} (" + ("Qwen2 family: q/k/v biases" if qwen2 else "no biases") + ")")
    return qwen2


def _qk_norm_over_heads(c: dict[str, Any]) -> bool:
    """Whether q and k are RMS-normalised over all heads at once: MiniMax-M2's ``use_qk_norm`` with
    ``qk_norm_type = "per_layer"`` (a norm of width heads × head_dim; Qwen3's and Llama 4's are per head). Under
    tensor parallelism the engines then all-reduce each token's sums of squares of q and k in every layer (vLLM's
    ``MiniMaxText01RMSNormTP``, SGLang's ``MiniMaxM2RMSNormTP``)."""
    return bool(c.get("use_qk_norm")) and c.get("qk_norm_type") == "per_layer"


def _attention_layout(c: dict[str, Any], layers: int) -> dict[str, Any]:
    """Per-layer attention kind and window, following the model's own rule for its pattern."""
    window = c.get("sliding_window") if c.get("use_sliding_window", True) else None
    chunk = c.get("attention_chunk_size")
    pattern = c.get("sliding_window_pattern") or c.get("_sliding_window_pattern")
    kinds: list[str]
    if isinstance(c.get("layer_types"), list):
        kinds = [_ATTENTION_ALIASES.get(k, k) if isinstance(k, str) else k for k in c["layer_types"]]
        if len(kinds) != layers:
            raise InvalidInputError("layer_types", f"{len(kinds)} entries", f"one per layer ({layers})")
        unknown = sorted(str(k) for k in set(kinds) - _SUPPORTED_LAYER_TYPES)
        if unknown:
            raise InvalidInputError("layer_types", unknown[0],
                                    f"one of {sorted(_SUPPORTED_LAYER_TYPES)} (state-space and linear-attention "
                                    "layers are not supported yet)")
    elif chunk:
        no_rope = c.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(layers)]
        kinds = ["chunked_attention" if no_rope[i] else "full_attention" for i in range(layers)]
    elif window and c.get("model_type") == "gemma2":
        kinds = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    elif window and pattern:
        kinds = ["sliding_attention" if (i + 1) % int(pattern) else "full_attention" for i in range(layers)]
    elif window and "max_window_layers" in c and c.get("use_sliding_window"):
        kinds = ["sliding_attention" if i >= c["max_window_layers"] else "full_attention" for i in range(layers)]
    elif window:
        kinds = ["sliding_attention"] * layers
    else:
        kinds = ["full_attention"] * layers
    out: dict[str, Any] = {"layer_types": tuple(kinds)}
    if "sliding_attention" in kinds:
        out["sliding_window"] = _int(c, "sliding_window")
    if "chunked_attention" in kinds:
        out["attention_chunk_size"] = _int(c, "attention_chunk_size")
    return out


def _gemma4_text(c: dict[str, Any]) -> dict[str, Any]:
    """Gemma 4's text config in the names the rest of the importer reads: its 5:1 layer pattern with the last
    layer full when ``layer_types`` is absent (``Gemma4TextConfig``), and its MoE block as experts plus a
    dense MLP beside them, which is how vLLM's ``Gemma4DecoderLayer`` runs ``intermediate_size`` next to
    ``num_experts`` routed experts of ``moe_intermediate_size`` (top ``top_k_experts``)."""
    if not str(c.get("model_type") or "").startswith("gemma4"):
        return c
    out = dict(c)
    layers = _int(c, "num_hidden_layers")
    if not isinstance(c.get("layer_types"), list):
        out["layer_types"] = ["sliding_attention" if (i + 1) % 6 and i < layers - 1 else "full_attention"
                              for i in range(layers)]
    if not c.get("enable_moe_block"):
        out["num_experts"] = None
    else:
        out["num_experts_per_tok"] = c.get("top_k_experts")
        out["shared_expert_intermediate_size"] = c.get("intermediate_size")
    return out


#: Gemma 4's dummy video: 32 frames of 70 soft tokens, each with its markers and timestamp text (78 tokens),
#: 2,496 prompt tokens, which vLLM will not split across steps (``Gemma4ProcessingInfo``,
#: vllm/model_executor/models/gemma4_mm.py; its start-up refuses a smaller ``max_num_batched_tokens``:
#: "max_tokens_per_mm_item (2496) is larger than max_num_batched_tokens").
GEMMA4_VIDEO_FRAMES, GEMMA4_TOKENS_PER_FRAME = 32, 78


def _unsplit_mm_item(cfg: dict[str, Any]) -> dict[str, Any]:
    """The prompt tokens a Gemma 4 step must hold for one whole multimodal item (its 32-frame video)."""
    if str(cfg.get("model_type") or "") == "gemma4" and isinstance(cfg.get("vision_config"), dict):
        return {"max_tokens_per_mm_item": GEMMA4_VIDEO_FRAMES * GEMMA4_TOKENS_PER_FRAME}
    return {}


def _layer_sharing(c: dict[str, Any], layers: int) -> dict[str, Any]:
    """Full-attention geometry, KV sharing and per-layer inputs where the config has them (Gemma 4, Gemma 3n).

    As vLLM's ``Gemma4DecoderLayer``/``Gemma4Attention`` (vllm/model_executor/models/gemma4.py): full-attention
    layers use ``global_head_dim`` and, when ``attention_k_eq_v``, ``num_global_key_value_heads`` KV heads; the
    last ``num_kv_shared_layers`` layers read the cache of the last earlier layer of their kind and keep none;
    ``hidden_size_per_layer_input`` > 0 adds a per-layer embedding table of ``vocab_size_per_layer_input`` rows.
    """
    out: dict[str, Any] = {}
    if c.get("global_head_dim") is not None:
        out["global_head_dim"] = _int(c, "global_head_dim")
    if c.get("attention_k_eq_v") and c.get("num_global_key_value_heads") is not None:
        out["num_global_key_value_heads"] = _int(c, "num_global_key_value_heads")
    shared = _int(c, "num_kv_shared_layers", default=0, minimum=0)
    if shared >= layers:
        raise InvalidInputError("num_kv_shared_layers", shared, f"fewer than num_hidden_layers ({layers})")
    out["num_kv_shared_layers"] = shared
    per_layer = _int(c, "hidden_size_per_layer_input", default=0, minimum=0)
    if per_layer:
        out["hidden_size_per_layer_input"] = per_layer
        out["vocab_size_per_layer_input"] = _int(c, "vocab_size_per_layer_input", "vocab_size")
    out["use_double_wide_mlp"] = bool(c.get("use_double_wide_mlp")) and shared > 0
    return out


def _mla(c: dict[str, Any]) -> dict[str, Any]:
    if c.get("kv_lora_rank") is None:
        return {}
    rope = _int(c, "qk_rope_head_dim")
    nope = _int(c, "qk_nope_head_dim")
    out = {"kv_lora_rank": _int(c, "kv_lora_rank"), "qk_rope_head_dim": rope, "qk_nope_head_dim": nope,
           "v_head_dim": _int(c, "v_head_dim"), "head_dim": rope + nope}
    if c.get("q_lora_rank") is not None:
        out["q_lora_rank"] = _int(c, "q_lora_rank")
    return out


def _moe(c: dict[str, Any], layers: int, dense_width: int) -> dict[str, Any]:
    """Experts, their width and which layers have them (each family's own rule)."""
    experts = _int(c, "n_routed_experts", "num_local_experts", "num_experts", default=0, minimum=0)
    if experts == 0:
        return {}
    top_k = _int(c, "num_experts_per_tok", "experts_per_token", "moe_topk")
    if "first_k_dense_replace" in c or "n_routed_experts" in c:  # DeepSeek-V2/V3
        first, freq = c.get("first_k_dense_replace", 0), c.get("moe_layer_freq", 1)
        moe_layers = [i for i in range(layers) if i >= first and i % freq == 0]
        shared = _int(c, "n_shared_experts", default=0, minimum=0)
        expert_width = _int(c, "moe_intermediate_size")
        shared_width = shared * expert_width
    elif "interleave_moe_layer_step" in c:  # Llama 4: one shared expert as wide as a routed one
        step = c["interleave_moe_layer_step"]
        moe_layers = c.get("moe_layers") or [i for i in range(layers) if (i + 1) % step == 0]
        expert_width = _int(c, "intermediate_size")
        shared, shared_width = 1, expert_width
    elif "moe_intermediate_size" in c:  # Qwen2-MoE / Qwen3-MoE
        step, dense_only = c.get("decoder_sparse_step", 1), set(c.get("mlp_only_layers") or [])
        moe_layers = [i for i in range(layers) if i not in dense_only and (i + 1) % step == 0]
        expert_width = _int(c, "moe_intermediate_size")
        shared_width = _int(c, "shared_expert_intermediate_size", default=0, minimum=0)
        shared = int(shared_width > 0)
    else:  # Mixtral, gpt-oss: every layer, experts as wide as intermediate_size
        moe_layers = list(range(layers))
        expert_width = _int(c, "intermediate_size")
        shared, shared_width = 0, 0
    return {
        "num_experts": experts,
        "num_experts_per_tok": top_k,
        "moe_intermediate_size": expert_width,
        "num_shared_experts": shared,
        "shared_expert_intermediate_size": shared_width,
        "moe_layers": tuple(moe_layers),
        "intermediate_size": dense_width if len(moe_layers) < layers else 0,
    }


def _quantization(q: dict[str, Any] | None) -> dict[str, Any]:
    """The checkpoint's weight format, from ``quantization_config``."""
    if not q:
        return {}
    if not isinstance(q, dict):
        raise InvalidInputError("quantization_config", q, "a JSON object")
    method = str(q.get("quant_method", "")).lower()
    if method == "fp8":
        return {"quantization": "fp8"}
    if method == "mxfp4":
        excluded = " ".join(q.get("modules_to_not_convert") or [])
        return {"quantization": "mxfp4-moe" if "self_attn" in excluded else "mxfp4"}
    if method in {"awq", "gptq"}:
        return _awq_gptq(method, q)
    if method == "modelopt" and "FP4" in str(q.get("quant_algo", "")).upper():
        return {"quantization": "nvfp4"}
    if method == "modelopt":
        return {"quantization": "fp8"}
    if method == "compressed-tensors":
        return _compressed_tensors(q)
    if method == "bitsandbytes":
        return {"quantization": _bitsandbytes(q)}
    raise InvalidInputError("quantization_config.quant_method", method or None,
                            "one of fp8, mxfp4, awq, gptq, modelopt, compressed-tensors, bitsandbytes")


def _awq_gptq(method: str, q: dict[str, Any]) -> dict[str, Any]:
    bits = q.get("bits", q.get("w_bit", 4))
    group = q.get("group_size", q.get("q_group_size", 128))
    if bits not in (4, 8) or not isinstance(group, int) or (group <= 0 and group != -1):
        raise InvalidInputError("quantization_config.bits", bits, "4 or 8 bits with a positive group_size")
    return {"quantization": f"{method}" if bits == 4 else f"{method}-int8", "quantization_group_size": group}


def _bitsandbytes(q: dict[str, Any]) -> str:
    """``transformers``' ``BitsAndBytesConfig``: ``load_in_8bit`` (LLM.int8) or ``load_in_4bit`` (NF4/FP4).

    Its ``to_dict`` writes both ``load_in_4bit`` and the private ``_load_in_4bit``; either is read. The
    4-bit data type (``bnb_4bit_quant_type``) and ``bnb_4bit_use_double_quant`` do not change what vLLM
    keeps in memory (see :func:`calculators.memory.weights.linear_bytes`).
    """
    if q.get("load_in_8bit") or q.get("_load_in_8bit"):
        return "bitsandbytes-8bit"
    if q.get("load_in_4bit") or q.get("_load_in_4bit"):
        kind = q.get("bnb_4bit_quant_type", "fp4")
        if kind not in ("nf4", "fp4"):
            raise InvalidInputError("quantization_config.bnb_4bit_quant_type", kind, "nf4 or fp4")
        return "bitsandbytes"
    raise InvalidInputError("quantization_config.load_in_4bit", None,
                            "load_in_4bit or load_in_8bit set to true (a bitsandbytes checkpoint)")


def _compressed_tensors(q: dict[str, Any]) -> dict[str, Any]:
    """``compressed-tensors``: the first config group's weight scheme (4-bit int is W4A16, held as GPTQ)."""
    groups = q.get("config_groups") or {}
    weights = next((g.get("weights") for g in groups.values() if isinstance(g, dict)), None) or {}
    bits, kind = weights.get("num_bits"), weights.get("type")
    if bits == 8 and kind == "float":
        return {"quantization": "fp8"}
    if bits == 8 and kind == "int":
        return {"quantization": "int8"}
    if bits == 4 and kind == "float":
        return {"quantization": "nvfp4"}
    if bits == 4 and kind == "int":
        group = -1 if weights.get("strategy") == "channel" else weights.get("group_size")
        return {"quantization": "gptq", **({"quantization_group_size": group} if isinstance(group, int) else {})}
    raise InvalidInputError("quantization_config.config_groups.weights", weights,
                            "8-bit int/float or 4-bit int/float weights")


#: RoPE kinds whose ``factor`` vLLM does not apply to the context length (their ``max_position_embeddings``
#: is already the extended one).
_ROPE_KEEPS_LENGTH = frozenset({"su", "longrope", "llama3"})


def _derived_max_len(c: dict[str, Any], positions: int, assumed: list[str]) -> int:
    """The longest context vLLM accepts for the config [tokens]: ``positions`` scaled by its RoPE scaling.

    vLLM's ``_get_and_verify_max_len`` multiplies the length by ``rope_scaling.factor`` unless the kind is
    ``su``/``longrope``/``llama3`` (already extended) or the model is Gemma 3 (its 128K is already scaled);
    for YaRN it scales ``original_max_position_embeddings``. This is how a config (or vLLM's
    ``--hf-overrides``) with ``{"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 32768}``
    serves Qwen3 at 131,072 tokens
    (https://github.com/vllm-project/vllm/blob/v0.10.0/vllm/config.py, ``_get_and_verify_max_len``).
    The scaled length is noted in ``assumed``.
    """
    scaling = _rope_scaling(c)
    if not isinstance(scaling, dict) or str(c.get("model_type") or "").startswith("gemma3"):
        return positions
    kind = scaling.get("rope_type") or scaling.get("type")
    factor = scaling.get("factor")
    if kind in _ROPE_KEEPS_LENGTH or factor is None:
        return positions
    base = scaling.get("original_max_position_embeddings", positions) if kind == "yarn" else positions
    derived = int(_number(base, "rope_scaling.original_max_position_embeddings")
                  * _number(factor, "rope_scaling.factor"))
    if derived != positions:
        assumed.append(f"max_position_embeddings={derived} (vLLM scales {base} by rope_scaling {kind} "
                       f"factor {factor})")
    return derived


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InvalidInputError(field, value, "a positive number")
    return float(value)


def _rope_scaling(c: dict[str, Any]) -> Any:
    """A text config's rope settings: ``rope_scaling``, or ``rope_parameters`` as transformers 5 names them."""
    return c.get("rope_scaling") or c.get("rope_parameters")


def _rope(c: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """Size of vLLM's cos/sin caches: rows over all distinct rope settings × rotary dims.

    vLLM's ``get_rope`` keeps one cache per distinct setting, ``max_position_embeddings`` rows, except:
    YaRN ``original_max_position_embeddings × factor`` rows, and linear scaling ``max_position × factor``
    rows (``LinearScalingRotaryEmbedding._compute_cos_sin_cache``,
    https://github.com/vllm-project/vllm/blob/v0.8.3/vllm/model_executor/layers/rotary_embedding.py).
    Gemma-3's sliding-window layers (``rope_local_base_freq``) have a second, unscaled cache. Multimodal
    rope (a ``mrope_section``: Qwen2-VL, Qwen2.5-VL, Qwen3-VL) keeps :data:`MROPE_CACHE_FACTOR` times the
    positions, for long videos (``MRotaryEmbedding.__init__``, ``cache_max_position_num``, in
    vllm/model_executor/layers/rotary_embedding/mrope.py, v0.10.2 to v0.26.0; rotary_embedding.py in v0.8.5).
    """
    if c.get("alibi") or c.get("position_embedding_type") == "alibi":
        return {"rotary_dim": 0, "rope_cache_positions": 0, "num_rope_caches": 0}
    rotary = (fields.get("qk_rope_head_dim") or c.get("rotary_dim")
              or int(fields["head_dim"] * float(c.get("partial_rotary_factor", 1.0))))
    scaling = _rope_scaling(c) or {}
    kind = (scaling.get("rope_type") or scaling.get("type")) if isinstance(scaling, dict) else None
    unscaled = positions = fields["max_position_embeddings"]
    if kind in {"yarn", "deepseek_yarn"}:
        positions = int(_number(scaling.get("original_max_position_embeddings", positions),
                                "rope_scaling.original_max_position_embeddings")
                        * _number(scaling.get("factor", 1), "rope_scaling.factor"))
    elif kind == "linear":
        positions = int(positions * _number(scaling.get("factor", 1), "rope_scaling.factor"))
    if isinstance(scaling, dict) and scaling.get("mrope_section"):
        positions *= MROPE_CACHE_FACTOR
    local = c.get("rope_local_base_freq") is not None
    return {"rotary_dim": rotary, "rope_cache_positions": positions + (unscaled if local else 0),
            "num_rope_caches": 2 if local else 1}
