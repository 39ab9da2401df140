"""Weight bytes of a GGUF checkpoint, tensor by tensor, as llama.cpp's quantiser lays it out.

A GGUF file names one *file type* (``Q4_K_M``, ``Q8_0`` …), but its tensors do not all share it:
llama.cpp's ``llama_tensor_get_type`` gives the output matrix (or the token embedding, when tied) 6-bit
K-quants and, in the ``_M`` mixtures, the value projections and FFN down projections of some layers
more bits (``use_more_bits``). vLLM serves the tensors as stored (``--quantization gguf``: each
linear keeps its own ``qweight_type``; the embedding and LM head stay quantised,
``GGUFEmbeddingMethod`` / ``GGUFLinearMethod`` in vllm/model_executor/layers/quantization/gguf.py,
https://github.com/vllm-project/vllm/blob/v0.8.2/vllm/model_executor/layers/quantization/gguf.py),
so its ``Model loading took`` is the sum of the stored blocks.

Block sizes: ggml's type traits (``ggml/src/ggml.c``, ``type_size`` / ``blck_size``); the mixture
rules: ``llama_tensor_get_type_impl`` in ``src/llama-quant.cpp`` of
https://github.com/ggml-org/llama.cpp (read at commit 007dbbf3fd17eefe9b47fee45f48f7ba5e62b714).
Dense decoders with separate q/k/v tensors only (Llama, Mistral, Qwen, Gemma, Phi-4 …): the rules for
8-expert MoE models, Falcon and fused-QKV files differ and are refused (:func:`check_supported`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from calculators.errors import InvalidInputError
from calculators.specs.schema import ModelSpec

if TYPE_CHECKING:
    from calculators.memory.weights import Linear

#: ggml block types: (weights per block, bytes per block).
BLOCKS = {"q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24), "q8_0": (32, 34),
          "q4_k": (256, 144), "q5_k": (256, 176), "q6_k": (256, 210)}
#: What llama.cpp falls back to when a row's length is not a multiple of the block (``tensor_type_fallback``).
FALLBACK = {"q4_k": "q5_0", "q5_k": "q5_1", "q6_k": "q8_0"}
#: GGUF file types: the base block type of the linear layers.
FILE_TYPES = {"q8_0": "q8_0", "q6_k": "q6_k", "q5_k_m": "q5_k", "q5_k_s": "q5_k", "q5_1": "q5_1",
              "q5_0": "q5_0", "q4_k_m": "q4_k", "q4_k_s": "q4_k", "q4_1": "q4_1", "q4_0": "q4_0"}
#: ``--quantization`` values: ``gguf-`` and the file type, as in the file's name (``…-Q4_K_M.gguf``).
QUANTIZATIONS = tuple(f"gguf-{t}" for t in FILE_TYPES)
#: llama.cpp's ``LLM_TYPE_70B`` Llama-family models (80 layers) get 5-bit value projections at 4 bits.
LAYERS_OF_A_70B = 80


def is_gguf(quantization: str) -> bool:
    """Whether a ``--quantization`` value names a GGUF file type (``gguf-q4_k_m`` …)."""
    return quantization.startswith("gguf-")


def file_type(quantization: str) -> str:
    """``gguf-q4_k_m`` → ``q4_k_m``."""
    return quantization.removeprefix("gguf-")


def use_more_bits(layer: int, num_layers: int) -> bool:
    """llama.cpp's ``use_more_bits``: the first and last eighth of the layers and every third between."""
    return layer < num_layers // 8 or layer >= 7 * num_layers // 8 or (layer - num_layers // 8) % 3 == 2


def _fit_rows(block: str, row_length: int) -> str:
    """The block type after llama.cpp's fallback for rows that are not a multiple of the block."""
    while row_length % BLOCKS[block][0] and block in FALLBACK:
        block = FALLBACK[block]
    return block


def linear_block_type(ftype: str, role: str, layer: int, num_layers: int) -> str:
    """The block type of one linear (``role``: q, k, v, o, gate_up, down) of ``layer`` in a file of ``ftype``."""
    base = FILE_TYPES[ftype]
    if role == "v":
        if ftype in ("q4_k_m", "q5_k_m") and use_more_bits(layer, num_layers):
            return "q6_k"
        if ftype == "q4_k_s" and layer < 4:
            return "q5_k"
        if num_layers == LAYERS_OF_A_70B and base == "q4_k":
            return "q5_k"
    if role == "down":
        if ftype in ("q4_k_m", "q5_k_m") and use_more_bits(layer, num_layers):
            return "q6_k"
        if ftype == "q4_k_s" and layer < num_layers // 8:
            return "q5_k"
    return base


def embedding_block_types(ftype: str, tied: bool) -> tuple[str, str]:
    """(token embedding, output matrix) block types: the output gets Q6_K unless the file is Q8_0;
    a tied embedding is quantised as the output."""
    base = FILE_TYPES[ftype]
    output = base if base == "q8_0" else "q6_k"
    return (output if tied else base), output


def matrix_bytes(block: str, rows: int, row_length: int) -> float:
    """Bytes of a ``rows × row_length`` matrix stored in ``block`` (after the row fallback)."""
    per, size = BLOCKS[_fit_rows(block, row_length)]
    return rows * -(-row_length // per) * size


def linear_bytes(lin: Linear, ftype: str, layer: int, num_layers: int, act_bytes: int) -> float:
    """Bytes of one decoder linear (all its ``count`` matrices) in a GGUF file of ``ftype``; routers,
    biases and anything llama.cpp leaves unquantised stay in the activation dtype."""
    bias = lin.count * lin.out_features * act_bytes if lin.bias else 0
    if not lin.quantized:
        return lin.count * lin.in_features * lin.out_features * act_bytes + bias
    block = linear_block_type(ftype, lin.role, layer, num_layers)
    return lin.count * matrix_bytes(block, lin.out_features, lin.in_features) + bias


def check_supported(model: ModelSpec, quantization: str) -> None:
    """Refuse the models whose GGUF layout these rules do not describe, naming why."""
    if model.is_moe or model.is_mla or model.architecture.startswith(("Falcon", "Phi3")):
        raise InvalidInputError("quantization", quantization,
                                "GGUF sizes for dense decoders with separate q/k/v tensors; this model "
                                f"({model.architecture}) is not one: use its safetensors checkpoint's format")
