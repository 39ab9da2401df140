"""Serving metrics of one replica under three kinds of load, from any performance model.

For requests of ``I`` input and ``O`` output tokens (docs/performance-model.md §2):

- **static batch** of ``B`` prompts that start together (``llmcap perf --batch-size``): the batch is
  prefilled, then decoded; TTFT = prefill of all ``B`` prompts (the last request's first token),
  TPOT = decode step at the mean context ``I + O/2``, end-to-end = TTFT + (O − 1)·TPOT, and
  output tokens/s = B·O / end-to-end. A batch larger than the running cap runs in waves of the cap.
- **closed loop** of ``N`` concurrent requests (continuous batching, steady state; ``--concurrency``,
  what a benchmark at concurrency ``N`` measures): a request lives ``O`` steps, so ``N·I/O`` prompt
  tokens of arriving requests join every decode step (chunked prefill, vLLM V1), up to the token budget
  ``max_num_batched_tokens − N``; what does not fit runs as prefill-only steps, or, where the engine runs the
  decodes first (vLLM's chunked prefill), waits: at most ``budget·O/(I + O)`` then run (:func:`budget_running_cap`)
  and the others queue for admission as beyond the running cap below. TPOT = that cycle ÷ O; the
  median inter-token latency (``itl_median_s``) is the median of those steps, the bare decode step when most
  steps carry no prompt.
  TTFT = the wait for the scheduler to take the request in when the other ``N − 1`` keep the replica busy:
  the rest of the step in flight (TPOT/2), or half of the ``k`` steps between its polls for new requests
  (``k``·TPOT/2; SGLang's ``--scheduler-recv-interval`` ``k``, 1 by default), then
  the arriving prompt's chunks, each a step fused with the others' decodes (full chunks of the budget left
  by the others, the last one the remainder: an 8,192-token prompt beside 3 decodes in a budget of 8,192 is
  a step of 8,189 prompt tokens and one of 3); at least one TPOT, as the replica
  completes its ``N`` requests once per cycle of ``O`` steps (Little's law; it binds where ``O`` is short and
  prompts wait for prefill-only steps).
- **beyond the running cap** (closed loop, ``max_running`` = ``M < N``): the others wait for a slot, about
  ``(N − M)/M`` end-to-end latencies of the closed loop of ``M`` (Little's law), in TTFT.
- **open loop** at ``λ`` requests/s (Poisson; ``--request-rate``): the same at the mean concurrency
  ``N = λ·end-to-end(N)`` (Little's law), found by bisection; an arrival finds the replica busy with
  probability ``1 − e^(−N)`` and ``N`` others decoding. Above the largest rate ``max_num_seqs`` in flight
  can serve the replica is overloaded (its queue grows without bound).

Served requests (closed and open loop) also spend the model's ``request_overhead_s`` outside the engine's
steps (API server, tokenisation, streaming), in TTFT and end-to-end latency but no GPU time; a static batch is
an offline run without a server.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.perf.model import PerformanceModel, decodes_first, scheduler_recv_interval
from calculators.perf.roofline import DEFAULT_MAX_NUM_BATCHED_TOKENS
from calculators.planning.queueing import prompts_during_decode_quantile
from calculators.validation import at_least, positive, positive_int

OPEN_LOOP_BISECTION_STEPS = 32
"""Bisection steps for the open-loop concurrency: ``max_num_seqs × 2⁻³²`` (below 1e-6 sequences up to 4,096)."""


def _budget(pm: PerformanceModel) -> float:
    """The model's token budget per step when it has one (a roofline sized by vLLM's settings), else vLLM's."""
    return float(getattr(pm, "max_num_batched_tokens", DEFAULT_MAX_NUM_BATCHED_TOKENS))


def _lengths(input_len: ArrayLike, output_len: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Mean prompt and output lengths [tokens]: a request has at least one of each, so a mean is at least 1."""
    return (np.asarray(at_least("input_len", input_len, 1.0, "a mean of at least 1 token"), dtype=np.float64),
            np.asarray(at_least("output_len", output_len, 1.0, "a mean of at least 1 token"), dtype=np.float64))


def _running(n: np.ndarray, max_running: ArrayLike) -> np.ndarray:
    """Sequences that run at once: ``n``, at most the whole part of ``max_running`` (≥ 1; inf: no cap)."""
    cap = np.asarray(max_running, dtype=np.float64)
    if not np.all(cap >= 1):
        raise InvalidInputError("max_running", cap.tolist(), "at least 1 sequence (inf: no cap)")
    return np.minimum(n, np.floor(cap))


def budget_running_cap(pm: PerformanceModel, input_len: ArrayLike, output_len: ArrayLike) -> np.ndarray:
    """Requests an engine that schedules decodes first keeps running at once [sequences] (inf for one that
    schedules prompts first, :func:`~calculators.perf.model.decodes_first`).

    Each step gives ``N`` running requests a token each and arriving prompts the rest of the budget ``B``, so
    prompts enter at ``(B − N)/I`` a step while requests finish at ``N/O``: the running batch settles where the two
    meet, ``N = B·O/(I + O)``, every step full. Further requests wait for admission (in TTFT), not in the others'
    TPOT. vLLM's defaults (8,192 tokens) keep 199 running for 8,000-token prompts and 200-token answers; a budget
    of 512 with 508 + 150 tokens keeps 116 (docs/performance-model.md §2). At least one runs.
    """
    i, o = _lengths(input_len, output_len)
    if not decodes_first(pm):
        return np.full(np.broadcast_shapes(i.shape, o.shape), np.inf)
    return np.maximum(np.floor(_budget(pm) * o / (i + o)), 1.0)


def slot_time_s(pm: PerformanceModel, e2e_latency_s: ArrayLike) -> np.ndarray:
    """The part of a served request's end-to-end latency that holds an engine slot [s]: all of it but the
    ``request_overhead_s`` spent outside the engine's steps (docs/performance-model.md §2)."""
    return np.asarray(e2e_latency_s, dtype=np.float64) - pm.request_overhead_s


def prompt_service_time_s(pm: PerformanceModel, batch: ArrayLike, input_len: ArrayLike,
                          output_len: ArrayLike) -> np.ndarray:
    """Engine time one prompt's tokens take when prompts queue for the steps' token budget [s]: its share
    ``input_len / room`` of a step that fills the budget, ``room = max_num_batched_tokens − batch`` tokens of
    prompt chunks beside ``batch`` running decodes at the mean context (docs/queueing.md §4). The service time of
    the prompt queue whose wait the fleet plan's p99 TTFT adds to the wait for a slot."""
    b = np.asarray(positive("batch", batch), dtype=np.float64)
    i, o = _lengths(input_len, output_len)
    room = np.maximum(_budget(pm) - b, 1.0)
    return i * pm.mixed_step_time_s(b, i + o / 2, room, i) / room


POISSON_TAIL = 1e-9
"""Poisson mass the step-time average leaves out, and the overflow below which no prompt is counted as waiting."""
SUM_BLOCK_ELEMENTS = 1 << 20
"""Elements (values of ``k`` × the arrays' size) the closed loop's sum over ``k`` computes at once: a bound on its
memory, 8 MiB per array."""


def closed_loop_tpot_s(pm: PerformanceModel, concurrency: ArrayLike, input_len: ArrayLike,
                       output_len: ArrayLike) -> np.ndarray:
    """Time per output token with ``N`` requests in flight, arriving prompts mixed into the steps [s]: the mean
    step of :func:`closed_loop_steps_s`."""
    return closed_loop_steps_s(pm, concurrency, input_len, output_len)[0]


def closed_loop_steps_s(pm: PerformanceModel, concurrency: ArrayLike, input_len: ArrayLike,
                        output_len: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The mean and the median step with ``N`` requests in flight, arriving prompts mixed into the steps [s].

    A request lives ``O`` steps, so ``λ = N/O`` prompts arrive per step on average; their number ``k`` in a
    step is taken as Poisson and the step time averaged over it — a step that gets a whole prompt runs much
    longer than one that gets none, so the mean step is not the step at the mean. Prompt tokens beyond the
    budget ``max_num_batched_tokens − N`` run as prefill-only steps the decoders wait through. The sum runs
    over ``λ ± (8√λ + 8)``, outside which the Poisson mass is below :data:`POISSON_TAIL`, and stops at the
    first ``k`` whose prompts fill the budget: every step from there on is the same full step, and its tail is
    summed in closed form (``P(K ≥ k*)`` and ``E[K; K ≥ k*] = λ − Σ_{k<k*} k·p_k``), so the work is bounded by
    ``min(16√λ, budget / I)`` terms however high the load.

    An engine that schedules decodes first runs at most :func:`budget_running_cap` of the ``N`` (the others wait
    for admission), so its steps are those of that many.

    The mean, prefill-only steps included, is the time per output token (TPOT: a request's ``O`` tokens take
    ``O`` mean steps). The median is the step with the smallest ``k`` whose Poisson CDF reaches one half (the
    step time grows with ``k``): the **median inter-token latency** a benchmark prints over all gaps between
    tokens, in which the few steps that carry a prompt are the tail, not the middle (docs/performance-model.md
    §2). At 8 in flight and 50 output tokens, ``λ = 0.16``: 85 % of steps carry no prompt, so the median is the
    bare decode step while the mean is 16 % of a prompt's prefill above it.
    """
    i, o = _lengths(input_len, output_len)
    n = np.minimum(np.asarray(positive("concurrency", concurrency), dtype=np.float64), budget_running_cap(pm, i, o))
    lam = n / o
    room = np.maximum(_budget(pm) - n, 0.0)
    full = np.ceil(room / i)  # k* per element: the first k whose prompts fill the budget
    width = 8 * np.sqrt(np.max(lam)) + 8
    first = max(0, int(np.floor(np.min(lam) - width)))
    last = min(int(np.ceil(np.max(lam) + width)), int(np.max(full)) - 1)
    full_step = pm.mixed_step_time_s(n, i + o / 2, room, i)  # its shape: the inputs' and the model's arrays'
    step, below, k_below, median = _poisson_steps(pm, n, i, o, lam, full, range(first, last + 1), full_step.shape)
    tail = np.clip(1.0 - below, 0.0, 1.0)  # P(K ≥ k*): every prompt beyond the budget waits
    step = step + tail * full_step
    overflow = np.maximum(i * (lam - k_below) - room * tail, 0.0)
    rest = overflow * o / i  # prompts per cycle that fit no mixed step
    # below the sum's own 1e-9 truncation it is rounding, not a prompt that waits for a prefill-only step
    extra = np.where(rest > POISSON_TAIL, pm.prefill_time_s(i, np.maximum(rest, POISSON_TAIL)), 0.0)
    return step + extra / o, np.where(np.isnan(median), full_step, median)


def _poisson_steps(pm: PerformanceModel, n: np.ndarray, i: np.ndarray, o: np.ndarray, lam: np.ndarray,
                   full: np.ndarray, ks: range, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """:func:`closed_loop_steps_s`' sum over ``k`` prompts per step: ``Σ p_k · step(k)``, ``Σ p_k``, ``Σ k · p_k``
    and the step at the first ``k`` whose CDF reaches one half (NaN where none does) [s]. ``shape`` is a step's:
    the inputs' broadcast with the model's own arrays (a calibration's grid of efficiencies).

    The steps of every ``k`` are one call of the model, over a new leading axis of ``k`` ahead of every axis of
    ``shape`` (a block of them at a time, so that the arrays stay within :data:`SUM_BLOCK_ELEMENTS`), and the sums
    run over that axis in the order of ``k`` (``cumsum`` from the previous block's total): the same additions, in
    the same order, as one ``k`` at a time."""
    step = below = k_below = np.zeros(shape)
    median = np.full(shape, np.nan)
    log_lam = np.log(np.maximum(lam, 1e-300))
    per_block = max(1, SUM_BLOCK_ELEMENTS // max(1, math.prod(shape)))
    for start in range(ks.start, ks.stop, per_block):
        block = np.arange(start, min(start + per_block, ks.stop))
        k = block.astype(np.float64).reshape((-1,) + (1,) * len(shape))
        lgamma = np.array([math.lgamma(x + 1) for x in block]).reshape(k.shape)
        prob = np.where(k < full, np.exp(k * log_lam - lam - lgamma), 0.0)
        this = pm.mixed_step_time_s(n, i + o / 2, k * i, i)
        prob, this = np.broadcast_arrays(prob, this)
        run = np.cumsum(np.concatenate([np.broadcast_to(below, prob.shape[1:])[None], prob]), axis=0)[1:]
        step = np.cumsum(np.concatenate([np.broadcast_to(step, prob.shape[1:])[None], prob * this]), axis=0)[-1]
        k_below = np.cumsum(np.concatenate([np.broadcast_to(k_below, prob.shape[1:])[None], k * prob]), axis=0)[-1]
        reached = run >= 0.5
        first = np.take_along_axis(this, np.argmax(reached, axis=0)[None], axis=0)[0]
        median = np.where(np.isnan(median) & reached.any(axis=0), first, median)
        below = run[-1]
    return step, below, k_below, median


def _steady(pm: PerformanceModel, n: np.ndarray, i: np.ndarray, o: np.ndarray, *,
            open_loop: bool) -> dict[str, np.ndarray]:
    """Latencies at ``n`` requests in flight; an arrival finds ``others`` decoding, the replica busy w.p. ``busy``."""
    tpot, itl = closed_loop_steps_s(pm, n, i, o)
    others = n if open_loop else np.maximum(n - 1, 0.0)
    busy = -np.expm1(-n) if open_loop else np.clip(n - 1, 0.0, 1.0)
    room = np.maximum(_budget(pm) - others, 1.0)
    chunks = np.ceil(i / room)  # full chunks of `room` tokens, the last one carries the remainder
    prompt_s = ((chunks - 1) * pm.mixed_step_time_s(others, i + o / 2, np.minimum(i, room), i)
                + pm.mixed_step_time_s(others, i + o / 2, i - (chunks - 1) * room, i))
    ttft = busy * scheduler_recv_interval(pm) * tpot / 2 + prompt_s + pm.request_overhead_s
    # Little's law: the replica completes its n requests once per cycle of O steps (O · TPOT, prefill-only
    # steps included), so a request spends that cycle in the engine; what its O − 1 decode steps leave is its
    # TTFT. It binds where prompts outweigh outputs (O = 1: the whole cycle is the wait for prefill).
    ttft = np.maximum(ttft, tpot + pm.request_overhead_s)
    return {"prefill_s": pm.prefill_time_s(i, 1), "ttft_s": ttft, "tpot_s": tpot, "decode_step_s": tpot,
            "itl_median_s": itl, "e2e_latency_s": ttft + (o - 1) * tpot, "queue_wait_s": np.zeros_like(ttft)}


def _with_throughput(pm: PerformanceModel, m: dict[str, np.ndarray], rps: np.ndarray,
                     o: np.ndarray) -> dict[str, np.ndarray]:
    """``m`` with the throughputs of ``rps`` requests/s (Little's law: the requests in flight over the time each
    spends there)."""
    out = {**m, "output_tokens_per_s": rps * o, "output_tokens_per_s_per_gpu": rps * o / pm.num_gpus,
           "tokens_per_s_per_user": 1 / m["tpot_s"], "requests_per_s": rps}
    shape = np.broadcast_shapes(*(np.shape(v) for v in out.values()))
    return {k: np.broadcast_to(v, shape) for k, v in out.items()}


def serving_metrics(pm: PerformanceModel, concurrency: ArrayLike, input_len: ArrayLike,
                    output_len: ArrayLike, *, max_running: ArrayLike = np.inf) -> dict[str, np.ndarray]:
    """Closed loop: TTFT, TPOT, end-to-end latency [s] and throughputs [tokens/s, requests/s] at ``N``
    requests in flight, broadcast.

    At most ``max_running`` of them run (``max_num_seqs``, or the sequences the KV cache holds, and for an engine
    that schedules decodes first the :func:`budget_running_cap` its token budget keeps running); the other
    ``N − M`` wait for a slot. The ``M`` running ones cycle as a closed loop of ``M`` (end-to-end ``R``, of which
    ``R − request_overhead_s`` holds a slot), so the replica completes ``X = M/(R − overhead)`` requests/s, and
    by Little's law (``N = X·(W + R)``) each request first waits ``W = N·(R − overhead)/M − R`` (at least 0) in
    the queue (``queue_wait_s``), which adds to its TTFT and end-to-end latency.
    """
    n = np.asarray(positive("concurrency", concurrency), dtype=np.float64)
    i, o = _lengths(input_len, output_len)
    running = np.minimum(_running(n, max_running), budget_running_cap(pm, i, o))
    m = _steady(pm, running, i, o, open_loop=False)
    engine_s = slot_time_s(pm, m["e2e_latency_s"])
    wait = np.maximum(n * engine_s / running - m["e2e_latency_s"], 0.0)
    m = {**m, "ttft_s": m["ttft_s"] + wait, "e2e_latency_s": m["e2e_latency_s"] + wait, "queue_wait_s": wait}
    return _with_throughput(pm, m, n / m["e2e_latency_s"], o)


def request_tpot_quantile_s(pm: PerformanceModel, concurrency: ArrayLike, input_len: ArrayLike,
                            output_len: ArrayLike, *, arrival_rate_per_s: ArrayLike, wait_s: ArrayLike,
                            max_running: ArrayLike, quantile: float = 0.99,
                            mean_tpot_s: ArrayLike | None = None) -> np.ndarray:
    """A quantile over requests of each request's TPOT under Poisson arrivals, ``N`` in flight on average [s].

    TPOT is a request's mean gap between tokens, so it varies from request to request with the other prompts
    fused into its steps. The mean TPOT at ``N`` (:func:`closed_loop_tpot_s`) is the bare decode step ``d(N)`` plus
    ``N/O`` prompts' worth ``p`` per step; a request meets ``K`` such prompts in its decode, those that arrive
    while it waits (``wait_s``) and decodes, and ``K``'s quantile is Poisson's with the longer decode that more
    prompts bring (:func:`~calculators.planning.queueing.prompts_during_decode_quantile`; ``μ`` its mean). The
    requests that decode beside it are, on average over its life, half those already running when it starts
    (``N``) and half those it meets, ``N·K/μ`` at the quantile: ``n = N(1 + K/μ)/2``. So the quantile is
    ``d(n) + K·p/O``, at most the mean TPOT of a full batch of ``max_running``: the slots then admit a prompt
    only as another request leaves (docs/queueing.md §4). An engine that runs decodes first runs at most
    :func:`budget_running_cap` of them, with its budget full every step.

    Example (a 10 ms step, 0.1 ms a prompt token, ``I`` = 100, ``O`` = 50: ``p`` = 10 ms): 8 in flight at 13.5
    requests/s (Little: 8 / 0.594 s), no wait; the bare decode lasts 0.5 s and the p99 ``K`` = 16.73, so TPOT p99 =
    10 + 16.73 × 10 / 50 = 13.35 ms against a mean of 11.6 ms. With ``max_running`` = 8 the slots are full: 11.6 ms.

    ``mean_tpot_s``: the mean TPOT at ``N`` where the caller has it (:func:`closed_loop_tpot_s`), not priced again.
    """
    i, o = _lengths(input_len, output_len)
    admitted = budget_running_cap(pm, i, o)  # an engine that runs decodes first runs at most these
    n = np.minimum(np.asarray(positive("concurrency", concurrency), dtype=np.float64), admitted)
    lam, wait = np.asarray(arrival_rate_per_s, dtype=np.float64), np.asarray(wait_s, dtype=np.float64)
    bare = pm.decode_step_time_s(n, i + o / 2)
    mean = closed_loop_tpot_s(pm, n, i, o) if mean_tpot_s is None else np.asarray(mean_tpot_s, dtype=np.float64)
    per_prompt = np.maximum(mean - bare, 0.0) * o / n
    k = prompts_during_decode_quantile(lam, wait, o * bare, per_prompt, quantile)
    cap = np.minimum(np.asarray(max_running, dtype=np.float64), admitted)
    with np.errstate(invalid="ignore", divide="ignore"):  # an infinite K (unstable) is the cap's below
        mu = lam * (wait + o * bare + per_prompt * k)  # K's Poisson mean, the fixed point's
        beside = np.where(np.isfinite(k) & (mu > 0), n * (1 + k / mu) / 2, n)
        met = np.where(per_prompt > 0, k * per_prompt / o, 0.0)  # prompts of no cost add nothing, however many
    step = pm.decode_step_time_s(np.minimum(beside, cap), i + o / 2)
    full = closed_loop_tpot_s(pm, np.where(np.isfinite(cap), cap, 1.0), i, o)
    return np.minimum(step + met, np.where(np.isfinite(cap), full, np.inf))


def slot_view(pm: PerformanceModel, m: dict[str, np.ndarray], batch: ArrayLike,
              output_len: float) -> dict[str, np.ndarray]:
    """Serving metrics at ``batch`` seen from the replica's slots under open-loop arrivals: a request holds a
    slot for its end-to-end latency less the serving path's ``request_overhead_s`` outside the engine's steps
    (``slot_time_s``, the queue's service time [s]), so the replica serves ``batch / slot_time_s`` requests/s
    (docs/performance-model.md §2)."""
    slot = slot_time_s(pm, m["e2e_latency_s"])
    rps = np.asarray(batch, dtype=np.float64) / slot
    return {**m, "slot_time_s": slot, "requests_per_s": rps, "output_tokens_per_s": rps * output_len,
            "output_tokens_per_s_per_gpu": rps * output_len / pm.num_gpus}


def _batch_pass(pm: PerformanceModel, b: np.ndarray, i: np.ndarray, o: np.ndarray) -> dict[str, np.ndarray]:
    """One batch of ``b`` prompts started together: its prefill [s], decode step [s] and time to finish [s]."""
    prefill = pm.prefill_time_s(i, b)
    tpot = pm.decode_step_time_s(b, i + o / 2)
    return {"prefill_s": prefill, "tpot_s": tpot, "wave_s": prefill + (o - 1) * tpot}


def static_batch_metrics(pm: PerformanceModel, batch_size: ArrayLike, input_len: ArrayLike,
                         output_len: ArrayLike, *, max_running: ArrayLike = np.inf) -> dict[str, np.ndarray]:
    """A static batch of ``B`` prompts started together: the whole batch's prefill, then its decode [s]. An
    offline run inside the engine (as ``vllm bench latency`` or ``trtllm-bench`` measure it): no API server, so
    no ``request_overhead_s``.

    At most ``max_running`` = ``M`` sequences run (``max_num_seqs``, or what the KV cache holds): the batch then
    runs in waves of ``M`` (requests of equal lengths finish together, and the next ``M`` start), the last one of
    the ``B − (w − 1)·M`` left. TTFT, end-to-end latency, TPOT and the wait for a wave (``queue_wait_s``) are
    means over the ``B`` requests; throughput is ``B·O`` over the time of all waves. Where the prompts fit but
    whole sequences do not, vLLM starts more (it allocates blocks as tokens arrive and preempts), so the
    waves' TTFT is pessimistic there (docs/performance-model.md §2).
    """
    b = np.asarray(positive("batch_size", batch_size), dtype=np.float64)
    i, o = _lengths(input_len, output_len)
    m = _running(b, max_running)
    full = np.ceil(b / m) - 1  # waves of m before the last
    last = b - full * m
    wave, tail = _batch_pass(pm, m, i, o), _batch_pass(pm, last, i, o)
    waited = (m * wave["wave_s"] * full * (full - 1) / 2 + last * full * wave["wave_s"]) / b
    share = last / b  # of the requests in the last wave
    prefill = (1 - share) * wave["prefill_s"] + share * tail["prefill_s"]
    tpot = (1 - share) * wave["tpot_s"] + share * tail["tpot_s"]
    ttft = waited + prefill
    out = {"prefill_s": prefill, "ttft_s": ttft, "tpot_s": tpot, "decode_step_s": tpot, "itl_median_s": tpot,
           "e2e_latency_s": waited + (1 - share) * wave["wave_s"] + share * tail["wave_s"], "queue_wait_s": waited}
    return _with_throughput(pm, out, b / (full * wave["wave_s"] + tail["wave_s"]), o)


def open_loop_metrics(pm: PerformanceModel, request_rate_per_s: ArrayLike, input_len: ArrayLike,
                      output_len: ArrayLike, *, max_num_seqs: ArrayLike = 256) -> dict[str, np.ndarray]:
    """Poisson arrivals at ``λ``: the closed loop at the concurrency Little's law gives, plus ``overloaded``.

    ``N = λ · (end-to-end(N) − request_overhead_s)`` (the requests in the engine: the latency outside its steps
    holds no slot) is solved by bisection on ``(0, max_num_seqs]``; where even ``max_num_seqs`` requests in
    flight serve fewer than ``λ`` per second the replica is overloaded and the figures are those at
    ``max_num_seqs`` (waiting time unbounded, reported as ``inf`` TTFT). ``max_num_seqs`` broadcasts too: the
    engine's cap, or a benchmark client's ``--max-concurrency`` where that is smaller (the client then holds
    the waiting requests, and the engine runs a closed loop of that many once the rate exceeds what they serve).
    An engine that schedules decodes first runs at most :func:`budget_running_cap` of them: its token budget is
    then full every step, and a higher rate only lengthens the queue.
    """
    lam = np.asarray(positive("request_rate", request_rate_per_s), dtype=np.float64)
    i, o = _lengths(input_len, output_len)
    cap = np.minimum(np.asarray(positive_int("max_num_seqs", max_num_seqs), dtype=np.float64),
                     budget_running_cap(pm, i, o))
    shape = np.broadcast_shapes(lam.shape, i.shape, o.shape, cap.shape)
    lo, hi = np.zeros(shape), np.broadcast_to(cap, shape).copy()
    for _ in range(OPEN_LOOP_BISECTION_STEPS):
        mid = (lo + hi) / 2
        engine_s = slot_time_s(pm, _steady(pm, np.maximum(mid, 1e-9), i, o, open_loop=True)["e2e_latency_s"])
        short = lam * engine_s > mid
        lo, hi = np.where(short, mid, lo), np.where(short, hi, mid)
    n = np.maximum(hi, 1e-9)
    m = _steady(pm, n, i, o, open_loop=True)
    engine_s = slot_time_s(pm, m["e2e_latency_s"])
    overloaded = lam * engine_s > n * (1 + 1e-9)
    m["ttft_s"] = np.where(overloaded, np.inf, m["ttft_s"])
    out = _with_throughput(pm, m, n / engine_s, o)
    return {**out, "concurrency": np.broadcast_to(n, out["ttft_s"].shape),
            "overloaded": np.broadcast_to(overloaded, out["ttft_s"].shape)}
