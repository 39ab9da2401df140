"""Disaggregated prefill/decode: a prefill pool and a decode pool sized separately, the KV hand-off between them.

Splitting the phases (DistServe, Zhong et al., OSDI 2024; Splitwise, Patel et al., ISCA 2024; vLLM's
``--kv-transfer-config``) lets prefill run at a good batch on its own GPUs while decode runs at the
batch its TPOT target allows, with no prefill chunks stalling the decode steps. The price is the KV
cache of every prompt crossing a link once:

    KV bytes moved per request = input_len × KV bytes per token of the whole model (all TP ranks)
    transfer time              = KV bytes moved / link bandwidth per direction

Per request, the GPU time of each phase is (``G`` = GPUs of one instance, ``b`` = batch):

    prefill GPU-s = prefill(b prompts) / b × G_prefill        (b = the token budget's worth of prompts)
    decode GPU-s  = output_len × decode step(b, input_len + output_len/2) / b × G_decode

and their ratio is the prefill:decode GPU ratio of a balanced deployment. Each pool gets as many
instances as the load needs at the utilisation cap; p99 TTFT = prefill p99 queueing wait (one server
per prefill instance, deterministic service: M/D/1 by Allen–Cunneen) + one prompt's prefill + the
KV transfer; TPOT = the decode step at the chosen batch (no prefill interference).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.memory.kv_cache import kv_bytes_per_token
from calculators.perf.roofline import Efficiencies, Roofline
from calculators.planning.fleet import (
    SECONDS_PER_HOUR,
    UTILISATION_CAP,
    Layout,
    LayoutPlan,
    Workload,
    batch_candidates,
    default_max_model_len,
    enumerate_layouts,
    gpu_price,
    plan_fleet,
)
from calculators.planning.queueing import batched_server_wait
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.validation import fraction, positive
from calculators.vllm.capacity import vllm_capacity
from calculators.vllm.concurrency import batch_limit

#: PCIe 5.0 x16 per direction: 32 GT/s × 16 lanes ÷ 8 ≈ 64 GB/s raw, ~63 GB/s after 128b/130b
#: encoding (PCI-SIG PCIe 5.0 base specification). Used when a GPU has no scale-up link.
PCIE5_X16_BYTES_PER_S = 63e9
#: Instances of one pool tried at once before falling back to a bisection-free closed form.
_MAX_EXTRA = 64


def kv_bytes_per_request(model: ModelSpec, input_len: ArrayLike, *, kv_cache_dtype: str = "auto",
                         dtype: str = "auto") -> np.ndarray:
    """KV cache bytes one prompt leaves behind, for the whole model (all TP ranks) [bytes].

    ``input_len × kv_bytes_per_token(model, tensor_parallel_size=1)``: the unique KV, not the
    per-rank copies a TP group may replicate when ``tp > num_key_value_heads``.
    Golden: Llama-3.1-70B bf16, 2,000 tokens → 2,000 × 327,680 B = 655,360,000 B.
    """
    n = np.asarray(positive("input_len", input_len), dtype=np.float64)
    per_token = float(kv_bytes_per_token(model, kv_cache_dtype=kv_cache_dtype, dtype=dtype))
    return n * per_token


def transfer_link(gpu: GPUSpec, inter_node_gb_per_s: float | None = None) -> tuple[float, str]:
    """The link the KV crosses [bytes/s per direction] and a sentence naming it.

    Default: the GPU's scale-up link per direction (prefill and decode instances in one node).
    ``inter_node_gb_per_s`` [decimal GB/s] for pools in different nodes (e.g. 50 for 400 Gb/s
    InfiniBand, 400 for 8 × 400 Gb/s NICs). A GPU without a scale-up link falls back to PCIe 5.0 x16.
    """
    if inter_node_gb_per_s is not None:
        bw = float(positive("inter_node_gb_per_s", inter_node_gb_per_s)) * 1e9
        return bw, f"inter-node network, {inter_node_gb_per_s:g} GB/s per direction (given)"
    if gpu.scale_up_bytes_per_s_per_direction > 0:
        bw = gpu.scale_up_bytes_per_s_per_direction
        return bw, f"{gpu.id} scale-up link, {bw / 1e9:g} GB/s per direction ({gpu.scale_up_link})"
    return PCIE5_X16_BYTES_PER_S, f"PCIe 5.0 x16, {PCIE5_X16_BYTES_PER_S / 1e9:g} GB/s per direction " \
                                  f"({gpu.id} has no scale-up link)"


def kv_transfer_time_s(kv_bytes: ArrayLike, link_bytes_per_s: ArrayLike, *, latency_s: ArrayLike = 0.0) -> np.ndarray:
    """Time to move ``kv_bytes`` over a link [s] = bytes / bandwidth per direction + latency.

    Golden: 655,360,000 B at 450 GB/s (H100 NVLink 4, per direction) = 1.456 ms.
    """
    b = np.asarray(kv_bytes, dtype=np.float64)
    if np.any(b < 0):
        raise InvalidInputError("kv_bytes", b.tolist(), "a non-negative number of bytes")
    return b / np.asarray(positive("link_bytes_per_s", link_bytes_per_s), dtype=np.float64) + np.asarray(latency_s)


def prefill_batch(input_len: float, max_num_batched_tokens: int) -> int:
    """A good prefill batch: as many whole prompts as one step's token budget holds (≥ 1) [prompts]."""
    return max(1, int(max_num_batched_tokens // max(1.0, float(input_len))))


def prefill_gpu_seconds(r: Roofline, input_len: ArrayLike, batch: ArrayLike) -> np.ndarray:
    """GPU time one request's prefill costs at a batch of ``batch`` prompts [GPU·s]."""
    b = np.asarray(positive("batch", batch), dtype=np.float64)
    return r.prefill_time_s(input_len, b) / b * r.num_gpus


def decode_gpu_seconds(r: Roofline, batch: ArrayLike, input_len: ArrayLike, output_len: ArrayLike) -> np.ndarray:
    """GPU time one request's decode costs at ``batch`` concurrent sequences [GPU·s]
    = output_len × decode step(batch, input_len + output_len / 2) / batch × GPUs."""
    b = np.asarray(positive("batch", batch), dtype=np.float64)
    o = np.asarray(positive("output_len", output_len), dtype=np.float64)
    return o * r.decode_step_time_s(b, np.asarray(input_len) + o / 2) / b * r.num_gpus


@dataclass
class PoolPlan:
    """One pool of a disaggregated deployment (SI units)."""

    role: str
    tensor_parallel_size: int
    batch_size: int
    instances: int
    gpus: int
    gpu_seconds_per_request: float
    requests_per_s_per_instance: float
    utilisation: float
    latency_s: float


@dataclass
class DisaggPlan:
    """A prefill pool + a decode pool on one GPU type, and how it compares with co-located serving."""

    gpu: str
    fits: bool
    meets_slo: bool
    message: str
    kv_bytes_per_request: float = 0.0
    link_bytes_per_s: float = 0.0
    link: str = ""
    transfer_s: float = 0.0
    prefill: PoolPlan | None = None
    decode: PoolPlan | None = None
    prefill_decode_gpu_ratio: float | None = None
    total_gpus: int = 0
    ttft_p99_s: float | None = None
    tpot_s: float | None = None
    usd_per_gpu_hour: float | None = None
    usd_per_hour: float | None = None
    usd_per_million_tokens: float | None = None
    colocated: LayoutPlan | None = None
    beats_colocated: bool | None = None
    verdict: str = ""
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _roofline(model: ModelSpec, gpu: GPUSpec, tp: int, kw: dict) -> Roofline:
    return Roofline(model, gpu, tensor_parallel_size=tp, quantization=kw.get("quantization"),
                    kv_cache_dtype=kw.get("kv_cache_dtype", "auto"),
                    efficiencies=kw.get("efficiencies") or Efficiencies(),
                    max_num_batched_tokens=kw["max_num_batched_tokens"])


def _capacity(model: ModelSpec, lay: Layout, w: Workload, kw: dict):
    return vllm_capacity(model, gpu=lay.gpu, tensor_parallel_size=lay.tensor_parallel_size, quantization=kw.get(
        "quantization"), kv_cache_dtype=kw.get("kv_cache_dtype", "auto"),
        gpu_memory_utilization=kw.get("gpu_memory_utilization", 0.9),
        max_model_len=kw.get("max_model_len") or default_max_model_len(model, w),
        expert_parallel_size=lay.tensor_parallel_size if lay.expert_parallel else None)


def _prefill_pool(model: ModelSpec, lay: Layout, w: Workload, transfer_s: float, cap_u: float, kw: dict):
    """Fewest prefill instances of this layout meeting the TTFT target (with the transfer) at the cap."""
    cap = _capacity(model, lay, w, kw)
    if not cap.fits:
        return None
    kw = {**kw, "max_num_batched_tokens": cap.settings.max_num_batched_tokens}
    r = _roofline(model, lay.gpu, lay.tensor_parallel_size, kw)
    b = prefill_batch(w.input_len, cap.settings.max_num_batched_tokens)
    service_s = float(r.prefill_time_s(w.input_len, b)) / b          # one request's share of a batch
    own_s = float(r.prefill_time_s(w.input_len, 1))
    start = max(1, math.ceil(w.request_rate_per_s * service_s / cap_u))
    n = start + np.arange(_MAX_EXTRA + 1)
    wait = batched_server_wait(w.request_rate_per_s / n, service_s, 1, service_cv=0.0).p99_wait_s
    ttft = own_s + wait + transfer_s
    ok = ttft <= (w.ttft_p99_s if w.ttft_p99_s is not None else np.inf)
    i = int(np.argmax(ok)) if ok.any() else 0
    gpus_per = lay.gpus_per_replica
    pool = PoolPlan("prefill", lay.tensor_parallel_size, b, int(n[i]), int(n[i]) * gpus_per,
                    float(prefill_gpu_seconds(r, w.input_len, b)), 1 / service_s,
                    float(w.request_rate_per_s * service_s / n[i]), float(ttft[i]))
    return pool, bool(ok.any())


def _decode_pool(model: ModelSpec, lay: Layout, w: Workload, cap_u: float, kw: dict):
    """Decode instances of this layout at the largest batch whose step meets the TPOT target."""
    cap = _capacity(model, lay, w, kw)
    if not cap.fits:
        return None
    limit = batch_limit(model, cap, w.longest_len)
    if limit < 1:
        return None
    kw = {**kw, "max_num_batched_tokens": cap.settings.max_num_batched_tokens}
    r = _roofline(model, lay.gpu, lay.tensor_parallel_size, kw)
    b = batch_candidates(limit)
    tpot = r.decode_step_time_s(b, w.input_len + w.output_len / 2)
    rate = b / (w.output_len * tpot)
    need = np.ceil(w.request_rate_per_s / (cap_u * rate))
    ok = tpot <= (w.tpot_p99_s if w.tpot_p99_s is not None else np.inf)
    i = int(np.flatnonzero(ok)[np.argmin(need[ok])]) if ok.any() else int(np.argmin(tpot))
    n = int(need[i])
    pool = PoolPlan("decode", lay.tensor_parallel_size, int(b[i]), n, n * lay.gpus_per_replica,
                    float(decode_gpu_seconds(r, b[i], w.input_len, w.output_len)), float(rate[i]),
                    w.request_rate_per_s / (n * float(rate[i])), float(tpot[i]))
    return pool, bool(ok.any())


def plan_disaggregated(model: ModelSpec, gpu: GPUSpec, w: Workload, *, inter_node_gb_per_s: float | None = None,
                       utilisation_cap: float = UTILISATION_CAP, usd_per_gpu_hour: float | None = None,
                       colocated: list[LayoutPlan] | None = None, **kw) -> DisaggPlan:
    """Size a prefill pool and a decode pool (TP within a node, PP 1) and compare with co-located serving.

    Parameters
    ----------
    model, gpu
        What to serve, on which GPU type (both pools).
    w
        The workload and its SLO [requests/s, tokens, s].
    inter_node_gb_per_s
        KV link between the pools [GB/s per direction]; ``None`` = the GPU's scale-up link (one node).
    utilisation_cap
        Largest share of each pool's capacity the load may use [0–1].
    colocated
        ``plan_fleet`` plans for the comparison (computed for this GPU when not given).
    kw
        ``quantization``, ``kv_cache_dtype``, ``gpu_memory_utilization``, ``max_model_len``,
        ``efficiencies`` — as :func:`calculators.planning.fleet.plan_layout`.

    Returns
    -------
    DisaggPlan
        The cheapest (fewest GPUs) pair meeting the SLO, else the closest, with the verdict.
    """
    fraction("utilisation_cap", utilisation_cap)
    link_bw, link = transfer_link(gpu, inter_node_gb_per_s)
    kv = float(kv_bytes_per_request(model, w.input_len, kv_cache_dtype=kw.get("kv_cache_dtype", "auto")))
    out = DisaggPlan(gpu=gpu.id, fits=False, meets_slo=False, message="", kv_bytes_per_request=kv,
                     link_bytes_per_s=link_bw, link=link, transfer_s=float(kv_transfer_time_s(kv, link_bw)))
    layouts = enumerate_layouts(model, [gpu], max_pp=1, dp_attention=False)
    pre = [p for p in (_prefill_pool(model, lay, w, out.transfer_s, utilisation_cap, kw) for lay in layouts) if p]
    dec = [d for d in (_decode_pool(model, lay, w, utilisation_cap, kw) for lay in layouts) if d]
    if not pre or not dec:
        out.message = f"{model.id} fits no single-node layout of {gpu.id}"
        return out
    out.fits = True
    best_p = min(pre, key=lambda x: (not x[1], x[0].gpus))
    best_d = min(dec, key=lambda x: (not x[1], x[0].gpus))
    (p, p_ok), (d, d_ok) = best_p, best_d
    out.prefill, out.decode, out.meets_slo = p, d, p_ok and d_ok
    out.prefill_decode_gpu_ratio = p.gpu_seconds_per_request / d.gpu_seconds_per_request
    out.total_gpus = p.gpus + d.gpus
    out.ttft_p99_s, out.tpot_s = p.latency_s, d.latency_s
    out.usd_per_gpu_hour, _ = gpu_price(gpu, usd_per_gpu_hour)
    if out.usd_per_gpu_hour is not None:
        out.usd_per_hour = out.total_gpus * out.usd_per_gpu_hour
        tokens_per_s = w.request_rate_per_s * (w.input_len + w.output_len)
        out.usd_per_million_tokens = out.usd_per_hour / SECONDS_PER_HOUR / tokens_per_s * 1e6
    out.message = (f"{p.instances} × TP{p.tensor_parallel_size} prefill + {d.instances} × TP{d.tensor_parallel_size} "
                   f"decode = {out.total_gpus} {gpu.id}")
    if not out.meets_slo:
        out.message += " — misses the SLO" + ("" if p_ok else " (TTFT)") + ("" if d_ok else " (TPOT)")
    _compare(out, model, gpu, w, colocated, utilisation_cap, usd_per_gpu_hour, kw)
    return out


def _compare(out: DisaggPlan, model: ModelSpec, gpu: GPUSpec, w: Workload, colocated: list[LayoutPlan] | None,
             cap_u: float, price: float | None, kw: dict) -> None:
    plans = colocated if colocated is not None else plan_fleet(model, [gpu], w, utilisation_cap=cap_u,
                                                               usd_per_gpu_hour=price, **kw)
    best = next((p for p in plans if p.gpu == gpu.id and p.meets_slo), None)
    out.colocated = best
    if best is None:
        out.beats_colocated = out.meets_slo
        out.verdict = ("disaggregation meets the SLO where no co-located layout does" if out.meets_slo
                       else "neither co-located nor disaggregated serving meets the SLO on " + gpu.id)
        return
    if not out.meets_slo:
        out.beats_colocated = False
        out.verdict = f"co-located wins: {best.total_gpus} GPUs meet the SLO; the disaggregated pools do not"
        return
    out.beats_colocated = out.total_gpus < best.total_gpus
    diff = best.total_gpus - out.total_gpus
    out.verdict = (f"disaggregation {'saves' if diff > 0 else 'costs'} {abs(diff)} GPU(s): {out.total_gpus} vs "
                   f"{best.total_gpus} co-located (TP{best.tensor_parallel_size}×PP{best.pipeline_parallel_size})"
                   if diff else f"a tie: {out.total_gpus} GPUs either way — co-located is simpler to run")
