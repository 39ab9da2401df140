"""How vLLM lays quantised weights out in GPU memory, by GPU and release, where the checkpoint does not say.

**MXFP4 experts: which MoE kernel vLLM picks, and how that kernel pads them.** gpt-oss checkpoints store
their experts in MXFP4. vLLM runs them through one of several kernels, chosen at start-up by
``get_mxfp4_backend`` and each padding the expert matrices to its own tile sizes in
``Mxfp4MoEMethod.create_weights`` (vllm/model_executor/layers/quantization/mxfp4.py, read at v0.10.2,
v0.11.0, v0.12.0 and v0.15.1):

* **Marlin** (GPUs before Hopper, and the fallback): hidden size to a multiple of 256, each TP rank's
  share of the expert width to a multiple of 128.
* **Triton** (``triton_kernels``' ``matmul_ogs``; Hopper from 0.12.0, which vendors the package as
  ``vllm.third_party.triton_kernels``; before, Hopper took it only where that package was installed, and
  0.10.1's torch 2.7 was too old for it): the rank's expert width to a multiple of 64; the weight swizzle
  for Hopper's layout brings the hidden size to a multiple of 256, as the loaded size shows: gpt-oss-120b
  at TP 2 on two H200s with 0.15.1 printed ``Model loading took 32.98 GiB``, which is 3,072 × 1,472 per
  rank (Marlin's 3,072 × 1,536 would be 34.32 GiB).
* **FlashInfer** (compute capability 10.x, B200/B300, with FlashInfer installed, as every release from
  0.11.1 requires): both to multiples of 256.
* **ROCm** (Triton on AMD GPUs): both to multiples of 256.

GPUs of compute capability 12.x (RTX 5090, RTX PRO 6000) take Marlin: ``triton_kernels`` is not
supported beyond 11.0.

**bitsandbytes 4-bit statistics.** Before 0.10 vLLM kept a checkpoint's double-quantised absmaxes as stored
(one uint8 per 64 weights, one fp32 per 256 blocks) and quantised bf16 checkpoints in flight with
``quantize_4bit(compress_statistics=True)`` (``BitsAndBytesModelLoader._unquantized_generator`` in
vllm/model_executor/model_loader/loader.py, v0.8.5); from 0.10 it dequantises them to one fp32 per 64 weights
(pull request 19742). Llama-3.1-405B quantised in flight at TP 8 on A100-40GB cards with 0.7.2 printed
``Loading model weights took 25.14 GiB``: 25.14 with nested statistics, 27.32 with fp32 ones. The rule assumes
nested statistics before 0.10, which a checkpoint saved without double quantisation would not have
(3/64 B a weight less than it keeps).
"""
from __future__ import annotations

from calculators.memory.weights import MXFP4_MARLIN_PADDING, WeightLayout
from calculators.specs.schema import GPUSpec
from calculators.vllm.versions import VllmVersion

#: (hidden-size multiple, per-rank expert-width multiple) of each kernel's padded expert matrices.
MXFP4_PADDING: dict[str, tuple[int, int]] = {"marlin": MXFP4_MARLIN_PADDING, "triton": (256, 64),
                                             "flashinfer": (256, 256), "rocm": (256, 256)}
_KERNEL_NAMES = {"marlin": "Marlin", "triton": "Triton", "flashinfer": "FlashInfer", "rocm": "ROCm Triton"}
#: The first release that ships ``triton_kernels`` inside vLLM (``vllm/third_party/triton_kernels``).
TRITON_KERNELS_VENDORED = (0, 12, 0)
#: The first release that dequantises bitsandbytes' nested statistics at load (pull request 19742).
BNB_STATISTICS_DEQUANTISED = (0, 10, 0)


def mxfp4_moe_backend(gpu: GPUSpec | None, v: VllmVersion) -> str:
    """The MXFP4 MoE kernel of ``gpu`` in release ``v`` (a key of :data:`MXFP4_PADDING`); Marlin where the
    GPU is not known."""
    if gpu is None:
        return "marlin"
    if gpu.vendor == "AMD":
        return "rocm"
    major = int(gpu.compute_capability.split(".")[0]) if gpu.compute_capability else 0
    if major == 10:
        return "flashinfer"
    if major == 9 and v.at_least(*TRITON_KERNELS_VENDORED):
        return "triton"
    return "marlin"


def mxfp4_padding(gpu: GPUSpec | None, v: VllmVersion) -> tuple[int, int]:
    """(hidden, per-rank expert width) multiples of the expert matrices vLLM allocates for ``gpu`` in ``v``."""
    return MXFP4_PADDING[mxfp4_moe_backend(gpu, v)]


def weight_layout(gpu: GPUSpec | None, v: VllmVersion) -> WeightLayout:
    """How vLLM ``v`` lays quantised weights out on ``gpu`` (:class:`calculators.memory.weights.WeightLayout`)."""
    return WeightLayout(mxfp4_padding=mxfp4_padding(gpu, v),
                        bnb_nested_statistics=not v.at_least(*BNB_STATISTICS_DEQUANTISED))


def mxfp4_note(gpu: GPUSpec | None, v: VllmVersion) -> str:
    """How the weights were padded, in words, for a result's notes."""
    backend = mxfp4_moe_backend(gpu, v)
    hidden, width = MXFP4_PADDING[backend]
    where = "an unknown GPU (Marlin assumed)" if gpu is None else gpu.name
    return (f"MXFP4 experts padded as vLLM {v.text}'s {_KERNEL_NAMES[backend]} kernel pads them on {where}: hidden "
            f"size to a multiple of {hidden}, each GPU's share of the expert width to a multiple of {width} "
            "(docs/vllm-memory.md §2.2)")

__all__ = ["BNB_STATISTICS_DEQUANTISED", "MXFP4_PADDING", "TRITON_KERNELS_VENDORED", "mxfp4_moe_backend",
           "mxfp4_note", "mxfp4_padding", "weight_layout"]
