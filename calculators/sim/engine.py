"""Iteration-level discrete-event simulator of one serving replica.

One engine *step* (iteration) at a time, as vLLM's scheduler runs them, with step times from any
:class:`~calculators.perf.model.PerformanceModel`:

    step_s = decode_step_time_s(n_decoding, mean context of the decoding sequences)   (if n_decoding > 0)
           + what the step's P prompt tokens add to it (if any): the model's fused step
             mixed_step_time_s(n_decoding, C̄, P, Ī) − mixed_step_time_s(n_decoding, C̄, 0, Ī)

Approximations (stated so that a reader can defend or discount the numbers):

- A mixed step is fused as vLLM V1 runs it (weights read once; docs/performance-model.md §2), with what
  the prompt tokens add taken at the workload's mean context ``C̄`` and prompt length ``Ī``; several
  chunks in one step are costed as one, which over-counts the causal-attention term for many short
  prompts and ignores attention of a later chunk to earlier chunks of its own prompt.
- Decode time uses the *mean* context of the decoding sequences; the roofline's KV bytes are linear
  in ``B · C``, so the mean is exact for the memory term.
- Step times are tabulated once per run (:class:`~calculators.sim.step_table.StepTable`): decode per
  batch size on a context grid (at most 2048 points), what prompt tokens add per batch size on a token
  grid (257 points), linearly interpolated between grid points.
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
- A closed-loop user's next request reaches the engine ``request_overhead_s`` after the previous one left it,
  split at a uniform random share between the two requests (:meth:`~calculators.sim.workload.Workload.reissue_s`),
  so arrivals do not lock to the step clock.
- ITL samples are step durations weighted by the sequences decoding in them; the gap a preempted
  request sees while it waits to be recomputed is not counted as an ITL (it is in its TPOT).

The loops live in :mod:`calculators.sim.continuous` and :mod:`calculators.sim.static`, the policies in
:mod:`calculators.sim.policies`, the records in :mod:`calculators.sim.results`, sweeps in
:mod:`calculators.sim.sweeps`.

Validation (tests/test_simulator.py): M/D/1 and M/M/1 mean waits (Kleinrock 1975, §5.6, §3.2),
Little's law ``L = λW`` (Little 1961) on every run, and the no-contention TTFT/TPOT.
"""

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from calculators.errors import InvalidInputError
from calculators.perf.model import PerformanceModel
from calculators.sim.continuous import run_continuous
from calculators.sim.policies import SLO, ContinuousBatching, StaticBatching
from calculators.sim.results import SimulationResult, summarize
from calculators.sim.static import run_static
from calculators.sim.workload import Workload
from calculators.validation import positive, positive_int

DEFAULT_MAX_EVENTS = 20_000_000


def simulate(pm: PerformanceModel, workload: Workload, policy: ContinuousBatching | StaticBatching | None = None, *,
             duration_s: float | None = None, max_events: int = DEFAULT_MAX_EVENTS,
             slo: SLO | None = None, warmup_s: float = 0.0) -> SimulationResult:
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
    warmup_s
        Start of the steady state [s]: statistics leave out the requests that arrived before it and the
        steps before it (:func:`calculators.sim.results.summarize`); 0 counts everything.

    Returns
    -------
    SimulationResult
        With ``overloaded`` set when the run was cut off while the queue kept growing and offered
        load ÷ achieved throughput (``overload_factor``) exceeded ``1 + OVERLOAD_TOLERANCE``.
    """
    policy = ContinuousBatching() if policy is None else policy
    t_limit = math.inf if duration_s is None else float(positive("duration_s", duration_s))
    positive_int("max_events", max_events)
    rec = (run_static(pm, workload, policy, t_limit, max_events) if isinstance(policy, StaticBatching)
           else run_continuous(pm, workload, policy, t_limit, max_events))
    return summarize(policy.name, rec.requests, rec.timeseries, rec.itl, elapsed_s=rec.elapsed_s,
                     preemptions=rec.preemptions, stop_reason=rec.stop_reason, slo=slo, warmup_s=warmup_s)


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
    itl = (np.concatenate([r.itl_samples[0] for _, r in parts]),
           np.concatenate([r.itl_samples[1] for _, r in parts]))
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
