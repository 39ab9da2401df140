"""Estimates of the start-up terms vLLM measures rather than computes, each with a range.

vLLM *measures* the activation peak of a dummy forward pass, the growth of non-torch memory and
the CUDA-graph pool; no formula reproduces them exactly. The shapes of the rules below follow
what the profile run does in each release (docs/vllm-memory.md §2.3–§2.5); their constants are
fitted to the public start-up logs of the test corpus and judged leave-one-source-out by the
start-up accuracy benchmark (docs/vllm-memory.md §7). Each term is an :class:`Estimate`
``(value, low, high)`` in bytes; the ranges come from the same fit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.units import GiB, MiB
from calculators.vllm.versions import VllmVersion, uses_v2_model_runner

if TYPE_CHECKING:
    from calculators.vllm.encoder_profile import EncoderPass

#: Live activation tensors per batched token while the MLP's down projection runs: the residual, the
#: normalised input the decoder layer still holds and the projection's output (3·hidden), and the gate/up
#: output, which the MLP's local variable keeps alive, plus the activation output (3 × FFN width on this rank),
#: in the activation dtype (``Qwen2MLP.forward`` / ``LlamaMLP.forward`` and their decoder layers in
#: vllm/model_executor/models/); MoE models add the fused-MoE kernel's routed outputs, ``top_k × hidden``
#: whatever the TP size (``intermediate_cache3`` in vllm/model_executor/layers/fused_moe/fused_moe.py).
ACTIVATION_HIDDEN_COPIES = 3
#: bitsandbytes 4-bit linears compute each output shard into a tensor of their own and copy it into the
#: layer's output (``_apply_bnb_4bit`` in vllm/model_executor/layers/quantization/bitsandbytes.py, v0.8.5 and
#: v0.12.0, "Infeasible now due to the bug" in bitsandbytes' ``out=``), after dequantising the shard's weight:
#: one more hidden-size copy per token during the down projection, and that projection's bf16 weight.
BNB_EXTRA_HIDDEN_COPIES = 1
#: MoE layers with shared experts run them first and keep their output, one hidden-size copy per token, while
#: the routed experts run (``DeepseekV2MoE.forward`` in vllm/model_executor/models/deepseek_v2.py, v0.7.3 and
#: v0.9.2; ``FusedMoEModularKernel.forward`` in vllm/model_executor/layers/fused_moe/modular_kernel.py, v0.10.2).
SHARED_EXPERT_OUTPUT_COPIES = 1
ACTIVATION_FFN_COPIES = 3
#: Capture sizes up to 512 tokens make the full CUDA-graph pool; fewer sequences capture fewer.
CUDAGRAPH_FULL_CAPTURE_TOKENS = 512
#: Releases ``[from, until)`` whose start-up profile counts as consumed the freed activation segments that a
#: later small allocation pins: 0.27.0 measures consumption as the drop in free memory since the start-up
#: snapshot, and only 0.31.0 runs the profile with a 20 MiB split limit, "without [which] a later small
#: allocation can be carved out of a freed multi-GiB block and pin the whole segment past the empty_cache()
#: … so it is counted as consumed and taken from the KV cache" (``Worker.determine_available_memory`` and
#: ``memory_profiling`` in vllm/v1/worker/gpu_worker.py and vllm/utils/mem_utils.py, v0.27.0 and v0.31.0).
PINNED_SEGMENT_RELEASES = ((0, 27, 0), (0, 31, 0))
#: GPU architectures whose NVLink switch systems give NCCL its NVLink-SHARP buffers.
NVSWITCH_ARCHITECTURES = ("Hopper", "Blackwell", "Blackwell Ultra")
#: How each non-torch class (:func:`non_torch_class`) reads in an explanation.
NON_TORCH_CLASS_WORDS = {"one_gpu": "one GPU", "one_gpu_before_0_7": "one GPU, vLLM before 0.7",
                         "multi_gpu": "several GPUs on PCIe or across nodes, or A100s on NVLink",
                         "nvlink_before_0_9": "NVLink, vLLM before 0.9: NCCL connects its buffers at start-up",
                         "nvswitch": "NVLink switch: NCCL's NVLink-SHARP buffers",
                         "nvswitch_before_0_9": "NVLink switch, vLLM before 0.9: NCCL connects its buffers, "
                                                "NVLink-SHARP's too, at start-up",
                         "rocm": "AMD GPUs: HIP runtime, hipBLASLt and RCCL workspaces"}
#: ``flashinfer_sampler`` values: the release's default, or what the log's sampler line says
#: ("Using FlashInfer for top-p & top-k sampling" = ``on``; "Falling back to the PyTorch-native
#: implementation" = ``off``). vLLM's switch is the environment variable VLLM_USE_FLASHINFER_SAMPLER.
FLASHINFER_SAMPLER_CHOICES = ("auto", "on", "off")
#: V1 releases ``[from, until)`` whose profile run samples through FlashInfer's top-k/top-p kernel
#: exactly when the flashinfer package is installed, as it is in the vllm/vllm-openai images and not
#: in a plain ``pip install vllm``: 0.8.x (the images' FlashInfer 0.2.1 predates the 0.2.3 cut-off of
#: vLLM pull request 14815) and 0.9.0–0.11.0 (pull request 15777 re-enabled it for any version).
#: From 0.11.1 (pull request 26859) the sampler is opt-in, and from 0.17 the fallback no longer
#: sorts (docs/vllm-memory.md §2.3).
FLASHINFER_SAMPLER_DEFAULT_RELEASES = ((0, 8, 0), (0, 11, 1))
#: How each sampler profile reads in an explanation.
SAMPLER_PASS_WORDS = {"v0_sort": "top-p/top-k sort", "v1_sort": "top-p/top-k sort",
                      "flashinfer": "FlashInfer top-k/top-p kernel",
                      "v1_flashinfer_if_installed": "top-p/top-k sort; FlashInfer's kernel if installed",
                      "v1_in_place": "fp32 logits, probabilities and exponential draws; top-k/top-p in place",
                      "logits": "logits only"}


@dataclass(frozen=True)
class Span:
    """A fitted constant: the value used and the low and high ends of its range."""

    low: float
    value: float
    high: float


@dataclass(frozen=True)
class Coefficients:
    """The fitted constants of the start-up estimates (docs/vllm-memory.md §2.3–§2.5).

    ``sampler_bytes`` are bytes per vocabulary entry per dummy request of the profile run's
    sampler pass, by sampler profile (:func:`sampler_profile`); ``non_torch_bytes`` per GPU by
    :func:`non_torch_class`.
    """

    activation_base_bytes: Span
    forward_factor: Span
    pinned_factor: Span
    sampler_bytes: dict[str, Span] = field(default_factory=dict)
    non_torch_bytes: dict[str, Span] = field(default_factory=dict)
    cudagraph_per_layer_bytes: dict[str, Span] = field(default_factory=dict)


#: Fitted on the corpus's printed terms and implied overheads (budget − weights − KV);
#: benchmarks/startup_accuracy.py refits them without each log's source to judge them. The forward factor
#: is 1 (the per-token formula as derived, not fitted; its range is the spread the logs allow). So is the
#: in-place sampler's 14 B per vocabulary entry (2 B model-dtype logits + 4 B fp32 copy + 4 B fp32
#: probabilities + 4 B fp32 exponential draws: ``Sampler.forward`` and ``TopKTopPSampler.forward_native``
#: in vllm/v1/sample/ of v0.21.0), its range from the bare logits to the Triton kernel's fp32 scratch.
COEFFICIENTS = Coefficients(
    activation_base_bytes=Span(0.0, 0.05 * GiB, 0.6 * GiB),
    forward_factor=Span(0.8, 1.0, 2.6),
    pinned_factor=Span(0.0, 1.0, 2.0),
    sampler_bytes={"v0_sort": Span(20, 40, 40), "v1_sort": Span(30, 38, 40), "flashinfer": Span(8, 12, 20),
                   "v1_flashinfer_if_installed": Span(8, 38, 40), "v1_in_place": Span(6, 14, 16),
                   "logits": Span(0, 6, 12)},
    non_torch_bytes={"one_gpu": Span(0.0, 0.04 * GiB, 0.5 * GiB),
                     "one_gpu_before_0_7": Span(0.2 * GiB, 0.38 * GiB, 0.5 * GiB),
                     "multi_gpu": Span(0.0, 0.2 * GiB, 0.7 * GiB),
                     "nvlink_before_0_9": Span(1.0 * GiB, 3.0 * GiB, 3.0 * GiB),
                     "nvswitch": Span(0.2 * GiB, 2.5 * GiB, 4.0 * GiB),
                     "nvswitch_before_0_9": Span(2.25 * GiB, 7.25 * GiB, 10.0 * GiB),
                     "rocm": Span(0.0, 2.5 * GiB, 4.0 * GiB)},
    cudagraph_per_layer_bytes={"dense": Span(8 * MiB, 17 * MiB, 34 * MiB), "moe": Span(3 * MiB, 17 * MiB, 74 * MiB)},
)


@dataclass(frozen=True)
class Estimate:
    """An estimated quantity [bytes] with the range it may take and how it was estimated."""

    value: float
    low: float
    high: float
    basis: str

    @classmethod
    def exact(cls, value: float, basis: str) -> Estimate:
        return cls(value, value, value, basis)

    def plus(self, other: Estimate) -> Estimate:
        """The sum of two estimated terms, ends added to ends."""
        return Estimate(self.value + other.value, self.low + other.low, self.high + other.high,
                        f"{self.basis} + {other.basis}")


def sampler_profile(v: VllmVersion, model: ModelSpec, quantized: bool, flashinfer_sampler: str = "auto") -> str:
    """Which sampler pass the release's profile run makes (docs/vllm-memory.md §2.3).

    ``v0_sort`` / ``v1_sort``: the dummy requests are sampled with top-p/top-k by a full sort of the
    logits (V0; the V1 model runner from 0.8.0, ``_dummy_sampler_run`` in
    vllm/v1/worker/gpu_model_runner.py, vLLM pull request 13594). ``flashinfer``: the same requests
    through FlashInfer's top-k/top-p kernel, which sorts nothing. ``v1_flashinfer_if_installed``:
    releases that take that kernel by default whenever flashinfer is installed
    (:data:`FLASHINFER_SAMPLER_DEFAULT_RELEASES`), when the install is not known. ``v1_in_place``: the
    V1 runner from 0.17, whose top-k/top-p runs in place (a Triton kernel, or FlashInfer's from 0.21)
    beside an fp32 copy of the logits, fp32 probabilities and fp32 exponential draws, whichever sampler
    is installed. ``logits``: V1 0.7.x and the V2 model runner, whose dummy batch carries no sampling
    parameters. ``flashinfer_sampler`` (:data:`FLASHINFER_SAMPLER_CHOICES`) overrides the release's
    default before 0.17.
    """
    if v.engine == "V1" and (not v.at_least(0, 8) or uses_v2_model_runner(v, model, quantized)):
        return "logits"
    if v.engine == "V1" and v.at_least(0, 17):
        return "v1_in_place"
    if flashinfer_sampler == "on":
        return "flashinfer"
    if v.engine == "V0":
        return "v0_sort"
    start, until = FLASHINFER_SAMPLER_DEFAULT_RELEASES
    if flashinfer_sampler == "auto" and v.at_least(*start) and not v.at_least(*until):
        return "v1_flashinfer_if_installed"
    return "v1_sort"


def non_torch_class(num_gpus: int, gpu: GPUSpec | None, v: VllmVersion) -> str:
    """``rocm`` (AMD GPUs: the HIP runtime's and hipBLASLt's workspaces), else ``one_gpu``,
    ``multi_gpu`` or ``nvswitch`` (several Hopper/Blackwell GPUs on NVLink).

    ``one_gpu_before_0_7``: one GPU on a release ``v`` before 0.7, whose
    printed non-torch memory on one GPU is 0.26–0.47 GiB where 0.7 onwards print 0.01–0.09 GiB.
    ``nvlink_before_0_9``: several other GPUs on NVLink (A100 SXM) on a release before 0.9, whose torch
    2.6 or older ships NCCL ≤ 2.21: its communicators connect their ring and tree buffers, many channels
    wide on NVLink, when they are created, where NCCL 2.22+ (torch 2.7, vLLM 0.9) connects them at the
    first collective that needs them (docs/vllm-memory.md §2.4). ``nvswitch_before_0_9``: the same eager
    connection on Hopper/Blackwell NVLink switch boards, where it also sets up NVLink-SHARP buffers for
    every communicator of more than two GPUs.
    """
    if gpu is not None and gpu.vendor == "AMD":
        return "rocm"
    if num_gpus <= 1:
        return "one_gpu" if v.at_least(0, 7) else "one_gpu_before_0_7"
    if gpu is None or not gpu.scale_up_link.startswith("NVLink"):
        return "multi_gpu"
    if gpu.architecture in NVSWITCH_ARCHITECTURES:
        return "nvswitch" if v.at_least(0, 9) else "nvswitch_before_0_9"
    return "multi_gpu" if v.at_least(0, 9) else "nvlink_before_0_9"


def _ffn_width(model: ModelSpec) -> int:
    return max(model.intermediate_size,
               model.num_experts_per_tok * model.moe_intermediate_size + model.shared_expert_intermediate_size)


def _forward_bytes_per_token(model: ModelSpec, tensor_parallel_size: int, act_bytes: int,
                             quantization: str = "none") -> float:
    """Live activation tensors per batched token at the forward's peak on one GPU [bytes]: hidden-size copies
    (:data:`ACTIVATION_HIDDEN_COPIES`, the bitsandbytes and shared-expert extras), MoE routed outputs and the
    FFN buffers split by TP (:data:`ACTIVATION_FFN_COPIES`)."""
    moe_out = model.num_experts_per_tok * model.hidden_size if model.is_moe else 0
    hidden = (ACTIVATION_HIDDEN_COPIES + (BNB_EXTRA_HIDDEN_COPIES if quantization == "bitsandbytes" else 0)
              + (SHARED_EXPERT_OUTPUT_COPIES if model.is_moe and model.shared_expert_intermediate_size else 0))
    return (hidden * model.hidden_size + moe_out + ACTIVATION_FFN_COPIES * _ffn_width(model) / tensor_parallel_size
            ) * act_bytes


def _dequantised_weight_bytes(model: ModelSpec, tensor_parallel_size: int, quantization: str) -> float:
    """The bf16 down-projection weight bitsandbytes dequantises for its matmul, held beside the forward's
    tensors [bytes] (:data:`BNB_EXTRA_HIDDEN_COPIES`); 0 for other formats."""
    if quantization != "bitsandbytes":
        return 0.0
    return _ffn_width(model) / tensor_parallel_size * model.hidden_size * 2


def _forward_bytes(model: ModelSpec, max_num_batched_tokens: int, tensor_parallel_size: int, act_bytes: int,
                   quantization: str) -> tuple[float, float]:
    """``(forward bytes, per-token bytes)`` of the profile's forward pass on one GPU [bytes]: the per-token
    tensors over ``max_num_batched_tokens`` plus the weight bitsandbytes dequantises beside them."""
    per_token = _forward_bytes_per_token(model, tensor_parallel_size, act_bytes, quantization)
    return (max_num_batched_tokens * per_token + _dequantised_weight_bytes(model, tensor_parallel_size, quantization),
            per_token)


def activation_peak(model: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int,
                    tensor_parallel_size: int, act_bytes: int, sampler: str | None = "v1_sort",
                    encoder: EncoderPass | None = None, quantization: str = "none",
                    coefficients: Coefficients = COEFFICIENTS) -> Estimate:
    """Peak activation memory of vLLM's profile run on one GPU [bytes].

    ``max(base + forward_factor × tokens × per-token bytes, requests × vocab × sampler bytes)``:
    the forward pass over ``max_num_batched_tokens`` (with ``base``, the buffers every forward holds
    beside its per-token tensors) and the sampler pass over ``min(max_num_seqs, max_num_batched_tokens)``
    dummy requests, which runs after the forward's buffers are freed (docs/vllm-memory.md §2.3).
    ``sampler=None``: no sampler pass, as on every pipeline stage but the last (only the last rank
    samples in V0's ``execute_model`` and V1's ``profile_run``). ``encoder``: a multimodal model's
    vision-tower pass, which comes first and holds ``base`` too; the peak is then
    ``max(base + encoder pass, kept outputs + max(base + forward, sampler))``, with the sampler over the
    encoder pass's dummy requests (V0 runs fewer when each carries an image).
    """
    c = coefficients
    forward, per_token = _forward_bytes(model, max_num_batched_tokens, tensor_parallel_size, act_bytes, quantization)
    requests = max_num_seqs if encoder is None else encoder.requests
    entries = 0 if sampler is None else min(requests, max_num_batched_tokens) * model.vocab_size
    s = c.sampler_bytes[sampler] if sampler is not None else Span(0.0, 0.0, 0.0)
    first, kept = (0.0, 0.0) if encoder is None else (encoder.pass_bytes, encoder.kept_bytes)

    def peak(base: float, k: float, b: float) -> float:
        return max(base + first, kept + max(base + k * forward, entries * b))
    sampling = (f"{entries:,} vocab entries × {s.value:g} B [{SAMPLER_PASS_WORDS[sampler]}]" if sampler is not None
                else "no sampler pass on this pipeline stage")
    base_gib = c.activation_base_bytes.value / GiB
    basis = (f"max({base_gib:.2f} GiB + {c.forward_factor.value:g} × {max_num_batched_tokens} tokens × "
             f"{per_token:,.0f} B, {sampling})")
    if encoder is not None:
        basis += (f"; vision encoder first: max({base_gib:.2f} GiB + {first / GiB:.2f} GiB, {kept / GiB:.2f} GiB "
                  f"kept + the above) for {encoder.basis}")
    b, k = c.activation_base_bytes, c.forward_factor
    return Estimate(peak(b.value, k.value, s.value), peak(b.low, k.low, s.low), peak(b.high, k.high, s.high), basis)


def non_torch(num_gpus: int, gpu: GPUSpec | None, v: VllmVersion,
              coefficients: Coefficients = COEFFICIENTS) -> Estimate:
    """CUDA context growth, cuBLAS workspaces and (multi-GPU) NCCL / custom all-reduce buffers [bytes]."""
    kind = non_torch_class(num_gpus, gpu, v)
    s = coefficients.non_torch_bytes[kind]
    return Estimate(s.value, s.low, s.high, f"{s.value / GiB:.2f} GiB per GPU ({NON_TORCH_CLASS_WORDS[kind]})")


def pinned_segments(model: ModelSpec, v: VllmVersion, *, max_num_batched_tokens: int, tensor_parallel_size: int,
                    act_bytes: int, quantization: str = "none",
                    coefficients: Coefficients = COEFFICIENTS) -> Estimate | None:
    """The profile's freed forward segments that releases 0.27–0.30 count as consumed [bytes]
    (:data:`PINNED_SEGMENT_RELEASES`), None in others: ``pinned_factor`` × the forward pass's tensors, as
    :func:`activation_peak` counts them. The factor is 1 as derived (each of the forward's large
    transient blocks pinned once), not fitted; its range runs from none pinned to twice as much.
    Qwen3-32B with 0.27.1 on RTX PRO 6000 cards left 3.86 GiB beyond its weights on one GPU and 1.66 GiB at
    TP 2, where its forward tensors are 1.41 and 0.82 GiB (docs/vllm-memory.md §2.6)."""
    start, until = PINNED_SEGMENT_RELEASES
    if v.engine != "V1" or not v.at_least(*start) or v.at_least(*until):
        return None
    forward, _ = _forward_bytes(model, max_num_batched_tokens, tensor_parallel_size, act_bytes, quantization)
    k = coefficients.pinned_factor
    return Estimate(k.value * forward, k.low * forward, k.high * forward,
                    f"{k.value * forward / GiB:.2f} GiB of freed activation segments pinned (counted as consumed "
                    f"in 0.27–0.30)")


def cudagraph(model: ModelSpec, layers_on_gpu: int, enforce_eager: bool, max_num_seqs: int = 256,
              coefficients: Coefficients = COEFFICIENTS) -> Estimate:
    """CUDA-graph pool for the default capture sizes [bytes]; zero with ``enforce_eager``.

    Layers × bytes per layer, scaled by the share of the 512-token capture range that
    ``2 × max_num_seqs`` reaches (vLLM caps capture sizes there; docs/vllm-memory.md §2.5).
    """
    if enforce_eager:
        return Estimate.exact(0.0, "enforce_eager: no CUDA graphs")
    s = coefficients.cudagraph_per_layer_bytes["moe" if model.is_moe else "dense"]
    share = min(1.0, 2 * max_num_seqs / CUDAGRAPH_FULL_CAPTURE_TOKENS)
    n = layers_on_gpu * share
    return Estimate(n * s.value, n * s.low, n * s.high,
                    f"{layers_on_gpu} layers × {s.value / MiB:.0f} MiB × {share:.2f} of the capture sizes")
