"""Parameter counts and weight bytes per GPU, for dense and MoE models, quantised or not.

The model is broken into its linear layers (shape ``in × out``), embeddings, norms and the rotary
cos/sin cache; each is sized in the chosen weight format and sharded as vLLM shards it
(column/row-parallel linears split by TP, K/V projections replicated when ``tp > H_kv``, MLA
down-projections and MoE routers replicated, experts split by TP or by the expert-parallel size,
vocabulary padded to a multiple of 64 and split by TP, embeddings on the first pipeline stage and
the LM head on the last). Checked against vLLM's ``Model loading took X GiB`` lines.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.memory import gguf
from calculators.memory.kv_cache import check_tensor_parallel, dtype_bytes, kv_heads_per_rank, pp_layer_partition
from calculators.specs.schema import ModelSpec
from calculators.validation import positive_int

VOCAB_PADDING = 64  # vLLM DEFAULT_VOCAB_PADDING_SIZE
QUANT_GROUP = 128
#: vLLM's MXFP4 MoE kernels pad the expert matrices: hidden size up to a multiple of the first number,
#: each TP rank's share of the expert width up to a multiple of the second. These are Marlin's (the kernel
#: of GPUs before Hopper; ``intermediate_size_per_partition`` in ``Mxfp4MoEMethod.create_weights``,
#: vllm/model_executor/layers/quantization/mxfp4.py; gpt-oss-120b at TP 1: 2880 → 3072 × 2944, which is
#: why it loads as 65.97 GiB on an H100 with 0.10.1 rather than 60.8; at TP 4 each rank's 720 → 768); other
#: kernels pad otherwise (:mod:`calculators.vllm.weight_layout`).
MXFP4_MARLIN_PADDING = (256, 128)


@dataclass(frozen=True)
class WeightLayout:
    """How a serving engine lays quantised weights out in GPU memory, where the checkpoint does not say.

    ``mxfp4_padding``: the MXFP4 MoE kernel's (hidden, per-rank expert width) multiples (Marlin's by
    default). ``bnb_nested_statistics``: bitsandbytes 4-bit absmaxes kept double-quantised (one uint8 per
    64 weights and one fp32 per 256 of those) rather than as one fp32 per 64 weights. The engine's rules
    for both are in :mod:`calculators.vllm.weight_layout`.
    """

    mxfp4_padding: tuple[int, int] = MXFP4_MARLIN_PADDING
    bnb_nested_statistics: bool = False
#: bitsandbytes 4-bit (``bitsandbytes.functional.quantize_4bit``): one absmax per block of 64 weights
#: of the flattened matrix; with double quantisation the absmaxes are themselves quantised to 8 bits in
#: blocks of 256, each block keeping an fp32 absmax (``quantize_blockwise(absmax, blocksize=256)``).
BNB_4BIT_BLOCK, BNB_NESTED_BLOCK = 64, 256
#: Bytes per weight of each format, excluding per-group scales (added in :func:`linear_bytes`).
#: ``bitsandbytes`` is vLLM's ``--quantization bitsandbytes`` (4-bit NF4/FP4; in-flight quantisation of an
#: unquantised checkpoint is 4-bit NF4 too); ``bitsandbytes-8bit`` a checkpoint saved with ``load_in_8bit``.
#: ``gguf-<file type>`` (``gguf-q4_k_m`` …) is a llama.cpp GGUF file, sized tensor by tensor in :mod:`gguf`.
QUANTIZATIONS = ("none", "fp8", "int8", "awq", "gptq", "awq-int8", "gptq-int8", "mxfp4", "mxfp4-moe", "nvfp4",
                 "bitsandbytes", "bitsandbytes-8bit", *gguf.QUANTIZATIONS)


@dataclass(frozen=True)
class Linear:
    """One linear layer of a decoder block: ``count`` matrices of ``in_features × out_features``.

    ``split`` says how TP shards it: ``"tp"`` (column/row parallel), ``"attn"`` (attention's column/row
    parallel projections), ``"kv"`` (K/V heads, replicated past ``H_kv``), ``"none"`` (replicated) or
    ``"experts"`` (TP or EP). Attention's splits (``"attn"``, ``"kv"``, ``"global_kv"``) follow the attention's
    own TP size, which data-parallel attention sets to 1 (:func:`shard`). ``role`` names the
    projection where a format treats projections differently (GGUF: ``v`` and ``down``).
    """

    in_features: int
    out_features: int
    count: float
    split: str
    quantized: bool
    bias: bool = False
    role: str = ""


def _attention(m: ModelSpec, layer: int) -> list[Linear]:
    h, H = m.hidden_size, m.num_attention_heads
    kv_heads, d = m.attention_dims(m.layer_types[layer])
    if m.is_mla:
        mla = m.mla_dims
        qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        q = ([Linear(h, m.q_lora_rank, 1, "none", True), Linear(m.q_lora_rank, H * qk, 1, "attn", True)]
             if m.q_lora_rank else [Linear(h, H * qk, 1, "attn", True)])
        return q + [Linear(h, mla.kv_lora_rank + mla.qk_rope_head_dim, 1, "none", True),
                    Linear(mla.kv_lora_rank, H * (mla.qk_nope_head_dim + mla.v_head_dim), 1, "attn", True),
                    Linear(H * mla.v_head_dim, h, 1, "attn", True)]
    # vLLM allocates K and V for every layer, the KV-shared ones and Gemma 4's k == v ones included
    kv, split = kv_heads * d, "global_kv" if kv_heads != m.num_key_value_heads else "kv"
    return [Linear(h, H * d, 1, "attn", True, m.attention_bias, "q"),
            Linear(h, kv, 1, split, True, m.attention_bias, "k"), Linear(h, kv, 1, split, True, m.attention_bias, "v"),
            Linear(H * d, h, 1, "attn", True, m.attention_bias and m.architecture.startswith("GptOss"), "o")]


def _ffn(m: ModelSpec, layer: int) -> list[Linear]:
    h, mats = m.hidden_size, 3 if m.gated_mlp else 2
    if layer not in m.moe_layers:
        width = m.intermediate_size * (2 if m.use_double_wide_mlp and layer >= m.kv_cache_layers else 1)
        return [Linear(h, width, mats - 1, "tp", True, role="gate_up"), Linear(width, h, 1, "tp", True, role="down")]
    bias = m.architecture.startswith("GptOss")
    out = [Linear(h, m.num_experts, 1, "none", False, bias),
           Linear(h, m.moe_intermediate_size, mats * m.num_experts, "experts", True, bias)]
    if m.shared_expert_intermediate_size:
        out.append(Linear(h, m.shared_expert_intermediate_size, mats, "tp", True))
    return out


def _per_layer_input(m: ModelSpec) -> list[Linear]:
    """Gemma 3n/4's per-layer input gate (hidden → P) and projection (P → hidden), replicated on every rank
    (``ReplicatedLinear`` in vLLM's ``Gemma4DecoderLayer``); none without per-layer inputs."""
    p = m.hidden_size_per_layer_input
    return [Linear(m.hidden_size, p, 1, "none", False), Linear(p, m.hidden_size, 1, "none", False)] if p else []


def decoder_layer(m: ModelSpec, layer: int) -> list[Linear]:
    """The linear layers of decoder layer ``layer`` (attention, then FFN or MoE, then per-layer inputs)."""
    return _attention(m, layer) + _ffn(m, layer) + _per_layer_input(m)


def linear_bytes(lin: Linear, quantization: str, act_bytes: int, group_size: int = QUANT_GROUP,
                 layout: WeightLayout = WeightLayout()) -> float:
    """Bytes of one linear's weights (all ``count`` matrices) in a weight format [bytes].

    fp8: 1 B/weight + fp32 scale per 128×128 block; int8: 1 B + fp32 per output channel;
    AWQ/GPTQ b-bit, group g (``group_size``, the checkpoint's ``quantization_config.group_size``;
    −1: one group per column): b/8 B + (fp16 scale + b-bit zero) per group per column, as vLLM's
    AWQ/GPTQ (Marlin) layers hold ``qweight``, ``scales`` and ``qzeros``
    (https://github.com/vllm-project/vllm/blob/v0.10.0/vllm/model_executor/layers/quantization/awq_marlin.py);
    MXFP4: 4 bits + one E8M0 byte per 32, expert matrices padded to the layout's ``mxfp4_padding``;
    NVFP4: 4 bits + one fp8 byte per 16. Biases stay in the activation dtype.

    bitsandbytes (vLLM ``--quantization bitsandbytes``) quantises the linear layers only (``quantized``
    linears here: attention, MLP and expert projections; embeddings, LM head, norms and MoE routers
    stay unquantised). 4-bit (NF4 or FP4): two weights per byte + one fp32 absmax per 64 weights,
    ``n/2 + 4·⌈n/64⌉`` bytes per matrix of ``n`` weights, whether or not the checkpoint used double
    quantisation, where the loader dequantises nested statistics back to fp32 absmaxes when it loads the
    weights (vLLM from v0.10: ``dequantize_dq`` in ``vllm/model_executor/model_loader/bitsandbytes_loader.py``,
    https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/model_executor/model_loader/bitsandbytes_loader.py:
    "This comes at the cost of increased memory usage"; vllm-project/vllm PR #19742, June 2025); its in-flight
    quantisation of a bf16 checkpoint is ``quantize_4bit(w, compress_statistics=True, quant_type="nf4")``,
    dequantised the same way. A layout with ``bnb_nested_statistics`` keeps them double-quantised, as vLLM
    did before (:func:`bnb_4bit_bytes` with ``double_quant``, also the checkpoint's own size). 8-bit (LLM.int8,
    ``load_in_8bit``): one int8 per weight + one fp32 scale (``SCB``) per output row, ``n + 4·out``.
    Rules from the bitsandbytes docs (https://huggingface.co/docs/bitsandbytes/main/en/reference/functional:
    ``quantize_4bit(blocksize=64)``, ``quantize_blockwise(blocksize=256)`` for nested absmaxes) and
    ``Int8Params`` (int8 data + per-row ``SCB``). Per-tensor code tables (16 fp32 for NF4/FP4, 256 fp32
    for nested statistics) are left out: at most 1.1 KB a matrix.
    """
    n = lin.in_features * lin.out_features
    q = quantization if lin.quantized else "none"
    if q == "mxfp4-moe":
        q = "mxfp4" if lin.split == "experts" else "none"
    if q == "mxfp4" and lin.split == "experts":
        hidden, width = layout.mxfp4_padding
        n = _round_up(lin.in_features, hidden) * _round_up(lin.out_features, width)
    groups = (1 if group_size == -1 else -(-lin.in_features // group_size)) * lin.out_features
    per_matrix = {
        "none": n * act_bytes,
        "fp8": n + 4 * -(-lin.in_features // 128) * -(-lin.out_features // 128),
        "int8": n + 4 * lin.out_features,
        "awq": n / 2 + groups * 2.5, "gptq": n / 2 + groups * 2.5,
        "awq-int8": n + groups * 3, "gptq-int8": n + groups * 3,
        "mxfp4": n * (0.5 + 1 / 32),
        "nvfp4": n * (0.5 + 1 / 16),
        "bitsandbytes": bnb_4bit_bytes(n, double_quant=layout.bnb_nested_statistics),
        "bitsandbytes-8bit": n + 4 * lin.out_features,
    }[q]
    return lin.count * (per_matrix + (lin.out_features * act_bytes if lin.bias else 0))


def bnb_4bit_bytes(n: int, *, double_quant: bool = False) -> float:
    """Bytes of ``n`` weights in bitsandbytes 4-bit: ``n/2`` packed + absmax statistics [bytes].

    One fp32 absmax per 64 weights (``4·⌈n/64⌉``); with ``double_quant`` (``bnb_4bit_use_double_quant``)
    one uint8 per 64 weights plus one fp32 per 256 of those blocks (``⌈n/64⌉ + 4·⌈⌈n/64⌉/256⌉``).
    """
    blocks = -(-n // BNB_4BIT_BLOCK)
    stats = blocks + 4 * -(-blocks // BNB_NESTED_BLOCK) if double_quant else 4 * blocks
    return n / 2 + stats


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def _shard(lin: Linear, m: ModelSpec, tp: np.ndarray, ep: np.ndarray | None,
           dp_attention: bool = False) -> np.ndarray:
    """Fraction of a linear that one GPU holds; with ``dp_attention`` attention's linears are whole on every GPU."""
    attention_tp = np.ones_like(tp, dtype=np.float64) if dp_attention else tp
    if lin.split == "tp":
        return 1 / tp
    if lin.split == "attn":
        return 1 / attention_tp
    if lin.split in ("kv", "global_kv"):
        heads = m.num_global_key_value_heads if lin.split == "global_kv" else m.num_key_value_heads
        if heads is not None:  # a model without global KV heads has no global_kv linears to shard
            return kv_heads_per_rank(heads, attention_tp) / heads
    if lin.split == "experts":
        return 1 / (tp if ep is None else ep)
    return np.ones_like(tp, dtype=np.float64)


def resolve_quantization(model: ModelSpec, quantization: str | None) -> str:
    """The weight format in use: the user's choice, else the checkpoint's, else none."""
    q = (quantization or model.quantization or "none").lower()
    if q in ("auto", "bf16", "fp16", "bfloat16", "float16"):
        q = model.quantization or "none"
    if q == "mxfp4" and model.quantization == "mxfp4-moe":
        q = "mxfp4-moe"
    if q == "bitsandbytes" and model.quantization == "bitsandbytes-8bit":
        q = "bitsandbytes-8bit"
    if q == "gguf":
        raise InvalidInputError("quantization", quantization, "a GGUF file type, as in the file's name: "
                                f"one of {', '.join(gguf.QUANTIZATIONS)}")
    if q not in QUANTIZATIONS:
        raise InvalidInputError("quantization", quantization, f"one of {', '.join(QUANTIZATIONS)}")
    if gguf.is_gguf(q):
        gguf.check_supported(model, q)
    return q


SPLITS = ("tp", "attn", "kv", "global_kv", "none", "experts")


@lru_cache(maxsize=1024)
def stage_linear_sums(model: ModelSpec, quantization: str, act_bytes: int, first: int, count: int,
                      layout: WeightLayout = WeightLayout()) -> dict[str, tuple[float, float]]:
    """``{split: (bytes, parameters)}`` of the linears of layers ``first … first + count − 1``.

    Bytes are in the weight format; parameters count weights only (for FLOP). Cached per model:
    the per-GPU figures for any TP size are then a few array operations (see :func:`shard`).
    """
    sums = {k: [0.0, 0.0] for k in SPLITS}
    group = model.quantization_group_size or QUANT_GROUP
    ftype = gguf.file_type(quantization) if gguf.is_gguf(quantization) else None
    for layer in range(first, first + count):
        for lin in decoder_layer(model, layer):
            sums[lin.split][0] += (
                linear_bytes(lin, quantization, act_bytes, group, layout) if ftype is None
                else gguf.linear_bytes(lin, ftype, layer, model.num_hidden_layers, act_bytes))
            sums[lin.split][1] += lin.count * lin.in_features * lin.out_features
    return {k: (v[0], v[1]) for k, v in sums.items()}


def shard(model: ModelSpec, split: str, tp: np.ndarray, ep: np.ndarray | None = None,
          dp_attention: bool = False) -> np.ndarray:
    """Fraction of a linear of this split that one GPU holds (see :class:`Linear`). ``dp_attention``: attention
    runs data-parallel across the ``tp`` GPUs (SGLang's ``--enable-dp-attention`` with ``--dp`` = ``--tp``,
    TensorRT-LLM's ``enable_attention_dp``), so each GPU holds attention's linears whole; the rest keep their
    split."""
    return _shard(Linear(1, 1, 1, split, False), model, tp, ep, dp_attention)


def weight_bytes_per_stage(model: ModelSpec, *, tensor_parallel_size: ArrayLike = 1,
                           pipeline_parallel_size: int = 1, quantization: str | None = None,
                           dtype: str = "auto", expert_parallel_size: ArrayLike | None = None,
                           layout: WeightLayout = WeightLayout(), dp_attention: bool = False) -> np.ndarray:
    """Weight bytes on one GPU of each pipeline stage [bytes], shape ``(pp, *broadcast(tp))``.

    ``expert_parallel_size`` (vLLM ``--enable-expert-parallel``: TP × DP) puts whole experts on
    each GPU instead of slicing every expert by TP. A vision or audio encoder (``encoder_params``)
    sits on the first stage in the activation dtype, split by TP (vLLM shards its linears;
    docs/vllm-memory.md §2.2). ``layout``: what the engine does with quantised weights that the checkpoint
    leaves open (:class:`WeightLayout`; the defaults unless the caller knows the engine). ``dp_attention``: attention
    runs data-parallel across the TP GPUs, so its linears are whole on each (:func:`shard`).
    """
    tp = check_tensor_parallel(model, tensor_parallel_size).astype(np.float64)
    ep = (None if expert_parallel_size is None
          else np.asarray(positive_int("expert_parallel_size", expert_parallel_size)))
    q = resolve_quantization(model, quantization)
    s = dtype_bytes(model.torch_dtype if dtype == "auto" else dtype)
    embed, lm_head = _embedding_bytes(model, q, s, tp)
    h = model.hidden_size
    norms_per_layer = 2 * h * (2 if model.norm_bias else 1) + (model.kv_lora_rank or 0) + (model.q_lora_rank or 0)
    rope = model.rope_cache_positions * model.rotary_dim * s
    parts = pp_layer_partition(model.num_hidden_layers, pipeline_parallel_size)
    stages, first = [], 0
    for i, n in enumerate(parts):
        sums = stage_linear_sums(model, q, s, first, n, layout)
        total = np.zeros_like(tp) + rope + n * norms_per_layer * s
        for split, (nbytes, _) in sums.items():
            pad = expert_rank_padding(model, q, tp, ep, layout.mxfp4_padding[1]) if split == "experts" else 1.0
            total = total + nbytes * shard(model, split, tp, ep, dp_attention) * pad
        if i == 0:
            total = total + embed + _per_layer_embedding_bytes(model, s, tp) + model.encoder_params * s / tp
        if i == len(parts) - 1:
            total = total + h * s + (lm_head if (not model.tie_word_embeddings or len(parts) > 1) else 0)
        stages.append(total)
        first += n
    return np.stack(stages)


def _embedding_bytes(model: ModelSpec, quantization: str, act_bytes: int,
                     tp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(token embedding, LM head) bytes on one GPU: the vocabulary padded to 64 and split by TP in the
    activation dtype; a GGUF file's stored blocks, as vLLM keeps them (:func:`gguf.embedding_block_types`)."""
    if not gguf.is_gguf(quantization):
        vocab_rank = np.ceil(np.ceil(model.vocab_size / VOCAB_PADDING) * VOCAB_PADDING / tp)
        embed = vocab_rank * model.hidden_size * act_bytes
        return embed, embed
    rows = np.ceil(model.vocab_size / tp)
    token, output = gguf.embedding_block_types(gguf.file_type(quantization), model.tie_word_embeddings)
    return (gguf.matrix_bytes(token, 1, model.hidden_size) * rows,
            gguf.matrix_bytes(output, 1, model.hidden_size) * rows)


def _per_layer_embedding_bytes(model: ModelSpec, act_bytes: int, tp: np.ndarray) -> np.ndarray:
    """Gemma 3n/4's per-layer input table and its projection on one GPU [bytes]: ``embed_tokens_per_layer``
    (``vocab_size_per_layer_input`` rows, padded to 64 and split by TP like the token embedding, ``L × P`` wide)
    and ``per_layer_model_projection`` (hidden → ``L × P``, column-parallel), in the activation dtype
    (vLLM's ``Gemma4Model``; E2B: 262,144 × 35 × 256 = 2.35 B parameters). 0 without per-layer inputs."""
    width = model.num_hidden_layers * model.hidden_size_per_layer_input
    if not width:
        return np.zeros_like(tp)
    rows = np.ceil(np.ceil(model.vocab_size_per_layer_input / VOCAB_PADDING) * VOCAB_PADDING / tp)
    return (rows * width + model.hidden_size * width / tp) * act_bytes


def expert_rank_padding(model: ModelSpec, quantization: str, tp: np.ndarray, ep: np.ndarray | None,
                        multiple: int = MXFP4_MARLIN_PADDING[1]) -> np.ndarray:
    """How much more expert memory a TP rank holds than ``1/tp`` of the (padded) whole: MXFP4 pads each
    rank's share of the expert width to ``multiple``, ``⌈(I/tp)/m⌉·m·tp / ⌈I/m⌉·m``; 1 for other formats and
    with expert parallelism, where every rank holds whole experts. gpt-oss-120b at TP 4 with Marlin's 128:
    768 · 4 / 2944 = 1.043."""
    width = model.moe_intermediate_size
    whole = _round_up(width, multiple)
    if not quantization.startswith("mxfp4") or ep is not None or whole == 0:
        return np.ones_like(tp, dtype=np.float64)
    return np.ceil(width / tp / multiple) * multiple * tp / whole


def weight_bytes_per_gpu(model: ModelSpec, **kw) -> np.ndarray:
    """Weight bytes on the most loaded GPU [bytes]; arguments as :func:`weight_bytes_per_stage`."""
    return weight_bytes_per_stage(model, **kw).max(axis=0)


def gathered_bytes_per_stage(model: ModelSpec, *, tensor_parallel_size: ArrayLike = 1,
                             pipeline_parallel_size: int = 1, quantization: str | None = None,
                             dtype: str = "auto") -> np.ndarray:
    """Weight bytes on one GPU of each stage that a forward pass looks up by row or skips instead of reading
    whole [bytes], shape ``(pp, *broadcast(tp))``: the rotary cos/sin cache (rows of the positions in the step),
    and on the first stage the token embedding (rows of the step's tokens; unless it is also the LM head, which
    reads it whole), Gemma 3n/4's per-layer input embeddings (looked up the same way) and the vision or audio
    encoder (run on a request's media at its prefill, not in a text forward pass)."""
    tp = check_tensor_parallel(model, tensor_parallel_size).astype(np.float64)
    s = dtype_bytes(model.torch_dtype if dtype == "auto" else dtype)
    embed, _ = _embedding_bytes(model, resolve_quantization(model, quantization), s, tp)
    pp = len(pp_layer_partition(model.num_hidden_layers, pipeline_parallel_size))
    rope = np.zeros_like(tp) + model.rope_cache_positions * model.rotary_dim * s
    token_embedding = 0.0 if model.tie_word_embeddings and pp == 1 else embed
    first = rope + token_embedding + _per_layer_embedding_bytes(model, s, tp) + model.encoder_params * s / tp
    return np.stack([first] + [rope] * (pp - 1))


def step_read_bytes_per_gpu(model: ModelSpec, dp_attention: bool = False, **kw) -> np.ndarray:
    """Weight bytes a forward pass reads whole on the most loaded GPU [bytes]: the weights less what it looks
    up by row (:func:`gathered_bytes_per_stage`); ``kw`` as :func:`weight_bytes_per_stage`, with no expert
    parallelism or layout options; ``dp_attention`` as there."""
    return (weight_bytes_per_stage(model, **kw, dp_attention=dp_attention)
            - gathered_bytes_per_stage(model, **kw)).max(axis=0)


def parameter_counts(model: ModelSpec) -> dict[str, float]:
    """Total and active parameters [count], from the architecture.

    Active = everything but the routed experts, plus ``top_k / E`` of them. Embeddings and the
    LM head count once each (once in all if tied). Norms and biases included.
    """
    embed = model.vocab_size * model.hidden_size * (1 if model.tie_word_embeddings else 2)
    per_layer = model.num_hidden_layers * model.hidden_size_per_layer_input
    embed += (model.vocab_size_per_layer_input + model.hidden_size) * per_layer  # Gemma 3n/4 per-layer inputs
    total = active = float(embed + model.hidden_size)
    for layer in range(model.num_hidden_layers):
        for lin in decoder_layer(model, layer):
            n = lin.count * (lin.in_features * lin.out_features + (lin.out_features if lin.bias else 0))
            total += n
            active += n * (model.num_experts_per_tok / model.num_experts if lin.split == "experts" else 1)
    norms = model.num_hidden_layers * (2 * model.hidden_size + (model.kv_lora_rank or 0) + (model.q_lora_rank or 0))
    return {"total": total + norms, "active": active + norms, "embedding": float(embed)}
