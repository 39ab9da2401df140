"""The fleet plan checked by the discrete-event simulator: one replica of the chosen layout at its share of
the load, p99 TTFT and TPOT beside the plan's closed forms (docs/queueing.md §5, docs/performance-model.md §2).

The plan's figures come from closed forms (a fused-step TPOT averaged over the arriving prompts; p99 TTFT =
TTFT + the p99 waits for a slot, an M/G/c queue by Allen–Cunneen, and for the steps' token budget, an M/G/1 queue
of prompts). The simulator runs the same performance model step
by step with vLLM's scheduler (:mod:`calculators.sim`): Poisson arrivals at ``λ / replicas``, the plan's
``max_num_seqs`` and token budget, the KV blocks vLLM would allocate; the first quarter of the run (the
warm-up, when the replica fills from empty) is left out of its statistics.

Where the two differ by more than :data:`AGREEMENT` the verdict says which to trust: the simulator for the
latencies this load will see (it models queueing and batching dynamics: bursts, chunked prompts, a batch that
is not full), the closed form for sizing (a rule that holds at the utilisation cap and is what the replica
count answers to).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from calculators.perf.roofline import Efficiencies, Roofline
from calculators.planning.fleet import LayoutPlan, Workload
from calculators.planning.sizing import sized_model
from calculators.sim.engine import simulate
from calculators.sim.policies import ContinuousBatching
from calculators.sim.workload import Fixed, LogNormal, Poisson, make_workload
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.vllm.concurrency import replica_capacity

AGREEMENT = 0.15
"""Largest relative gap [fraction] at which the simulator and the plan are said to agree."""
MIN_STEADY_REQUESTS = 1500
"""Requests the steady state counts at least (a p99 from ~15 requests beyond it)."""
WARMUP_SHARE = 0.25
"""Share of the simulated time left out as warm-up."""


@dataclass(frozen=True)
class SimCheck:
    """Plan and simulator side by side for one replica [s, requests/s]."""

    replica_rate_per_s: float
    duration_s: float
    warmup_s: float
    plan_ttft_p99_s: float
    sim_ttft_p99_s: float
    plan_tpot_p99_s: float
    sim_tpot_p99_s: float
    overloaded: bool

    @property
    def ttft_gap(self) -> float:
        """Simulator ÷ plan − 1 for p99 TTFT."""
        return self.sim_ttft_p99_s / self.plan_ttft_p99_s - 1

    @property
    def tpot_gap(self) -> float:
        """Simulator ÷ plan − 1 for p99 TPOT."""
        return self.sim_tpot_p99_s / self.plan_tpot_p99_s - 1

    @property
    def agree(self) -> bool:
        return not self.overloaded and abs(self.ttft_gap) <= AGREEMENT and abs(self.tpot_gap) <= AGREEMENT

    def verdict(self) -> str:
        """One paragraph: they agree, or which to trust and why."""
        gaps = f"p99 TTFT {self.ttft_gap:+.0%}, p99 TPOT {self.tpot_gap:+.0%} (simulator vs plan)"
        if self.overloaded:
            return (f"The simulated replica is overloaded at {self.replica_rate_per_s:.3g} requests/s: its queue "
                    "keeps growing. Trust the simulator here — add replicas or lower the utilisation cap.")
        if self.agree:
            return f"The simulator agrees with the plan within {AGREEMENT:.0%}: {gaps}."
        return (f"They differ by more than {AGREEMENT:.0%}: {gaps}. For the latencies users will see, trust the "
                "simulator: it models queueing and batching dynamics (bursts of arrivals, prompts chunked into "
                "steps, a batch that is rarely full). For how many replicas to buy, the plan's closed form is "
                "the sizing rule: it holds at the utilisation cap, and its replica count is what the SLO was "
                "checked against.")


def _lengths(mean: float, p95: float | None) -> Fixed | LogNormal:
    """Fixed lengths at the mean, or log-normal through the mean and p95 [tokens]."""
    if p95 is not None and p95 > mean:
        return LogNormal(mean, p95)
    return Fixed(max(1, round(mean)))


def simulate_plan(model: ModelSpec, gpu: GPUSpec, plan: LayoutPlan, w: Workload, *, quantization: str | None = None,
                  kv_cache_dtype: str = "auto", gpu_memory_utilization: float = 0.9, max_model_len: int | None = None,
                  efficiencies: Efficiencies | None = None, seed: int = 0, **_: object) -> SimCheck:
    """Simulate one replica of a fitting ``plan`` at ``λ / replicas`` (the plan's own keyword arguments
    are accepted; those that do not change one replica are ignored)."""
    tp, pp = plan.tensor_parallel_size, plan.pipeline_parallel_size
    pools, cap = replica_capacity(model, gpu, tp, pp, expert_parallel=plan.expert_parallel,
                                  dp_attention=plan.dp_attention, quantization=quantization,
                                  kv_cache_dtype=kv_cache_dtype, gpu_memory_utilization=gpu_memory_utilization,
                                  max_model_len=max_model_len)
    budget = cap.settings.max_num_batched_tokens
    r = Roofline(model, gpu, tensor_parallel_size=tp, pipeline_parallel_size=pp, quantization=quantization,
                 kv_cache_dtype=kv_cache_dtype, efficiencies=efficiencies or Efficiencies(),
                 max_num_batched_tokens=budget, enable_dp_attention=plan.dp_attention)
    rate = w.request_rate_per_s / plan.replicas
    assert plan.e2e_latency_s is not None and plan.ttft_p99_s is not None and plan.tpot_p99_s is not None
    duration = max(MIN_STEADY_REQUESTS / rate / (1 - WARMUP_SHARE), 40 * plan.e2e_latency_s)
    wl = make_workload(Poisson(rate), _lengths(w.input_len, w.input_len_p95),
                       _lengths(w.output_len, w.output_len_p95), duration_s=duration, seed=seed)
    policy = ContinuousBatching(max_num_seqs=plan.batch_size, max_num_batched_tokens=max(budget, plan.batch_size),
                                num_blocks=pools * int(cap.binding.num_blocks), block_size=int(cap.settings.block_size))
    warmup = WARMUP_SHARE * duration
    res = simulate(sized_model(r, plan.sizing, gpu), wl, policy, duration_s=duration, warmup_s=warmup)
    return SimCheck(replica_rate_per_s=rate, duration_s=duration, warmup_s=warmup,
                    plan_ttft_p99_s=plan.ttft_p99_s, sim_ttft_p99_s=_finite(res.latency["ttft"]["p99"]),
                    plan_tpot_p99_s=plan.tpot_p99_s, sim_tpot_p99_s=_finite(res.latency["tpot"]["p99"]),
                    overloaded=res.overloaded)


def _finite(x: float) -> float:
    """A statistic of a run that measured nothing is infinite (never NaN)."""
    return x if math.isfinite(x) else math.inf
