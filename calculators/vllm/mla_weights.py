"""Tensors vLLM's MLA attention derives from DeepSeek-style checkpoints at load time [bytes].

After loading, ``process_weights_after_loading`` of vLLM's MLA backend builds matrices the
checkpoint does not hold; they are allocated inside model loading, so vLLM counts them in
``Model loading took X GiB`` (docs/vllm-memory.md §2.2). Per MLA layer and tensor-parallel rank, with
``N = num_attention_heads / TP``, ``L = kv_lora_rank``, ``Lq = q_lora_rank`` (``hidden_size`` when
the model has none), ``P``, ``R``, ``V`` the no-rope, rope and value head dims and ``H = hidden_size``:

* **0.7.1–0.7.3** (matrix absorption, on by default; ``vllm/attention/backends/mla/utils.py``,
  https://github.com/vllm-project/vllm/blob/v0.7.3/vllm/attention/backends/mla/utils.py):
  ``W_Q_UK`` (``N·L × Lq``) and ``W_UV_O`` (``H × N·L``), re-quantised to fp8 when the checkpoint is
  fp8 (1 B + one fp32 scale per 128×128 block), else in the activation dtype; ``W_QR``
  (``Lq × N·R``) in the activation dtype; and the dequantised ``kv_b_proj`` (``L × N·(P+V)``) kept
  alive by its ``W_UK``/``W_UV`` views, fp32 in 0.7.1–0.7.2 and the activation dtype in 0.7.3. The
  checkpoint's ``q_b_proj``, ``kv_b_proj`` and ``o_proj`` stay for prefill.
* **0.8.0 on** (vLLM pull request 14770 removed the absorbed matrices;
  https://github.com/vllm-project/vllm/blob/v0.8.0/vllm/attention/backends/mla/common.py): only
  ``W_UK_T`` and ``W_UV``, views of ``kv_b_proj`` dequantised to the activation dtype — a copy when the
  checkpoint is quantised, nothing extra when it is not.
* Before 0.7.1 vLLM had no MLA backend (DeepSeek ran as multi-head attention): nothing.

DeepSeek-R1 (fp8) at TP 8 on 0.7.3: 75.0 MiB a layer, 4.47 GiB per GPU over 61 layers — vLLM
printed 83.88 GiB of weights where the checkpoint's share is 79.3 GiB.
"""
from __future__ import annotations

from calculators.specs.schema import ModelSpec
from calculators.vllm.versions import VllmVersion, caches_mla_latent

#: fp8 block size of the re-quantised absorbed matrices (one fp32 scale per block).
FP8_BLOCK = 128
FP32_BYTES = 4


def _fp8_bytes(rows: int, cols: int) -> float:
    """A ``rows × cols`` fp8 matrix with one fp32 scale per 128×128 block [bytes]."""
    return rows * cols + FP32_BYTES * -(-rows // FP8_BLOCK) * -(-cols // FP8_BLOCK)


def mla_load_bytes_per_layer(model: ModelSpec, v: VllmVersion, quantization: str, tensor_parallel_size: int,
                             act_bytes: int) -> float:
    """Bytes one MLA layer's derived tensors take on one GPU [bytes]; 0 for other models.

    ``quantization`` is the resolved weight format (``none`` for an unquantised checkpoint).
    """
    if not model.is_mla or not caches_mla_latent(v):
        return 0.0
    mla = model.mla_dims
    n = model.num_attention_heads // tensor_parallel_size
    latent, lq = mla.kv_lora_rank, model.q_lora_rank or model.hidden_size
    quantized = quantization != "none"
    kv_b_dtype = act_bytes if v.at_least(0, 7, 3) else FP32_BYTES
    kv_b_copy = latent * n * (mla.qk_nope_head_dim + mla.v_head_dim) * kv_b_dtype if quantized else 0.0
    if v.at_least(0, 8):
        return float(kv_b_copy)
    if quantization == "fp8":
        absorbed = _fp8_bytes(n * latent, lq) + _fp8_bytes(model.hidden_size, n * latent)
    else:
        absorbed = (n * latent * lq + model.hidden_size * n * latent) * act_bytes
    return float(absorbed + lq * n * mla.qk_rope_head_dim * act_bytes + kv_b_copy)
