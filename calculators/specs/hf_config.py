"""Import a Hugging Face ``config.json`` into a :class:`~calculators.specs.schema.ModelSpec`.

Field names and their defaults follow the ``transformers`` configuration classes and vLLM's model
code (layer patterns of Gemma 2/3, Llama 4 chunked attention, Qwen/DeepSeek/Mixtral MoE layouts,
DeepSeek MLA, Falcon's RefinedWeb names). Anything the product cannot interpret raises
:class:`~calculators.errors.InvalidInputError` naming the field.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calculators.errors import InvalidInputError
from calculators.specs.schema import ModelSpec

MAX_CONFIG_BYTES = 2_000_000
_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "half": "float16", "float32": "float32",
           "float": "float32", "bf16": "bfloat16", "fp16": "float16"}
_SUPPORTED_LAYER_TYPES = {"full_attention", "sliding_attention", "chunked_attention"}


def load_config_file(path: str | Path, **metadata: Any) -> ModelSpec:
    """Read a ``config.json`` from disk (at most 2 MB) and import it."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInputError("model", str(path), f"a readable config.json ({exc.strerror})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise InvalidInputError("config.json", f"{len(raw)} bytes", "at most 2 MB")
    return model_from_json_text(raw, default_id=path.stem.replace("__", "/"), **metadata)


def model_from_json_text(text: str | bytes, *, default_id: str = "custom", **metadata: Any) -> ModelSpec:
    """Parse JSON text (UTF-8, rejecting NaN/Infinity) and import it."""
    if isinstance(text, bytes | bytearray):
        try:  # json.loads would guess UTF-16/32 from bytes; config.json files are UTF-8 (a BOM is dropped)
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidInputError("config.json", f"byte {exc.object[exc.start]:#04x} at offset {exc.start}",
                                    "UTF-8 text (save the file as UTF-8)") from None
    try:
        cfg = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError("config.json", "file", f"valid JSON ({str(exc)[:80]})") from None
    if not isinstance(cfg, dict):
        raise InvalidInputError("config.json", type(cfg).__name__, "a JSON object")
    metadata.setdefault("id", cfg.get("_name_or_path") or default_id)
    return model_from_config(cfg, **metadata)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


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
    text = _text_config(cfg)
    fields: dict[str, Any] = {"id": id, "architecture": _architecture(cfg)}
    fields.update(_core_dims(text))
    fields.update(_attention_layout(text, fields["num_hidden_layers"]))
    fields.update(_mla(text))
    fields.update(_moe(text, fields["num_hidden_layers"], fields["intermediate_size"]))
    fields.update(_quantization(cfg.get("quantization_config") or text.get("quantization_config")))
    fields.update(_rope(text, fields))
    fields.update(metadata)
    try:
        return ModelSpec(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "config.json"
        raise InvalidInputError(loc, err.get("input"), err["msg"]) from None


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


def _architecture(cfg: dict[str, Any]) -> str:
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    if isinstance(cfg.get("model_type"), str):
        return cfg["model_type"]
    raise InvalidInputError("architectures", archs, "a list naming the model class")


def _int(cfg: dict[str, Any], *names: str, default: int | None = None, minimum: int = 1) -> int:
    """The first of ``names`` present in ``cfg``, as a positive integer."""
    for name in names:
        if name in cfg and cfg[name] is not None:
            value = cfg[name]
            if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
                    or value != int(value)):
                raise InvalidInputError(name, value, "an integer")
            if value < minimum or value > 10**9:
                raise InvalidInputError(name, value, f"an integer between {minimum} and 10^9")
            return int(value)
    if default is None:
        raise InvalidInputError(names[0], None, "a value in config.json (the field is missing)")
    return default


def _core_dims(c: dict[str, Any]) -> dict[str, Any]:
    hidden = _int(c, "hidden_size", "n_embd", "d_model")
    heads = _int(c, "num_attention_heads", "n_head", "n_heads")
    layers = _int(c, "num_hidden_layers", "n_layer", "num_layers")
    if c.get("multi_query") and "n_head_kv" not in c and "num_kv_heads" not in c:
        kv_heads = 1
    else:
        kv_heads = _int(c, "num_key_value_heads", "n_head_kv", "num_kv_heads", default=heads)
    if heads % kv_heads:
        raise InvalidInputError("num_key_value_heads", kv_heads,
                                f"a divisor of num_attention_heads ({heads})")
    head_dim = _int(c, "head_dim", default=0, minimum=0) or hidden // heads
    is_falcon = "n_head" in c or c.get("model_type") in {"falcon", "RefinedWeb", "RefinedWebModel"}
    dtype = str(c.get("torch_dtype") or c.get("dtype") or "bfloat16")
    if dtype not in _DTYPES:
        raise InvalidInputError("torch_dtype", dtype, f"one of {sorted(_DTYPES)}")
    return {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": _int(c, "intermediate_size_mlp", "intermediate_size", "ffn_hidden_size",
                                  "n_inner", default=4 * hidden if is_falcon else None, minimum=0),
        "vocab_size": _int(c, "vocab_size", "padded_vocab_size"),
        "max_position_embeddings": _int(c, "max_position_embeddings", "max_sequence_length",
                                        "seq_length", "n_positions", default=2048 if is_falcon else None),
        "tie_word_embeddings": bool(c.get("tie_word_embeddings", _ties_by_default(c, is_falcon))),
        "torch_dtype": _DTYPES[dtype],
        "gated_mlp": not is_falcon,
        "attention_bias": bool(c.get("attention_bias",
                                     c.get("qkv_bias", str(c.get("model_type") or "").startswith("qwen2")))),
        "norm_bias": is_falcon,
    }


def _ties_by_default(c: dict[str, Any], is_falcon: bool) -> bool:
    """``transformers`` defaults: Gemma and Falcon configs tie the LM head to the embedding."""
    return is_falcon or str(c.get("model_type", "")).startswith("gemma")


def _attention_layout(c: dict[str, Any], layers: int) -> dict[str, Any]:
    """Per-layer attention kind and window, following the model's own rule for its pattern."""
    window = c.get("sliding_window") if c.get("use_sliding_window", True) else None
    chunk = c.get("attention_chunk_size")
    kinds: list[str]
    if isinstance(c.get("layer_types"), list):
        kinds = list(c["layer_types"])
        if len(kinds) != layers:
            raise InvalidInputError("layer_types", f"{len(kinds)} entries", f"one per layer ({layers})")
        unknown = sorted(set(kinds) - _SUPPORTED_LAYER_TYPES)
        if unknown:
            raise InvalidInputError("layer_types", unknown[0],
                                    f"one of {sorted(_SUPPORTED_LAYER_TYPES)} (state-space and linear-attention "
                                    "layers are not supported yet)")
    elif chunk:
        no_rope = c.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(layers)]
        kinds = ["chunked_attention" if no_rope[i] else "full_attention" for i in range(layers)]
    elif window and c.get("model_type") == "gemma2":
        kinds = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    elif window and (pattern := c.get("sliding_window_pattern")):
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
        bits = q.get("bits", q.get("w_bit", 4))
        group = q.get("group_size", q.get("q_group_size", 128))
        if bits not in (4, 8) or not isinstance(group, int) or (group <= 0 and group != -1):
            raise InvalidInputError("quantization_config.bits", bits, "4 or 8 bits with a positive group_size")
        return {"quantization": f"{method}" if bits == 4 else f"{method}-int8", "quantization_group_size": group}
    if method == "modelopt" and "FP4" in str(q.get("quant_algo", "")).upper():
        return {"quantization": "nvfp4"}
    if method == "modelopt":
        return {"quantization": "fp8"}
    if method == "compressed-tensors":
        return {"quantization": _compressed_tensors(q)}
    raise InvalidInputError("quantization_config.quant_method", method or None,
                            "one of fp8, mxfp4, awq, gptq, modelopt, compressed-tensors")


def _compressed_tensors(q: dict[str, Any]) -> str:
    groups = q.get("config_groups") or {}
    weights = next((g.get("weights") for g in groups.values() if isinstance(g, dict)), None) or {}
    bits, kind = weights.get("num_bits"), weights.get("type")
    if bits == 8 and kind == "float":
        return "fp8"
    if bits == 8 and kind == "int":
        return "int8"
    if bits == 4 and kind == "float":
        return "nvfp4"
    if bits == 4 and kind == "int":
        return "gptq"
    raise InvalidInputError("quantization_config.config_groups.weights", weights,
                            "8-bit int/float or 4-bit int/float weights")


def _rope(c: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """Size of vLLM's cos/sin cache: positions × rotary dims, one per distinct rope setting."""
    if c.get("alibi") or c.get("position_embedding_type") == "alibi":
        return {"rotary_dim": 0, "rope_cache_positions": 0, "num_rope_caches": 0}
    rotary = (fields.get("qk_rope_head_dim") or c.get("rotary_dim")
              or int(fields["head_dim"] * float(c.get("partial_rotary_factor", 1.0))))
    scaling = c.get("rope_scaling") or {}
    positions = fields["max_position_embeddings"]
    if isinstance(scaling, dict) and (scaling.get("rope_type") or scaling.get("type")) in {"yarn", "deepseek_yarn"}:
        positions = int(scaling.get("original_max_position_embeddings", positions) * scaling.get("factor", 1))
    caches = 2 if c.get("rope_local_base_freq") else 1
    return {"rotary_dim": rotary, "rope_cache_positions": positions, "num_rope_caches": caches}
