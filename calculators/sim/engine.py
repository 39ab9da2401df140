"""Iteration-level discrete-event simulator of one serving replica.

One engine *step* (iteration) at a time, as vLLM's scheduler runs them, with step times from any
:class:`~calculators.perf.model.PerformanceModel`:

    step_s = decode_step_time_s(n_decoding, mean context of the decoding sequences)   (if n_decoding > 0)
           + prefill_time_s(prompt tokens scheduled in the step, 1)                   (if any)

Approximations (stated so that a reader can defend or discount the numbers):

- A mixed step is the *sum* of a decode step and a prefill of all the step's prompt chunks taken
  as one prompt. Real engines run them as one fused batch, reading the weights once, so mixed
  steps are pessimistic by about one weight read plus one fixed overhead. Treating several
  chunks as one prompt over-counts the causal-attention ``P²`` term for many short prompts and
  ignores attention of a later chunk to earlier chunks of its own prompt.
- Decode time uses the *mean* context of the decoding sequences; the roofline's KV bytes are linear
  in ``B · C``, so the mean is exact for the memory term.
- Step times are tabulated once per run: prefill for every token count up to the budget, decode per
  batch size on a context grid (at most 2048 points), linearly interpolated between grid points.
- Continuous batching follows vLLM V1: running requests first (decodes, then unfinished prompt
  chunks), then waiting ones FCFS while ``max_num_seqs``, the ``max_num_batched_tokens`` budget and
  free KV blocks allow (chunked prefill always on). When a running request needs a block that is
  not free, the newest running request is preempted *by recompute*: its blocks are freed and it
  returns to the head of the queue to prefill its prompt plus the tokens generated so far. No new
  request is admitted in a step that preempted. Prefix-cache hits skip prefill of that share of
  the prompt but still hold their KV blocks (no sharing between requests: conservative).
- Static batching: a batch starts when ``max_batch_size`` requests wait or the oldest has waited
  ``max_wait_ms``; it prefills all prompts padded to the longest and decodes, padded, until its
  longest output is done. Requests are returned when the batch ends (``return_at_batch_end``).
- ITL samples are step durations weighted by the sequences decoding in them; the gap a preempted
  request sees while it waits to be recomputed is not counted as an ITL (it is in its TPOT).

Validation (tests/test_simulator.py): M/D/1 and M/M/1 mean waits (Kleinrock 1975, §5.6, §3.2),
Little's law ``L = λW`` (Little 1961) on every run, and the no-contention TTFT/TPOT.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from calculators.errors import InvalidInputError
from calculators.perf.curves import knee_batch
from calculators.perf.model import PerformanceModel
from calculators.sim.workload import ClosedLoop, LogNormal, Poisson, Workload, make_workload
from calculators.validation import positive, positive_int

DEFAULT_MAX_EVENTS = 20_000_000
CONTEXT_GRID_POINTS = 2048
OVERLOAD_TOLERANCE = 0.10  # offered / achieved above 1 + this, with a growing queue, is overload
_UNLIMITED_BLOCKS = 1 << 62


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class ContinuousBatching:
    """Iteration-level scheduling (vLLM's argument names).

    ``num_blocks=None`` is unlimited KV cache; take it from :func:`kv_blocks` for a real GPU.
    ``prefix_cache_hit_rate`` is the share of each prompt whose prefill is skipped.
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    num_blocks: int | None = None
    block_size: int = 16
    prefix_cache_hit_rate: float = 0.0

    def __post_init__(self) -> None:
        positive_int("max_num_seqs", self.max_num_seqs)
        positive_int("max_num_batched_tokens", self.max_num_batched_tokens)
        positive_int("block_size", self.block_size)
        if self.num_blocks is not None:
            positive_int("num_blocks", self.num_blocks)
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise InvalidInputError("max_num_batched_tokens", self.max_num_batched_tokens,
                                    f"at least max_num_seqs ({self.max_num_seqs}), as vLLM requires")
        if not (0 <= self.prefix_cache_hit_rate < 1):
            raise InvalidInputError("prefix_cache_hit_rate", self.prefix_cache_hit_rate, "a fraction in [0, 1)")

    name = "continuous"


@dataclass(frozen=True)
class StaticBatching:
    """Request-level (static) batching: up to ``max_batch_size`` requests padded to the longest."""

    max_batch_size: int = 32
    max_wait_ms: float = 50.0
    num_blocks: int | None = None
    block_size: int = 16
    return_at_batch_end: bool = True

    def __post_init__(self) -> None:
        positive_int("max_batch_size", self.max_batch_size)
        positive_int("block_size", self.block_size)
        if self.num_blocks is not None:
            positive_int("num_blocks", self.num_blocks)
        if not (math.isfinite(self.max_wait_ms) and self.max_wait_ms >= 0):
            raise InvalidInputError("max_wait_ms", self.max_wait_ms, "a non-negative number of milliseconds")

    name = "static"

    @property
    def max_num_seqs(self) -> int:
        return self.max_batch_size


@dataclass(frozen=True)
class SLO:
    """Latency targets for goodput [s]; ``None`` is no target."""

    ttft_s: float | None = None
    tpot_s: float | None = None


def kv_blocks(model, gpu, *, tensor_parallel_size: int = 1, max_model_len: int | None = None,
              **flags) -> tuple[int, int]:
    """``(num_blocks, block_size)`` that vLLM would allocate, from :func:`calculators.vllm.capacity.vllm_capacity`."""
    from calculators.vllm.capacity import vllm_capacity
    cap = vllm_capacity(model, gpu=gpu, tensor_parallel_size=tensor_parallel_size, max_model_len=max_model_len,
                        **flags)
    return int(cap.binding.num_blocks), int(cap.settings.block_size)


class ConstantStepModel:
    """A stub performance model: every decode step takes ``decode_s`` and a prefill of ``P`` tokens
    ``prefill_s_per_token · P`` (for validating against closed-form queues)."""

    def __init__(self, decode_s: float = 0.01, prefill_s_per_token: float = 0.0, prefill_fixed_s: float = 0.0):
        self.decode_s, self.per_token, self.fixed = decode_s, prefill_s_per_token, prefill_fixed_s

    @property
    def num_gpus(self) -> np.ndarray:
        return np.asarray(1)

    def decode_step_time_s(self, batch_size, context_tokens) -> np.ndarray:
        return np.full(np.broadcast(np.asarray(batch_size), np.asarray(context_tokens)).shape, self.decode_s)

    def prefill_time_s(self, prompt_tokens, num_prompts=1) -> np.ndarray:
        return self.fixed + self.per_token * np.asarray(prompt_tokens, dtype=np.float64) * np.asarray(num_prompts)

    def step_time_s(self, batch, context_tokens, phase: str = "decode") -> np.ndarray:
        return (self.decode_step_time_s(batch, context_tokens) if phase == "decode"
                else self.prefill_time_s(context_tokens, batch))


# --------------------------------------------------------------------------- step-time tables


class _StepTable:
    """Decode times per batch size on a context grid (lazy, one vectorised call per batch size) and
    prefill times for every token count up to ``max_prefill``."""

    def __init__(self, pm: PerformanceModel, max_context: int, max_prefill: int):
        self.pm = pm
        self.h = max(1.0, math.ceil((max_context + 2) / CONTEXT_GRID_POINTS))
        self.inv_h = 1.0 / self.h
        self.grid = self.h * np.arange(1, int(math.ceil((max_context + 2) / self.h)) + 3)
        self.rows: dict[int, list[float]] = {}
        self.prefill = [0.0] + np.broadcast_to(pm.prefill_time_s(np.arange(1, max_prefill + 1), 1),
                                               (max_prefill,)).astype(np.float64).tolist()

    def row(self, batch: int) -> list[float]:
        r = self.rows.get(batch)
        if r is None:
            r = np.broadcast_to(self.pm.decode_step_time_s(batch, self.grid), self.grid.shape).astype(float).tolist()
            self.rows[batch] = r
        return r

    def decode(self, batch: int, context: float) -> float:
        r = self.row(batch)
        x = context * self.inv_h - 1.0
        if x < 0.0:
            x = 0.0
        i = int(x)
        a = r[i]
        return a + (x - i) * (r[i + 1] - a)

    def decode_many(self, batch: int, contexts: np.ndarray) -> np.ndarray:
        return np.interp(contexts, self.grid, np.asarray(self.row(batch)))


# --------------------------------------------------------------------------- results


@dataclass
class SimulationResult:
    """What one simulated run measured. Times in seconds, throughputs per second.

    ``latency`` maps ``ttft``, ``tpot``, ``itl``, ``e2e`` and ``queue_wait`` to ``{"mean", "p50", "p95",
    "p99"}``. ``requests`` has one row per request, ``timeseries`` one row per step (continuous) or
    per change (static) with ``time_s``, ``dt_s``, ``queue_depth``, ``batch_size``, ``kv_usage``.
    """

    policy: str
    num_requests: int
    arrived: int
    completed: int
    rejected: int
    elapsed_s: float
    request_throughput_per_s: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    latency: dict[str, dict[str, float]]
    preemptions: int
    goodput_requests_per_s: float
    slo_attainment: float
    mean_queue_depth: float
    max_queue_depth: int
    mean_batch_size: float
    mean_kv_usage: float
    max_kv_usage: float
    time_avg_in_system: float
    overloaded: bool
    overload_factor: float
    stop_reason: str
    requests: pd.DataFrame = field(repr=False)
    timeseries: pd.DataFrame = field(repr=False)
    itl_samples: tuple[np.ndarray, np.ndarray] = field(repr=False)

    def summary(self) -> dict:
        """Flat JSON-ready figures (latencies as ``<metric>_<stat>_s``)."""
        out = {k: getattr(self, k) for k in (
            "policy", "num_requests", "arrived", "completed", "rejected", "elapsed_s", "request_throughput_per_s",
            "input_tokens_per_s", "output_tokens_per_s", "preemptions", "goodput_requests_per_s", "slo_attainment",
            "mean_queue_depth", "max_queue_depth", "mean_batch_size", "mean_kv_usage", "max_kv_usage",
            "time_avg_in_system", "overloaded", "overload_factor", "stop_reason")}
        for metric, stats in self.latency.items():
            for stat, v in stats.items():
                out[f"{metric}_{stat}_s"] = v
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else
                    (v.item() if isinstance(v, np.generic) else v)) for k, v in out.items()}


def _stats(x: np.ndarray) -> dict[str, float]:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"mean": math.nan, "p50": math.nan, "p95": math.nan, "p99": math.nan}
    p = np.percentile(x, [50, 95, 99])
    return {"mean": float(x.mean()), "p50": float(p[0]), "p95": float(p[1]), "p99": float(p[2])}


def _weighted_stats(values: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    keep = weights > 0
    v, w = values[keep], weights[keep]
    if v.size == 0:
        return _stats(np.empty(0))
    order = np.argsort(v, kind="stable")
    v, cw = v[order], np.cumsum(w[order])
    q = [v[min(np.searchsorted(cw, f * cw[-1]), v.size - 1)] for f in (0.5, 0.95, 0.99)]
    return {"mean": float(np.dot(v, w[order]) / cw[-1]), "p50": float(q[0]), "p95": float(q[1]), "p99": float(q[2])}


def summarize(policy: str, requests: pd.DataFrame, timeseries: pd.DataFrame, itl: tuple[np.ndarray, np.ndarray], *,
              elapsed_s: float, preemptions: int, stop_reason: str, slo: SLO | None = None) -> SimulationResult:
    """Build a :class:`SimulationResult` from the tidy frames (also used to combine pools)."""
    r = requests
    done = r["finished"].to_numpy()
    arrived = int((r["arrival_s"].to_numpy() <= elapsed_s).sum())
    t = max(float(elapsed_s), 1e-300)
    slo = slo or SLO()
    good = done.copy()
    if slo.ttft_s is not None:
        good &= r["ttft_s"].to_numpy() <= slo.ttft_s
    if slo.tpot_s is not None:
        tp = r["tpot_s"].to_numpy()
        good &= ~(tp > slo.tpot_s)  # NaN (one output token) passes
    completed = int(done.sum())
    lat = {m: _stats(r.loc[done, f"{m}_s"].to_numpy(dtype=float)) for m in ("ttft", "tpot", "e2e", "queue_wait")}
    lat["itl"] = _weighted_stats(*itl)
    ts = timeseries
    dt = ts["dt_s"].to_numpy()
    span = dt.sum() if dt.sum() > 0 else 1.0
    q, b, kv = (ts[c].to_numpy(dtype=float) for c in ("queue_depth", "batch_size", "kv_usage"))
    busy = (b > 0) & (dt > 0)
    factor = arrived / completed if completed else math.inf
    half = q.size // 2
    growing = bool(q.size >= 4 and q[half:].mean() > q[:half].mean() and q[-1] > 0)
    overloaded = stop_reason != "completed" and factor > 1 + OVERLOAD_TOLERANCE and growing
    return SimulationResult(
        policy=policy, num_requests=len(r), arrived=arrived, completed=completed,
        rejected=int(r["rejected"].sum()), elapsed_s=float(elapsed_s),
        request_throughput_per_s=completed / t,
        input_tokens_per_s=float(r.loc[done, "input_tokens"].sum()) / t,
        output_tokens_per_s=float(r.loc[done, "output_tokens"].sum()) / t,
        latency=lat, preemptions=int(preemptions), goodput_requests_per_s=int(good.sum()) / t,
        slo_attainment=float(good.sum() / completed) if completed else 0.0,
        mean_queue_depth=float(np.dot(q, dt) / span), max_queue_depth=int(q.max()) if q.size else 0,
        mean_batch_size=float(np.dot(b[busy], dt[busy]) / dt[busy].sum()) if busy.any() else 0.0,
        mean_kv_usage=float(np.dot(kv, dt) / span), max_kv_usage=float(kv.max()) if kv.size else 0.0,
        time_avg_in_system=float(ts.attrs.get("in_system_area", np.dot(ts["in_system"].to_numpy(dtype=float), dt))
                                 / t),
        overloaded=bool(overloaded), overload_factor=float(factor), stop_reason=stop_reason,
        requests=r, timeseries=ts, itl_samples=itl)


def _requests_frame(wl: Workload, arrival, sched, first, finish, npre, rejected) -> pd.DataFrame:
    a, s, f, e = (np.asarray(x, dtype=np.float64) for x in (arrival, sched, first, finish))
    o = wl.output_tokens
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(o > 1, (e - f) / np.maximum(o - 1, 1), np.nan)
    return pd.DataFrame({
        "request_id": np.arange(wl.num_requests), "arrival_s": a, "input_tokens": wl.input_tokens,
        "output_tokens": o, "scheduled_s": s, "first_token_s": f, "finish_s": e,
        "queue_wait_s": s - a, "ttft_s": f - a, "tpot_s": tpot, "e2e_s": e - a,
        "preemptions": np.asarray(npre, dtype=np.int64), "rejected": np.asarray(rejected, dtype=bool),
        "finished": np.isfinite(e)})


# --------------------------------------------------------------------------- the event loops


def _arrival_heap(wl: Workload) -> tuple[list, int]:
    if wl.closed_loop is None:
        return list(zip(wl.arrival_s.tolist(), range(wl.num_requests), strict=True)), wl.num_requests
    n0 = min(int(wl.closed_loop.concurrency), wl.num_requests)
    return [(0.0, i) for i in range(n0)], n0


def _run_continuous(pm: PerformanceModel, wl: Workload, pol: ContinuousBatching, t_limit: float,
                    max_events: int) -> tuple:
    n = wl.num_requests
    inp, out = wl.input_tokens.tolist(), wl.output_tokens.tolist()
    think = wl.think_s.tolist() if wl.think_s is not None else None
    bs, budget_max, max_seqs = pol.block_size, pol.max_num_batched_tokens, pol.max_num_seqs
    nblocks = pol.num_blocks if pol.num_blocks is not None else _UNLIMITED_BLOCKS
    free = nblocks
    hit = pol.prefix_cache_hit_rate
    cached = [min(int(hit * x), x - 1) for x in inp] if hit > 0 else None
    max_ctx = int((wl.input_tokens + wl.output_tokens).max())
    table = _StepTable(pm, max_ctx, budget_max)
    dec_row, inv_h, pre = table.row, table.inv_h, table.prefill
    nan = math.nan
    arrival, sched, first, finish = [nan] * n, [nan] * n, [nan] * n, [nan] * n
    npre, rejected = [0] * n, [False] * n
    computed, target, gen, s0, blocks, epoch = [0] * n, list(inp), [0] * n, [0] * n, [0] * n, [0] * n
    heap, next_id = _arrival_heap(wl)
    running: dict[int, bool] = {}
    prefilling: dict[int, bool] = {}
    waiting: deque[int] = deque()
    fin_heap: list = []
    blk_heap: list = []
    n_dec = sum_ctx = 0
    area = 0.0  # ∫ (waiting + running) dt, for Little's law
    S, t, events, done, preemptions = 0, 0.0, 0, 0, 0
    ts_t, ts_dt, ts_q, ts_b, ts_dec, ts_pf, ts_kv = [], [], [], [], [], [], []
    stop = "completed"
    heappush, heappop = heapq.heappush, heapq.heappop

    def preempt(v: int) -> None:
        nonlocal free, n_dec, sum_ctx, preemptions
        if v in prefilling:
            del prefilling[v]
        else:
            k = S - s0[v]
            gen[v] += k
            n_dec -= 1
            sum_ctx -= computed[v] + k
        target[v] = inp[v] + gen[v]
        computed[v] = 0
        free += blocks[v]
        blocks[v] = 0
        epoch[v] += 1
        del running[v]
        waiting.appendleft(v)
        npre[v] += 1
        preemptions += 1

    def finish_req(i: int) -> None:
        nonlocal free, done, next_id
        finish[i] = t
        free += blocks[i]
        blocks[i] = 0
        epoch[i] += 1
        del running[i]
        done += 1
        if think is not None and next_id < n:
            heappush(heap, (t + think[i], next_id))
            next_id += 1

    while True:
        while heap and heap[0][0] <= t:
            ta, i = heappop(heap)
            arrival[i] = ta
            area += t - ta  # in the system since ta, counted in the steps from t on
            if -(-(inp[i] + out[i]) // bs) > nblocks:  # can never fit in the KV cache: turned away
                area -= t - ta
                rejected[i] = True
                done += 1
                if think is not None and next_id < n:
                    heappush(heap, (ta + think[i], next_id))
                    next_id += 1
            else:
                waiting.append(i)
        preempted = False
        # 1. decoders crossing into a new block
        while blk_heap and blk_heap[0][0] <= S:
            _, i, ep = heappop(blk_heap)
            if ep != epoch[i]:
                continue
            while free < 1 and i in running:
                preempt(next(reversed(running)))
                preempted = True
            if i in running:
                free -= 1
                blocks[i] += 1
                heappush(blk_heap, (S + bs, i, ep))
        budget = budget_max - n_dec
        chunks = []
        # 2. running requests still in prefill (chunked)
        for i in list(prefilling):
            if budget <= 0:
                break
            if i not in running:
                continue
            c = min(target[i] - computed[i], budget)
            need = -(-(computed[i] + c) // bs) - blocks[i]
            while free < need and i in running:
                preempt(next(reversed(running)))
                preempted = True
            if i in running:
                free -= need
                blocks[i] += need
                chunks.append((i, c))
                budget -= c
        # 3. admit waiting requests FCFS
        if not preempted:
            while waiting and budget > 0 and len(running) < max_seqs:
                i = waiting[0]
                c0 = cached[i] if (cached is not None and npre[i] == 0) else 0
                c = min(target[i] - c0, budget)
                need = -(-(c0 + c) // bs)
                if need > free:
                    break
                waiting.popleft()
                computed[i] = c0
                running[i] = True
                prefilling[i] = True
                free -= need
                blocks[i] = need
                if sched[i] != sched[i]:
                    sched[i] = t
                chunks.append((i, c))
                budget -= c
        if n_dec == 0 and not chunks:
            if preempted:  # everything running was preempted: admit again at once
                continue
            if heap:
                t_next = max(t, heap[0][0])
                ts_t.append(t), ts_dt.append(t_next - t), ts_q.append(len(waiting)), ts_b.append(0)
                ts_dec.append(0), ts_pf.append(0), ts_kv.append(nblocks - free)
                area += (len(waiting) + len(running)) * (t_next - t)
                t = t_next
                if t > t_limit:
                    stop = "duration"
                    break
                continue
            if done < n:
                raise RuntimeError("simulator stalled with requests left")  # cannot happen: a bug guard
            break
        # 4. the step
        dt = 0.0
        if n_dec:
            r = dec_row(n_dec)
            x = (sum_ctx / n_dec + 1.0) * inv_h - 1.0
            if x < 0.0:
                x = 0.0
            k = int(x)
            a = r[k]
            dt = a + (x - k) * (r[k + 1] - a)
        ptok = 0
        for _, c in chunks:
            ptok += c
        if ptok:
            dt += pre[ptok]
        ts_t.append(t)
        ts_dt.append(dt)
        ts_q.append(len(waiting))
        ts_b.append(len(running))
        ts_dec.append(n_dec)
        ts_pf.append(ptok)
        ts_kv.append(nblocks - free)
        area += (len(waiting) + len(running)) * dt
        t += dt
        sum_ctx += n_dec
        # 5. decoders that produced their last token
        while fin_heap and fin_heap[0][0] <= S:
            _, i, ep = heappop(fin_heap)
            if ep != epoch[i]:
                continue
            n_dec -= 1
            sum_ctx -= computed[i] + S + 1 - s0[i]
            gen[i] = out[i]
            finish_req(i)
        # 6. prompt chunks done; a finished prompt yields a token
        for i, c in chunks:
            computed[i] += c
            if computed[i] == target[i]:
                del prefilling[i]
                gen[i] += 1
                if first[i] != first[i]:
                    first[i] = t
                if gen[i] >= out[i]:
                    finish_req(i)
                    continue
                s0[i] = S + 1
                n_dec += 1
                sum_ctx += computed[i]
                ep = epoch[i]
                heappush(fin_heap, (S + out[i] - gen[i], i, ep))
                heappush(blk_heap, (S + 1 + blocks[i] * bs - computed[i], i, ep))
        S += 1
        events += 1
        if done >= n:
            break
        if t > t_limit:
            stop = "duration"
            break
        if events >= max_events:
            stop = "max_events"
            break
    ts = pd.DataFrame({"time_s": ts_t, "dt_s": ts_dt, "queue_depth": ts_q, "batch_size": ts_b,
                       "decoding": ts_dec, "prefill_tokens": ts_pf, "kv_blocks_used": ts_kv})
    ts["kv_usage"] = ts["kv_blocks_used"] / nblocks if pol.num_blocks is not None else 0.0
    ts["in_system"] = ts["queue_depth"] + ts["batch_size"]
    reqs = _requests_frame(wl, arrival, sched, first, finish, npre, rejected)
    itl = (np.asarray(ts_dt, dtype=float), np.asarray(ts_dec, dtype=float))
    ts.attrs["in_system_area"] = area
    return reqs, ts, itl, t, preemptions, stop


def _run_static(pm: PerformanceModel, wl: Workload, pol: StaticBatching, t_limit: float, max_events: int) -> tuple:
    n = wl.num_requests
    inp, out = wl.input_tokens.tolist(), wl.output_tokens.tolist()
    think = wl.think_s.tolist() if wl.think_s is not None else None
    bs, bmax, wait_s = pol.block_size, pol.max_batch_size, pol.max_wait_ms / 1e3
    nblocks = pol.num_blocks if pol.num_blocks is not None else _UNLIMITED_BLOCKS
    table = _StepTable(pm, int((wl.input_tokens + wl.output_tokens).max()), 1)
    prefill_cache: dict[tuple[int, int], float] = {}
    nan = math.nan
    arrival, sched, first, finish = [nan] * n, [nan] * n, [nan] * n, [nan] * n
    rejected = [False] * n
    heap, next_id = _arrival_heap(wl)
    waiting: deque[int] = deque()
    ev_t, ev_dq, ev_db, ev_kv = [], [], [], []  # change events; the time series is their running sum
    itl_v, itl_w = [], []
    t, events, done, stop = 0.0, 0, 0, "completed"

    def pull(until: float, limit: int | None = None) -> None:
        nonlocal done
        while heap and heap[0][0] <= until and (limit is None or len(waiting) < limit):
            ta, i = heapq.heappop(heap)
            arrival[i] = ta
            if -(-(inp[i] + out[i]) // bs) > nblocks:
                rejected[i] = True
                done += 1
                arrive_next(ta, i)
                continue
            waiting.append(i)
            ev_t.append(ta), ev_dq.append(1), ev_db.append(0), ev_kv.append(0)

    def arrive_next(at: float, i: int) -> None:
        nonlocal next_id
        if think is not None and next_id < n:
            heapq.heappush(heap, (at + think[i], next_id))
            next_id += 1

    while done < n:
        pull(t)
        if not waiting:
            if not heap:
                break
            t = heap[0][0]
            continue
        if len(waiting) < bmax:
            deadline = max(t, arrival[waiting[0]] + wait_s)
            pull(deadline, bmax)
            start = max(t, arrival[waiting[-1]]) if len(waiting) >= bmax else deadline
        else:
            start = t
        if start > t_limit:
            stop = "duration"
            break
        batch, lin, lout = [], 0, 0
        for i in waiting:
            li, lo = max(lin, inp[i]), max(lout, out[i])
            if len(batch) >= bmax or (len(batch) + 1) * -(-(li + lo) // bs) > nblocks:
                break
            batch.append(i)
            lin, lout = li, lo
        for _ in batch:
            waiting.popleft()
        k = len(batch)
        key = (lin, k)
        if key not in prefill_cache:
            prefill_cache[key] = float(np.ravel(pm.prefill_time_s(lin, k))[0])
        steps = table.decode_many(k, lin + np.arange(1, lout, dtype=np.float64))  # padded decode steps
        cum = np.concatenate([[0.0], np.cumsum(steps)])
        t_first = start + prefill_cache[key]
        end = t_first + cum[-1]
        outs = np.asarray([out[i] for i in batch])
        active = k - np.searchsorted(np.sort(outs), np.arange(2, lout + 1), side="left")  # still generating
        itl_v.append(steps)
        itl_w.append(active)
        kv = k * -(-(lin + lout) // bs)
        ev_t.extend((start, end)), ev_dq.extend((-k, 0)), ev_db.extend((k, -k)), ev_kv.extend((kv, -kv))
        for i in batch:
            sched[i], first[i] = start, t_first
            finish[i] = end if pol.return_at_batch_end else t_first + cum[out[i] - 1]
            arrive_next(finish[i], i)
        done += k
        t = end
        events += 1 + k
        if events >= max_events:
            stop = "max_events"
            break
        if t > t_limit:
            stop = "duration"
            break
    pull(min(t, t_limit) if stop == "duration" else t)  # arrivals during the last batch count as arrived
    order = np.argsort(np.asarray(ev_t), kind="stable")
    tt = np.asarray(ev_t, dtype=float)[order]
    ts = pd.DataFrame({"time_s": tt, "dt_s": np.diff(np.append(tt, max(t, tt[-1] if tt.size else t))),
                       "queue_depth": np.cumsum(np.asarray(ev_dq, dtype=np.int64)[order]),
                       "batch_size": np.cumsum(np.asarray(ev_db, dtype=np.int64)[order]),
                       "kv_blocks_used": np.cumsum(np.asarray(ev_kv, dtype=np.int64)[order])})
    ts["kv_usage"] = ts["kv_blocks_used"] / nblocks if pol.num_blocks is not None else 0.0
    ts["in_system"] = ts["queue_depth"] + ts["batch_size"]
    end_t = min(t, t_limit) if stop == "duration" else t
    ts = ts[ts["time_s"] <= end_t].reset_index(drop=True)
    if len(ts):
        ts.loc[ts.index[-1], "dt_s"] = end_t - ts["time_s"].iloc[-1]
    reqs = _requests_frame(wl, arrival, sched, first, finish, [0] * n, rejected)
    fin = reqs["finish_s"].to_numpy()
    reqs.loc[fin > end_t, ["finish_s", "e2e_s", "tpot_s"]] = np.nan  # not yet returned at the stop
    reqs["finished"] = np.isfinite(reqs["finish_s"].to_numpy())
    itl = (np.concatenate(itl_v) if itl_v else np.empty(0), np.concatenate(itl_w) if itl_w else np.empty(0))
    return reqs, ts, itl, end_t, 0, stop


def simulate(pm: PerformanceModel, workload: Workload, policy: ContinuousBatching | StaticBatching | None = None, *,
             duration_s: float | None = None, max_events: int = DEFAULT_MAX_EVENTS,
             slo: SLO | None = None) -> SimulationResult:
    """Simulate one replica serving ``workload`` under ``policy``, step by step.

    Parameters
    ----------
    pm
        Any :class:`~calculators.perf.model.PerformanceModel`; step times [s] come only from it.
    workload
        From :func:`calculators.sim.workload.make_workload`, ``read_trace`` or ``workload_from_arrays``.
    policy
        :class:`ContinuousBatching` (default) or :class:`StaticBatching`.
    duration_s
        Time limit of the simulated clock [s]; the run stops there (and after ``max_events`` steps)
        and reports what it measured. ``None``: run until every request is served.
    slo
        TTFT and TPOT targets for goodput.

    Returns
    -------
    SimulationResult
        With ``overloaded`` set when the run was cut off while the queue kept growing and offered
        load ÷ achieved throughput (``overload_factor``) exceeded ``1 + OVERLOAD_TOLERANCE``.
    """
    policy = ContinuousBatching() if policy is None else policy
    t_limit = math.inf if duration_s is None else positive("duration_s", duration_s)
    positive_int("max_events", max_events)
    run = _run_static if isinstance(policy, StaticBatching) else _run_continuous
    reqs, ts, itl, elapsed, pre, stop = run(pm, workload, policy, t_limit, max_events)
    return summarize(policy.name, reqs, ts, itl, elapsed_s=elapsed, preemptions=pre, stop_reason=stop, slo=slo)


def simulate_split(pm_latency: PerformanceModel, pm_throughput: PerformanceModel, workload: Workload,
                   to_latency_pool: np.ndarray, *, latency_policy=None, throughput_policy=None,
                   duration_s: float | None = None, slo: SLO | None = None) -> dict[str, SimulationResult]:
    """Two pools (latency / throughput) as two independent simulations, and their combination.

    ``to_latency_pool`` is a boolean per request (e.g. ``workload.input_tokens < 512``). Returns
    ``{"latency": …, "throughput": …, "combined": …}``; the combined result concatenates the
    requests (with a ``pool`` column) and time series, and adds throughputs (pools run in parallel).
    """
    if workload.arrival_s is None:
        raise InvalidInputError("workload", "closed loop", "an open-loop workload to split between pools")
    mask = np.asarray(to_latency_pool, dtype=bool)
    if mask.shape != (workload.num_requests,):
        raise InvalidInputError("to_latency_pool", mask.shape, "one boolean per request")
    lat_pol = latency_policy or ContinuousBatching(max_num_seqs=8)
    thr_pol = throughput_policy or ContinuousBatching(max_num_seqs=256)
    out: dict[str, SimulationResult] = {}
    for name, sel, pm, pol in (("latency", mask, pm_latency, lat_pol), ("throughput", ~mask, pm_throughput, thr_pol)):
        if sel.any():
            sub = replace(workload, input_tokens=workload.input_tokens[sel], output_tokens=workload.output_tokens[sel],
                          arrival_s=workload.arrival_s[sel])
            out[name] = simulate(pm, sub, pol, duration_s=duration_s, slo=slo)
    parts = list(out.items())
    reqs = pd.concat([r.requests.assign(pool=k) for k, r in parts], ignore_index=True)
    ts = pd.concat([r.timeseries.assign(pool=k) for k, r in parts], ignore_index=True)
    itl = tuple(np.concatenate([r.itl_samples[j] for _, r in parts]) for j in (0, 1))
    elapsed = max(r.elapsed_s for _, r in parts)
    combined = summarize("split", reqs, ts, itl, elapsed_s=elapsed, preemptions=sum(r.preemptions for _, r in parts),
                         stop_reason="completed" if all(r.stop_reason == "completed" for _, r in parts) else "duration",
                         slo=slo)
    # the pools' time series overlap in time: per-pool averages add up
    for key in ("mean_queue_depth", "mean_batch_size", "time_avg_in_system"):
        setattr(combined, key, sum(getattr(r, key) for _, r in parts))
    combined.overloaded = any(r.overloaded for _, r in parts)
    out["combined"] = combined
    return out


# --------------------------------------------------------------------------- sweeps


@dataclass
class SweepResult:
    """A sweep's tidy table, with its knee (max_num_seqs sweeps) and SLO point (``None`` if none)."""

    frame: pd.DataFrame
    knee: float | None
    slo_point: float | None


def _row(res: SimulationResult) -> dict:
    s = res.summary()
    return {k: s[k] for k in ("request_throughput_per_s", "output_tokens_per_s", "goodput_requests_per_s",
                              "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "itl_p99_s", "e2e_p50_s",
                              "e2e_p99_s", "mean_batch_size", "mean_kv_usage", "preemptions", "completed",
                              "overloaded", "overload_factor")}


def _meets(df: pd.DataFrame, slo: SLO | None) -> np.ndarray:
    ok = ~df["overloaded"].to_numpy(dtype=bool)
    if slo is not None and slo.ttft_s is not None:
        ok &= df["ttft_p99_s"].to_numpy(dtype=float) <= slo.ttft_s
    if slo is not None and slo.tpot_s is not None:
        ok &= ~(df["tpot_p99_s"].to_numpy(dtype=float) > slo.tpot_s)
    return ok


def sweep_max_num_seqs(pm: PerformanceModel, workload: Workload, values, *, policy: ContinuousBatching | None = None,
                       duration_s: float | None = None, slo: SLO | None = None,
                       on_progress: Callable[[int, int, int], None] | None = None) -> SweepResult:
    """Simulate at each ``max_num_seqs``; the knee (:func:`calculators.perf.curves.knee_batch`: smallest value
    whose doubling gains < 15 % throughput) and the SLO point (largest value meeting p99 TTFT/TPOT, not
    overloaded). For the knee to mean capacity, offer more load than the replica can serve.

    ``on_progress(done, total, value)`` is called before each run (a progress bar's hook)."""
    base = policy or ContinuousBatching()
    vals = np.unique(np.asarray(positive_int("max_num_seqs", np.atleast_1d(values))))
    rows = []
    for k, v in enumerate(vals.tolist()):
        if on_progress is not None:
            on_progress(k, len(vals), v)
        pol = replace(base, max_num_seqs=v, max_num_batched_tokens=max(base.max_num_batched_tokens, v))
        rows.append({"max_num_seqs": v, **_row(simulate(pm, workload, pol, duration_s=duration_s, slo=slo))})
    return summarise_max_num_seqs(pd.DataFrame(rows), slo)


def summarise_max_num_seqs(frame: pd.DataFrame, slo: SLO | None = None) -> SweepResult:
    """A ``max_num_seqs`` sweep's table (sorted) with its knee (:func:`calculators.perf.curves.knee_batch` on
    requests/s) and SLO point (largest value meeting the p99 targets without overload)."""
    if frame.empty:
        return SweepResult(frame, None, None)
    df = frame.sort_values("max_num_seqs").reset_index(drop=True)
    knee = knee_batch(df["max_num_seqs"], df["request_throughput_per_s"]) if len(df) >= 2 else None
    ok = _meets(df, slo)
    return SweepResult(df, knee, float(df["max_num_seqs"][ok].max()) if ok.any() else None)


def sweep_request_rate(pm: PerformanceModel, rates, input_len, output_len, *, policy=None, num_requests: int = 2000,
                       duration_s: float | None = None, seed: int = 0, arrival: str = "poisson", cv: float = 1.0,
                       slo: SLO | None = None) -> SweepResult:
    """Simulate at each offered request rate [1/s] (same seed, so only the rate changes); the SLO point
    is the highest rate that meets p99 TTFT/TPOT without overload."""
    from calculators.sim.workload import Gamma
    rows = []
    for rate in np.atleast_1d(np.asarray(positive("request_rate", rates), dtype=float)).tolist():
        arr = Poisson(rate) if arrival == "poisson" else Gamma(rate, cv)
        wl = make_workload(arr, input_len, output_len, num_requests=num_requests, seed=seed)
        limit = duration_s if duration_s is not None else 2.0 * num_requests / rate
        rows.append({"request_rate": rate, **_row(simulate(pm, wl, policy, duration_s=limit, slo=slo))})
    df = pd.DataFrame(rows)
    ok = _meets(df, slo)
    return SweepResult(df, None, float(df["request_rate"][ok].max()) if ok.any() else None)


def sweep_length_mix(pm: PerformanceModel, mixes: dict, arrivals, *, policy=None, num_requests: int = 2000,
                     duration_s: float | None = None, seed: int = 0, slo: SLO | None = None) -> SweepResult:
    """Simulate each named ``(input_len, output_len)`` mix under the same arrivals."""
    rows = []
    for name, (ind, outd) in mixes.items():
        wl = make_workload(arrivals, ind, outd, num_requests=num_requests, seed=seed)
        rows.append({"mix": name, "mean_input_tokens": float(wl.input_tokens.mean()),
                     "mean_output_tokens": float(wl.output_tokens.mean()),
                     **_row(simulate(pm, wl, policy, duration_s=duration_s, slo=slo))})
    df = pd.DataFrame(rows)
    ok = _meets(df, slo)
    return SweepResult(df, None, None if not ok.any() else float(np.flatnonzero(ok)[-1]))


# --------------------------------------------------------------------------- continuous vs static


def continuous_vs_static(pm: PerformanceModel, *, batch_size: int = 32, input_mean: float = 256,
                         input_p95: float = 600, output_mean: float = 150, output_p95: float = 450,
                         request_rate: float | None = None, num_requests: int = 3000, max_wait_ms: float = 50.0,
                         seed: int = 0) -> dict:
    """The classic experiment (docs/queueing.md §9): continuous vs static batching on log-normal lengths.

    ``request_rate=None`` offers a closed loop of ``2 · batch_size`` users with no think time, so both
    policies run saturated and the throughput ratio is a capacity ratio; a rate gives an open loop.
    Returns the throughput ratio (continuous ÷ static, requests/s) and each policy's p99 TTFT and
    end-to-end latency [s] and output tokens/s. Textbooks often quote 2–4×; this reports what the
    simulation gives.
    """
    arr = ClosedLoop(2 * batch_size) if request_rate is None else Poisson(request_rate)
    wl = make_workload(arr, LogNormal(input_mean, input_p95), LogNormal(output_mean, output_p95),
                       num_requests=num_requests, seed=seed)
    limit = None if request_rate is None else 1.2 * num_requests / request_rate  # arrivals end at ≈ n / rate
    cont = simulate(pm, wl, ContinuousBatching(max_num_seqs=batch_size, max_num_batched_tokens=max(8192, batch_size)),
                    duration_s=limit)
    stat = simulate(pm, wl, StaticBatching(max_batch_size=batch_size, max_wait_ms=max_wait_ms), duration_s=limit)
    return {
        "throughput_ratio": cont.request_throughput_per_s / stat.request_throughput_per_s,
        "continuous_requests_per_s": cont.request_throughput_per_s,
        "static_requests_per_s": stat.request_throughput_per_s,
        "continuous_output_tokens_per_s": cont.output_tokens_per_s,
        "static_output_tokens_per_s": stat.output_tokens_per_s,
        "continuous_ttft_p99_s": cont.latency["ttft"]["p99"], "static_ttft_p99_s": stat.latency["ttft"]["p99"],
        "continuous_e2e_p99_s": cont.latency["e2e"]["p99"], "static_e2e_p99_s": stat.latency["e2e"]["p99"],
        "continuous_overloaded": cont.overloaded, "static_overloaded": stat.overloaded,
    }
