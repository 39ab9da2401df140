"""Fleet planner: layouts (TP × PP; for MoE, EP and data-parallel attention) per GPU type, replicas for a load
under an SLO, cost.

For each layout the chain is: memory fit (vLLM accounting) → KV capacity → every batch size up to
the KV limit (vectorised) → TPOT and throughput from the performance model → replicas for the
load at a utilisation cap → more replicas if the p99 TPOT at each replica's share of the load misses its
target (other requests' prompts mixed into a request's steps) → more if the p99 TTFT does (the wait for a
slot, each replica an M/G/c queue with ``c`` = batch slots and service time = end-to-end latency,
Allen–Cunneen; then the wait for the steps' token budget, an M/G/1 queue of prompts; docs/queueing.md §4;
:mod:`calculators.planning.replica_tails`) → GPUs, nodes, $/hour, $/month, $/year, $/1M input, output and all
tokens (:mod:`calculators.planning.costs`). The cheapest batch that meets the SLO wins.

Sizing: on the performance model's estimate, or ``sizing="conservative"`` for the pessimistic edge of
its 80 % timing bands (:mod:`calculators.planning.sizing`); either way each plan carries the 80 % bands
of its TPOT, p99 TPOT and p99 TTFT around the estimate.

``max_model_len``: the scenario's (what the ``vllm serve`` line carries); unset, the model's context, as
vLLM takes it.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from calculators.errors import InvalidInputError
from calculators.memory.kv_cache import check_tensor_parallel
from calculators.memory.weights import resolve_quantization
from calculators.perf.model import PerformanceModel
from calculators.perf.roofline import Efficiencies, Roofline
from calculators.perf.serving import budget_running_cap, serving_metrics, slot_view
from calculators.planning.costs import SECONDS_PER_HOUR as SECONDS_PER_HOUR
from calculators.planning.costs import fleet_costs
from calculators.planning.replica_tails import (
    TtftQueue,
    replica_p99s_s,
    replicas_for_tpot,
    replicas_for_ttft,
    tpot_curve,
    ttft_queue,
)
from calculators.planning.sizing import band_edges_s, sized_model
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.validation import fraction, positive
from calculators.vllm.concurrency import batch_limit, replica_capacity

TP_SIZES = (1, 2, 4, 8, 16)
PP_SIZES = (1, 2, 4)
UTILISATION_CAP = 0.8
SEARCH_FIRST = 8
"""Batch candidates the replica search for a TTFT target tries first, those whose load and TPOT target need the
fewest replicas; the others are searched only where they could need as few."""


#: Largest value each Workload field accepts (the app's input limits; far beyond any real deployment).
LIMITS = {"request_rate_per_s": 1e7, "input_len": 1e7, "output_len": 1e7, "ttft_p99_s": 1e6, "tpot_p99_s": 1e6,
          "input_len_p95": 1e7, "output_len_p95": 1e7}


@dataclass(frozen=True)
class Workload:
    """The traffic to serve and its latency targets (SI units)."""

    request_rate_per_s: float
    input_len: float
    output_len: float
    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    input_len_p95: float | None = None
    output_len_p95: float | None = None

    def __post_init__(self) -> None:
        for name, top in LIMITS.items():  # upper bounds: 1e308 tokens would overflow to inf downstream
            value = getattr(self, name)
            if value is None and name not in ("request_rate_per_s", "input_len", "output_len"):
                continue
            low = 1.0 if name.endswith(("_len", "_p95")) else 1e-6  # 1e-300 tokens divided by zero downstream
            if not low <= positive(name, value) <= top:
                raise InvalidInputError(name, value, f"a number from {low:g} to {top:g}")

    @property
    def longest_len(self) -> int:
        """Prompt + output of a long (p95) request [tokens]: what the KV cache must hold per slot."""
        return int(math.ceil((self.input_len_p95 or self.input_len) + (self.output_len_p95 or self.output_len)))


@dataclass(frozen=True)
class Layout:
    """One way to shard the model: a replica is ``tp × pp`` GPUs of one type; a MoE model's experts split
    across the TP GPUs (``expert_parallel``), and its attention data-parallel across them (``dp_attention``,
    docs/performance-model.md §3.7)."""

    gpu: GPUSpec
    tensor_parallel_size: int
    pipeline_parallel_size: int = 1
    expert_parallel: bool = False
    dp_attention: bool = False

    @property
    def gpus_per_replica(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size


@dataclass
class LayoutPlan:
    """A sized layout: how it fits, what it delivers, how many, what it costs (SI units, USD)."""

    gpu: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    expert_parallel: bool
    fits: bool
    meets_slo: bool
    message: str
    failure_domain_gpus: int
    kv_cache_tokens: int = 0
    kv_batch_limit: int = 0
    batch_size: int = 0
    ttft_s: float | None = None
    ttft_p99_s: float | None = None
    tpot_s: float | None = None
    tpot_p99_s: float | None = None
    e2e_latency_s: float | None = None
    allreduce_s: float | None = None
    bubble_fraction: float | None = None
    replica_requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    output_tokens_per_s_per_gpu: float | None = None
    tokens_per_s_per_user: float | None = None
    replicas: int = 0
    replicas_for_tpot: int = 0  # of ``replicas``, those the p99 TPOT target adds to what the load needs
    replicas_for_ttft: int = 0  # of ``replicas`` (spare aside), those the p99 TTFT target adds beyond the TPOT's
    total_gpus: int = 0
    nodes: int = 0
    utilisation: float | None = None
    usd_per_gpu_hour: float | None = None
    price_source: str = ""
    usd_per_hour: float | None = None
    usd_per_month: float | None = None
    usd_per_year: float | None = None
    usd_per_million_input_tokens: float | None = None
    usd_per_million_output_tokens: float | None = None
    usd_per_million_tokens: float | None = None
    prefill_share: float | None = None
    sizing: str = "estimate"
    tpot_band_low_s: float | None = None
    tpot_band_high_s: float | None = None
    tpot_p99_band_low_s: float | None = None
    tpot_p99_band_high_s: float | None = None
    ttft_p99_band_low_s: float | None = None
    ttft_p99_band_high_s: float | None = None
    max_model_len: int = 0
    compute_dtype: str = ""  # the dtype the timed figures' matmuls run in (the quantization's, else the checkpoint's)
    weights: str = ""  # the weight format in use: the quantization, else the checkpoint's (resolve_quantization)
    vllm_serve: str = ""
    dp_attention: bool = False
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def layout(self) -> str:
        """The layout's name: ``TP8×PP1``, and ``· DP attention`` where attention runs data-parallel."""
        dp = " · DP attention" if self.dp_attention else ""
        return f"TP{self.tensor_parallel_size}×PP{self.pipeline_parallel_size}{dp}"


def gpu_price(gpu: GPUSpec, override: float | None = None) -> tuple[float | None, str]:
    """USD per GPU-hour: the user's figure, else the median of the catalog's on-demand prices."""
    if override is not None:
        if positive("usd_per_gpu_hour", override) > 1e6:  # 1e308 × a tiny share of an hour is inf × 0 = NaN
            raise InvalidInputError("usd_per_gpu_hour", override, "a positive price up to 1e6 USD per GPU-hour")
        return float(override), "given"
    prices = [p for p in gpu.prices if "serverless" not in (p.note + p.provider).lower()] or list(gpu.prices)
    if not prices:
        return None, "no price in the catalog"
    value = statistics.median(p.usd_per_gpu_hour for p in prices)
    return value, f"median of {len(prices)} listed prices ({', '.join(sorted({p.provider for p in prices}))})"


def enumerate_layouts(model: ModelSpec, gpus: list[GPUSpec], *, max_pp: int = 4,
                      dp_attention: bool = True) -> list[Layout]:
    """TP within a scale-up domain (the heads must divide), PP across nodes, EP for MoE when TP > 1; for MoE
    without PP also attention data-parallel across the TP GPUs (unless ``dp_attention`` is False)."""
    out = []
    for g in gpus:
        for tp in TP_SIZES:
            if tp > g.scale_up_domain or (tp > 1 and g.scale_up_bytes_per_s_per_direction <= 0):
                continue
            try:
                check_tensor_parallel(model, tp)
            except InvalidInputError:
                continue
            for pp in (p for p in PP_SIZES if p <= max_pp and p <= model.num_hidden_layers):
                out.append(Layout(g, tp, pp, expert_parallel=model.is_moe and tp > 1))
            if dp_attention and model.is_moe and tp > 1:
                out.append(Layout(g, tp, 1, expert_parallel=True, dp_attention=True))
    return out


def _nodes(layout: Layout, replicas: int) -> int:
    per_node = layout.gpu.gpus_per_node
    if layout.gpus_per_replica <= per_node:
        return math.ceil(replicas / (per_node // layout.gpus_per_replica))
    return replicas * math.ceil(layout.gpus_per_replica / per_node)


def batch_candidates(limit: int, points: int = 96) -> np.ndarray:
    """Batch sizes to try: every size up to 32, then a geometric grid up to the KV limit."""
    dense = np.arange(1, min(limit, 32) + 1)
    sparse = np.geomspace(33, limit, points) if limit > 32 else np.empty(0)
    return np.unique(np.concatenate([dense, np.floor(sparse), [limit]])).astype(np.float64)


def default_max_model_len(model: ModelSpec, w: Workload) -> int:
    """Room for the longest (p95) request, rounded up to a multiple of 1,024 tokens."""
    return int(min(model.max_position_embeddings, math.ceil(w.longest_len * 1.25 / 1024) * 1024))


def plan_layout(model: ModelSpec, layout: Layout, w: Workload, *, usd_per_gpu_hour: float | None = None,
                utilisation_cap: float = UTILISATION_CAP, n_plus_one: bool = False, quantization: str | None = None,
                kv_cache_dtype: str = "auto", gpu_memory_utilization: float = 0.9, max_model_len: int | None = None,
                efficiencies: Efficiencies | None = None, sizing: str = "estimate") -> LayoutPlan:
    """Size one layout for the workload: the cheapest batch size that meets the SLO.

    ``max_model_len`` is the scenario's (``None``: the model's context, as vLLM takes it); ``sizing`` is
    ``"estimate"`` or ``"conservative"`` (:func:`calculators.planning.sizing.sized_model`).
    """
    from calculators.vllm.advice import vllm_serve_command
    g, tp, pp = layout.gpu, layout.tensor_parallel_size, layout.pipeline_parallel_size
    fraction("utilisation_cap", utilisation_cap)
    if sizing == "conservative" and efficiencies is not None and not efficiencies.is_shipped():
        raise InvalidInputError("sizing", sizing, "estimate with your own efficiencies or a calibration: the bands "
                                "conservative sizing stretches the steps to were measured on the shipped fit")
    plan = LayoutPlan(gpu=g.id, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                      expert_parallel=layout.expert_parallel, fits=False, meets_slo=False, message="",
                      failure_domain_gpus=layout.gpus_per_replica, sizing=sizing, dp_attention=layout.dp_attention)
    pools, cap = replica_capacity(model, g, tp, pp, expert_parallel=layout.expert_parallel,
                                  dp_attention=layout.dp_attention, quantization=quantization,
                                  kv_cache_dtype=kv_cache_dtype, gpu_memory_utilization=gpu_memory_utilization,
                                  max_model_len=max_model_len)
    plan.max_model_len = cap.settings.max_model_len
    if max_model_len is None:
        plan.notes.append(f"max_model_len not set: the model's context, {plan.max_model_len:,} tokens, as vLLM "
                          "takes it")
    if not cap.fits:
        plan.message = cap.message
        return plan
    limit = pools * batch_limit(model, cap, w.longest_len)
    plan.kv_cache_tokens, plan.kv_batch_limit = pools * cap.kv_cache_tokens, limit
    if limit < 1:
        plan.message = f"does not fit: the KV cache holds no request of {w.longest_len:,} tokens"
        return plan
    plan.fits = True
    r = Roofline(model, g, tensor_parallel_size=tp, pipeline_parallel_size=pp, quantization=quantization,
                 kv_cache_dtype=kv_cache_dtype, efficiencies=efficiencies or Efficiencies(),
                 max_num_batched_tokens=cap.settings.max_num_batched_tokens, enable_dp_attention=layout.dp_attention)
    plan.compute_dtype, plan.weights = r.dtype_used, resolve_quantization(model, quantization)
    pm = sized_model(r, sizing, g)
    admitted = float(np.ravel(budget_running_cap(r, w.input_len, w.output_len))[0])
    if admitted < limit:
        plan.notes.append(f"at most {int(admitted)} requests run at once: "
                          + budget_cap_reason(r.max_num_batched_tokens, w.input_len, w.output_len, admitted))
    b = batch_candidates(int(min(limit, admitted)))
    m = slot_view(pm, serving_metrics(pm, b, w.input_len, w.output_len), b, w.output_len)
    queue = ttft_queue(pm, w, b, m["slot_time_s"])
    for_load = np.ceil(w.request_rate_per_s / (utilisation_cap * m["requests_per_s"]))
    for_tpot, floor = for_load, float(m["tpot_s"].min())  # the lowest p99 TPOT any batch and load gives
    rows = np.flatnonzero(m["tpot_s"] > (w.tpot_p99_s or np.inf))  # a full batch meets it: so does any load
    if rows.size:  # p99 TPOT as the load rises, arriving prompts mixed into the steps, where it sizes
        curve = tpot_curve(pm, w, b[rows], queue.at(rows))
        for_tpot = for_load.copy()
        for_tpot[rows] = np.maximum(for_load[rows], replicas_for_tpot(w, curve))
        floor = min(floor, float(curve.p99_s[:, 0].min()))
    replicas = for_tpot if w.ttft_p99_s is None else _fewest_for_ttft(w, for_tpot, m["ttft_s"], queue)
    ok = np.isfinite(replicas)
    replicas = replicas + (1 if n_plus_one else 0)
    plan.meets_slo = bool(ok.any())
    i = int(np.flatnonzero(ok)[np.argmin(replicas[ok])]) if ok.any() else int(np.argmin(m["tpot_s"]))
    _fill(plan, layout, w, (r, pm), b[i], replicas[i], {k: float(v[i]) for k, v in m.items()})
    plan.usd_per_gpu_hour, plan.price_source = gpu_price(layout.gpu, usd_per_gpu_hour)
    _costs(plan, w)
    plan.vllm_serve = vllm_serve_command(model.id, cap, math.ceil(plan.batch_size / pools), data_parallel_size=pools)
    if not plan.meets_slo:
        plan.message = _shortfall(w, floor, float(m["ttft_s"][0]))
    else:
        plan.replicas_for_tpot = int(for_tpot[i] - for_load[i])
        plan.replicas_for_ttft = int(replicas[i] - (1 if n_plus_one else 0) - for_tpot[i])
    return plan


def _fewest_for_ttft(w: Workload, start: np.ndarray, ttft_s: np.ndarray, queue: TtftQueue) -> np.ndarray:
    """The replicas each batch candidate needs for the p99 TTFT target, from ``start`` (what the load and the TPOT
    target need) up (:func:`~calculators.planning.replica_tails.replicas_for_ttft`), where it can be the fewest:
    the :data:`SEARCH_FIRST` candidates that start lowest are searched first, then only those that start at or
    below the best they found (a candidate never needs fewer than it starts from). ``inf``: misses the target, or
    cannot be the fewest."""
    finite = np.isfinite(start)
    first = np.zeros(len(start), dtype=bool)
    first[np.argsort(start, kind="stable")[:SEARCH_FIRST]] = True
    found = replicas_for_ttft(w, start, ttft_s, queue, first & finite)
    rest = finite & ~first & (start <= found.min())
    return np.minimum(found, replicas_for_ttft(w, start, ttft_s, queue, rest)) if rest.any() else found


def budget_cap_reason(max_num_batched_tokens: int, input_len: float, output_len: float, admitted: float) -> str:
    """Why at most ``admitted`` requests run at once where the engine runs the decodes first: the step's token budget
    admits prompts only as fast as running requests finish (:func:`~calculators.perf.serving.budget_running_cap`,
    docs/performance-model.md §2). Lengths in tokens."""
    return (f"vLLM runs the decodes first, and a budget of {max_num_batched_tokens:,} tokens a step admits prompts of "
            f"{input_len:,.0f} tokens only as fast as {int(admitted)} running requests of {output_len:,.0f} output "
            "tokens finish")


def slo_bound_note(w: Workload, plan: LayoutPlan | None) -> str | None:
    """Why a plan holds more replicas than its load needs, in words: a p99 TPOT target that the plan's batch meets
    only with fewer prompts mixed into each request's steps, or a p99 TTFT target that leaves little beyond the
    TTFT itself, so the replicas run part-idle (docs/queueing.md §4); None where no target adds a replica."""
    if plan is None or not plan.meets_slo or plan.replicas_for_tpot + plan.replicas_for_ttft <= 0:
        return None
    assert plan.ttft_s is not None and plan.utilisation is not None  # a plan that meets the SLO is sized
    why = []
    if plan.replicas_for_tpot > 0:
        assert w.tpot_p99_s is not None and plan.tpot_s is not None
        why.append(f"the p99 TPOT target ({w.tpot_p99_s * 1e3:,.4g} ms; {plan.tpot_s * 1e3:,.1f} ms at a full batch "
                   f"of {plan.batch_size:,}) adds {plan.replicas_for_tpot:,}, for fewer prompts to join each "
                   "request's steps")
    if plan.replicas_for_ttft > 0:
        assert w.ttft_p99_s is not None
        why.append(f"the p99 TTFT target (TTFT is {plan.ttft_s * 1e3:,.0f} ms of the {w.ttft_p99_s * 1e3:,.0f} ms) "
                   f"adds {plan.replicas_for_ttft:,}, for arrivals to rarely wait for a slot or the token budget")
    return (f"The SLO binds: {plan.layout} on {plan.gpu} runs {plan.replicas:,} replicas {plan.utilisation:.0%} busy, "
            f"more than the load needs: {'; '.join(why)}. A looser target, or a faster layout, needs fewer.")


def _fill(plan: LayoutPlan, layout: Layout, w: Workload, models: tuple[Roofline, PerformanceModel], batch: float,
          replicas: float, m: dict[str, float]) -> None:
    """The chosen batch's figures ``m`` and p99s (from the sizing model), their bands (around the estimate),
    replicas."""
    r, pm = models
    replicas = int(replicas) if np.isfinite(replicas) else int(math.ceil(
        w.request_rate_per_s / (UTILISATION_CAP * m["requests_per_s"])))
    plan.batch_size, plan.replicas = int(batch), replicas
    plan.total_gpus = replicas * layout.gpus_per_replica
    plan.nodes = _nodes(layout, replicas)
    plan.ttft_s, plan.tpot_s, plan.e2e_latency_s = m["ttft_s"], m["tpot_s"], m["e2e_latency_s"]
    plan.ttft_p99_s, plan.tpot_p99_s = replica_p99s_s(pm, w, plan.batch_size, replicas)
    if r.efficiencies.is_shipped():  # the bands describe the shipped fit, not a caller's own efficiencies
        tpot = m["tpot_s"] if pm is r else float(serving_metrics(r, batch, w.input_len, w.output_len)["tpot_s"])
        ttft_p99, tpot_p99 = ((plan.ttft_p99_s, plan.tpot_p99_s) if pm is r
                              else replica_p99s_s(r, w, plan.batch_size, replicas))
        plan.tpot_band_low_s, plan.tpot_band_high_s = band_edges_s("tpot", tpot, r.gpu)
        plan.tpot_p99_band_low_s, plan.tpot_p99_band_high_s = band_edges_s("tpot", tpot_p99, r.gpu)
        plan.ttft_p99_band_low_s, plan.ttft_p99_band_high_s = band_edges_s("ttft", ttft_p99, r.gpu)
    terms = r.decode_breakdown(batch, w.input_len + w.output_len / 2)
    plan.allreduce_s, plan.bubble_fraction = float(terms["allreduce_s"]), float(terms["bubble_fraction"])
    plan.replica_requests_per_s = m["requests_per_s"]
    plan.output_tokens_per_s = m["output_tokens_per_s"]
    plan.output_tokens_per_s_per_gpu = m["output_tokens_per_s_per_gpu"]
    plan.tokens_per_s_per_user = 1 / plan.tpot_s
    plan.utilisation = w.request_rate_per_s / (replicas * plan.replica_requests_per_s)
    prompts_s = float(pm.prefill_time_s(w.input_len, batch))  # GPU time of a cycle's prompts vs its decode steps
    decode_s = w.output_len * float(pm.decode_step_time_s(batch, w.input_len + w.output_len / 2))
    plan.prefill_share = prompts_s / (prompts_s + decode_s)
    dp = ", attention data-parallel" if layout.dp_attention else ""
    plan.message = plan.message or f"{replicas} × {layout.gpus_per_replica} {layout.gpu.id}{dp} at batch {int(batch)}"


def _costs(plan: LayoutPlan, w: Workload) -> None:
    """The plan's six cost figures (:func:`calculators.planning.costs.fleet_costs`), or a note when unpriced."""
    if plan.usd_per_gpu_hour is None:
        plan.notes.append(f"{plan.gpu} has no price in the catalog: pass usd_per_gpu_hour")
        return
    assert plan.prefill_share is not None  # _fill sets it
    for key, value in fleet_costs(plan.total_gpus, plan.usd_per_gpu_hour, w.request_rate_per_s, w.input_len,
                                  w.output_len, plan.prefill_share).items():
        setattr(plan, key, value)


def _shortfall(w: Workload, best_tpot_s: float, best_ttft_s: float) -> str:
    parts = []
    if w.tpot_p99_s is not None and best_tpot_s > w.tpot_p99_s:
        parts.append(f"p99 TPOT ≥ {best_tpot_s * 1e3:.0f} ms at any batch and load on this layout "
                     f"(target {w.tpot_p99_s * 1e3:.0f} ms)")
    if w.ttft_p99_s is not None and best_ttft_s >= w.ttft_p99_s:
        parts.append(f"prefill alone takes {best_ttft_s * 1e3:.0f} ms (TTFT target {w.ttft_p99_s * 1e3:.0f} ms)")
    return "misses the SLO: " + ("; ".join(parts) or "targets conflict") + \
        " — loosen the SLO, use more TP, a faster GPU or quantisation"


def plan_fleet(model: ModelSpec, gpus: list[GPUSpec], w: Workload, *, max_pp: int = 4, **kw) -> list[LayoutPlan]:
    """Every layout on every GPU type, sized and ranked: SLO met first, then cost, then GPUs."""
    plans = [plan_layout(model, lay, w, **kw) for lay in enumerate_layouts(model, gpus, max_pp=max_pp)]
    def rank(p: LayoutPlan) -> tuple:
        cost = p.usd_per_hour if p.usd_per_hour is not None else math.inf
        return (not p.fits, not p.meets_slo, cost if p.meets_slo else (p.tpot_s or math.inf), p.total_gpus)
    return sorted(plans, key=rank)


TPOT_TARGETS_S = (0.020, 0.030, 0.050, 0.075, 0.100, 0.150)
"""The p99 TPOT targets of the cost-vs-SLO curve [s]: interactive chat to batch-like."""


def cost_vs_tpot_target(model: ModelSpec, gpus: list[GPUSpec], w: Workload,
                        tpot_targets_s: tuple[float, ...] = TPOT_TARGETS_S, **kw) -> list[dict]:
    """The cheapest layout without pipeline parallelism per GPU type that meets each p99 TPOT target (the TTFT
    target kept); a MoE model's data-parallel attention layouts compete too.

    One row per (GPU, target) that some priced layout meets: ``gpu``, ``tpot_target_s``, ``gpus``,
    ``usd_per_million_output_tokens``, ``layout``. ``kw`` goes to :func:`plan_layout`.
    """
    rows = []
    for target in tpot_targets_s:
        tighter = replace(w, tpot_p99_s=target)
        for g in gpus:
            best = best_plan(plan_fleet(model, [g], tighter, max_pp=1, **kw))
            if best is not None and best.usd_per_million_output_tokens is not None:
                rows.append({"gpu": g.id, "tpot_target_s": target, "gpus": best.total_gpus,
                             "usd_per_million_output_tokens": best.usd_per_million_output_tokens,
                             "layout": f"{best.replicas} × TP{best.tensor_parallel_size}"
                                       + (" DP attention" if best.dp_attention else "")})
    return rows


def _rates(p: LayoutPlan) -> tuple[float, float] | None:
    """(output tokens/s per GPU, tokens/s per user) of a fitting, sized plan; None for any other."""
    if not (p.fits and p.output_tokens_per_s_per_gpu):
        return None
    assert p.tokens_per_s_per_user is not None  # _fill sets both rates together
    return p.output_tokens_per_s_per_gpu, p.tokens_per_s_per_user


def pareto_front(plans: list[LayoutPlan]) -> list[LayoutPlan]:
    """Fitting layouts not beaten on both output tokens/s per GPU and tokens/s per user."""
    pts = [(p, r) for p in plans if (r := _rates(p)) is not None]
    return [p for p, (gpu, user) in pts if not any(q_gpu >= gpu and q_user >= user and q is not p and
                                                    (q_gpu, q_user) != (gpu, user)
                                                    for q, (q_gpu, q_user) in pts)]


def best_plan(plans: list[LayoutPlan]) -> LayoutPlan | None:
    """The first of the ranked ``plans`` that meets the SLO (the cheapest), or None."""
    return next((p for p in plans if p.meets_slo), None)


def closest_plan(plans: list[LayoutPlan]) -> LayoutPlan | None:
    """:func:`best_plan`, else the first of the ranked ``plans`` that fits (the one to show when none meets the
    SLO), or None."""
    return best_plan(plans) or next((p for p in plans if p.fits), None)


def fleet_summary(model: ModelSpec, plans: list[LayoutPlan]) -> str:
    """One sentence: the best plan, or the closest one and what would have to change."""
    best = best_plan(plans)
    if best:
        cost = f", ${best.usd_per_hour:,.2f}/hour" if best.usd_per_hour is not None else ""
        return f"best: {best.replicas} replica(s) of {best.layout} on {best.gpu} = {best.total_gpus} GPUs{cost}"
    fitting = [p for p in plans if p.fits]
    if fitting:
        return f"no layout meets the SLO; closest: {fitting[0].gpu} TP{fitting[0].tensor_parallel_size} — " \
               f"{fitting[0].message}"
    return (f"{model.id} fits no layout of these GPUs: {plans[0].message if plans else 'no layout'} — "
            "try fp8 or 4-bit quantisation, more pipeline stages or a GPU with more memory")


def slo_text(w: Workload) -> str:
    """The workload's targets in words: ``"p99 TTFT ≤ 1,000 ms · no p99 TPOT target"``."""
    parts = [f"p99 {name} ≤ {v * 1e3:,.4g} ms" if v is not None else f"no p99 {name} target"
             for name, v in (("TTFT", w.ttft_p99_s), ("TPOT", w.tpot_p99_s))]
    return " · ".join(parts)


def unbounded_tpot_note(w: Workload, plan: LayoutPlan | None) -> str | None:
    """Without a TPOT target each layout runs the batch that needs the fewest replicas (under the TTFT target, if
    any), however slowly it streams: ``plan``'s p99 TPOT and the tokens/s per request it leaves 99 % of requests,
    in words; None with a TPOT target or no sized plan."""
    if w.tpot_p99_s is not None or plan is None or not plan.fits or plan.tpot_p99_s is None:
        return None
    under = " under the TTFT target" if w.ttft_p99_s is not None else ""
    return (f"No TPOT target: each layout runs the batch that needs the fewest replicas{under}; {plan.layout} on "
            f"{plan.gpu} streams at least {1 / plan.tpot_p99_s:,.1f} tokens/s to 99 % of requests (p99 TPOT "
            f"{plan.tpot_p99_s * 1e3:,.1f} ms at batch {plan.batch_size:,}).")
