"""Mixed pools: a latency pool and a throughput pool, each with its share of the traffic and its own SLO.

Interactive traffic wants a small batch (short TPOT, short TTFT); batch traffic wants the largest
batch the memory allows. Serving both from one pool means sizing everything for the strictest SLO.
Routing each class to its own pool (docs/queueing.md §6: a latency pool at batch 4–8
and a throughput pool at batch 32–128) sizes each separately:

    pool i:   λ_i = share_i · λ,   plan_fleet(model, GPUs, Workload(λ_i, lengths_i, SLO_i))[0]
    total:    GPUs = Σ GPUs_i,   $/hour = Σ $/hour_i,   $/1M tokens = $/hour / 3600 / Σ λ_i (I_i + O_i) · 10⁶

and compares the total with one pool serving all the traffic at the strictest targets.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from calculators.errors import InvalidInputError
from calculators.planning.fleet import SECONDS_PER_HOUR, LayoutPlan, Workload, best_plan, closest_plan, plan_fleet
from calculators.specs.schema import GPUSpec, ModelSpec
from calculators.validation import fraction, positive


@dataclass(frozen=True)
class PoolSpec:
    """One traffic class: its share of the requests [0–1] and its targets [s]; lengths default to the workload's."""

    name: str
    share: float
    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    input_len: float | None = None
    output_len: float | None = None

    def __post_init__(self) -> None:
        fraction("share", self.share)
        for name in ("ttft_p99_s", "tpot_p99_s", "input_len", "output_len"):
            if getattr(self, name) is not None:
                positive(name, getattr(self, name))

    def workload(self, w: Workload) -> Workload:
        """This pool's traffic: ``share × λ``, its lengths (or the workload's) and its SLO."""
        same_len = self.input_len is None and self.output_len is None
        return Workload(request_rate_per_s=w.request_rate_per_s * self.share,
                        input_len=self.input_len or w.input_len, output_len=self.output_len or w.output_len,
                        ttft_p99_s=self.ttft_p99_s, tpot_p99_s=self.tpot_p99_s,
                        input_len_p95=w.input_len_p95 if same_len else None,
                        output_len_p95=w.output_len_p95 if same_len else None)


@dataclass
class PoolResult:
    """A pool sized on its own: its workload and the best ranked plan (``None`` if nothing fits)."""

    pool: PoolSpec
    workload: Workload
    plan: LayoutPlan | None


@dataclass
class MixedPlan:
    """The pools, their totals, and the single pool at the strictest SLO for comparison."""

    pools: list[PoolResult]
    meets_slo: bool
    total_gpus: int
    usd_per_hour: float | None
    usd_per_million_tokens: float | None
    single_pool: LayoutPlan | None = None
    verdict: str = ""
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _strictest(values: list[float | None]) -> float | None:
    given = [v for v in values if v is not None]
    return min(given) if given else None


def plan_pools(model: ModelSpec, gpus: list[GPUSpec], w: Workload, pools: list[PoolSpec], *,
               compare_single: bool = True, **kw) -> MixedPlan:
    """Size every pool with :func:`calculators.planning.fleet.plan_fleet` and total them.

    Parameters
    ----------
    model, gpus
        What to serve and the GPU types each pool may use.
    w
        All the traffic [requests/s] and its default lengths [tokens].
    pools
        The classes; their shares must sum to 1.
    compare_single
        Also size one pool for all the traffic at the strictest TTFT and TPOT of the classes.
    kw
        Passed to ``plan_fleet`` (``utilisation_cap``, ``n_plus_one``, ``usd_per_gpu_hour``, ``efficiencies``…).
    """
    if not pools:
        raise InvalidInputError("pools", [], "at least one pool")
    total_share = sum(p.share for p in pools)
    if not math.isclose(total_share, 1.0, abs_tol=1e-6):
        raise InvalidInputError("pools", [p.share for p in pools],
                                f"shares that sum to 1 (they sum to {total_share:g})")
    results = []
    for p in pools:
        if p.share == 0:
            continue
        pw = p.workload(w)
        plans = plan_fleet(model, gpus, pw, **kw)
        best = closest_plan(plans)
        results.append(PoolResult(p, pw, best))
    ok = all(r.plan is not None and r.plan.meets_slo for r in results)
    gpus_total = sum(r.plan.total_gpus for r in results if r.plan)
    costs = [r.plan.usd_per_hour for r in results if r.plan]
    known = [c for c in costs if c is not None]
    usd = sum(known) if costs and len(known) == len(costs) else None
    tokens_per_s = sum(r.workload.request_rate_per_s * (r.workload.input_len + r.workload.output_len) for r in results)
    per_m = usd / SECONDS_PER_HOUR / tokens_per_s * 1e6 if usd is not None else None
    out = MixedPlan(results, ok, gpus_total, usd, per_m)
    if compare_single:
        sw = Workload(request_rate_per_s=w.request_rate_per_s, input_len=w.input_len, output_len=w.output_len,
                      ttft_p99_s=_strictest([p.ttft_p99_s for p in pools]),
                      tpot_p99_s=_strictest([p.tpot_p99_s for p in pools]),
                      input_len_p95=w.input_len_p95, output_len_p95=w.output_len_p95)
        out.single_pool = best_plan(plan_fleet(model, gpus, sw, **kw))
        out.verdict = _verdict(out)
    return out


def _verdict(m: MixedPlan) -> str:
    s = m.single_pool
    if not m.meets_slo:
        return "a pool misses its SLO: see its message"
    if s is None:
        return f"split pools: {m.total_gpus} GPUs; no single pool meets the strictest SLO for all the traffic"
    diff = s.total_gpus - m.total_gpus
    word = "saves" if diff > 0 else "costs" if diff < 0 else "ties at"
    return (f"splitting {word} {abs(diff) if diff else m.total_gpus} GPU(s): {m.total_gpus} in "
            f"{len(m.pools)} pools vs {s.total_gpus} in one pool at the strictest SLO")
