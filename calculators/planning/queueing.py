"""Queueing models for request waiting time: Erlang C (M/M/c), M/M/1, M/D/1, M/G/1 and a batched server.

Every function broadcasts over NumPy arrays of its numeric arguments and returns arrays of the
broadcast shape (0-d for scalar input). Rates are per second, times in seconds.

An unstable queue (utilisation ``ρ = λ·S / c ≥ 1``) is a *result*, not an error: its waits are
``inf``, its probability of waiting is 1 and ``stable`` is False. Input with no meaning (negative
rates, zero servers, NaN) raises :class:`~calculators.errors.InvalidInputError`.

Sources: L. Kleinrock, *Queueing Systems, Vol. 1: Theory* (Wiley, 1975), §2.6 (M/M/1), §3.5
(M/M/m, Erlang C, eq. 3.40–3.43) and §5.6 (Pollaczek–Khinchine); D. Gross & C. M. Harris,
*Fundamentals of Queueing Theory*, 3rd ed. (1998), §2.3 (M/M/c waiting-time distribution) and
§7.2 (Allen–Cunneen); J. D. C. Little, "A proof for the queuing formula L = λW", *Operations
Research* 9 (1961).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.validation import fraction, positive, positive_int

MAX_SERVERS = 100_000  # the Erlang-B recurrence runs max(servers) vectorised steps
GRID_POINTS = 64  # one broadcast over (0, c·μ) in 64 steps brackets the root ...
BISECTION_STEPS = 40  # ... then halvings narrow it to 2^-46 of (0, c·μ): 1e-14, at float64 precision
_LOG_SPACE_CELLS = 2**20  # Erlang B sums in one array up to this many (configuration, k) cells, else recurs


@dataclass(frozen=True)
class QueueWait:
    """Waiting-time figures of one queue model, each an array of the broadcast input shape.

    Attributes
    ----------
    utilisation
        ``ρ = λ·S / c`` [fraction]; ``≥ 1`` means the queue grows without bound.
    stable
        ``ρ < 1`` [bool].
    probability_of_wait
        Probability that an arrival finds every server busy (Erlang C) [fraction].
    mean_wait_s, p95_wait_s, p99_wait_s
        Mean, 95th and 99th percentile of the time spent queued before service [s]; ``inf`` if unstable.
    mean_response_s
        Mean wait plus service time [s].
    mean_in_system
        Mean requests queued or in service, ``L = λ·(W_q + S)`` (Little 1961) [requests].
    """

    utilisation: np.ndarray
    stable: np.ndarray
    probability_of_wait: np.ndarray
    mean_wait_s: np.ndarray
    p95_wait_s: np.ndarray
    p99_wait_s: np.ndarray
    mean_response_s: np.ndarray
    mean_in_system: np.ndarray


# --------------------------------------------------------------------------- validation helpers


def _nonnegative(field: str, value: ArrayLike) -> np.ndarray:
    """A finite number ``≥ 0`` (or an array of them), as float64."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(field, value, "a number") from None
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InvalidInputError(field, value, "a finite number ≥ 0")
    return arr


def _servers(field: str, value: ArrayLike) -> np.ndarray:
    return np.asarray(positive_int(field, value, maximum=MAX_SERVERS), dtype=np.int64)


def _quantile(value: ArrayLike) -> np.ndarray:
    arr = np.asarray(fraction("quantile", value), dtype=np.float64)
    if np.any(arr >= 1):
        raise InvalidInputError("quantile", value, "a fraction in (0, 1)")
    return arr


# --------------------------------------------------------------------------- Erlang C


def _erlang_b_recurrence(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B of flat, validated ``c`` (int) and ``a`` (float) by ``B(k) = a·B(k−1) / (k + a·B(k−1))``.

    ``B(0) = 1``; one vectorised step per ``k`` up to ``max(c)`` for all configurations at once,
    sorted by ``c`` so that step ``k`` touches only the contiguous tail with ``c ≥ k``. The
    recurrence stays in [0, 1]: it never overflows, whatever ``c``.
    """
    order = np.argsort(c, kind="stable")
    c_sorted, a_sorted = c[order], a[order]
    b = np.ones_like(a_sorted)
    first = np.searchsorted(c_sorted, np.arange(1, int(c_sorted[-1]) + 1), side="left")
    for k, i in enumerate(first, start=1):
        t = a_sorted[i:] * b[i:]
        b[i:] = t / (t + k)
    out = np.empty_like(b)
    out[order] = b
    return out


@lru_cache(maxsize=8)
def _log_factorials_pow2(n: int) -> np.ndarray:
    k = np.arange(1, n)
    out = np.concatenate(([0.0], np.cumsum(np.log(k))))
    out.setflags(write=False)
    return out


def _log_factorials(n: int) -> np.ndarray:
    """``log k!`` for ``k = 0 … n−1`` (at least), from a cache sized to the next power of two."""
    return _log_factorials_pow2(1 << max(n - 1, 1).bit_length())


def _erlang_b_log_space(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B of flat, validated ``c`` and ``a`` as ``(a^c/c!) / Σ_{k≤c} a^k/k!``, summed in log space.

    One ``(configurations × (max(c)+1))`` array, ``log k!`` by a cumulative sum of ``log k``: no
    Python loop, so it is the fast path when few configurations share a large ``c``.
    """
    k = np.arange(int(c.max()) + 1)
    log_fact = _log_factorials(len(k))[: len(k)]
    log_a = np.log(np.where(a > 0, a, 1.0))
    x = np.where(k <= c[:, None], k * log_a[:, None] - log_fact, -np.inf)
    peak = x.max(axis=1)
    log_sum = peak + np.log(np.exp(x - peak[:, None]).sum(axis=1))
    return np.where(a > 0, np.exp(c * log_a - log_fact[c] - log_sum), 0.0)


def _erlang_b(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B of broadcast, validated arrays, by whichever exact method is faster for their sizes."""
    flat_c, flat_a = c.ravel(), a.ravel()
    if flat_c.size == 0:
        return np.empty(c.shape)
    small = flat_c.size * (int(flat_c.max()) + 1) <= _LOG_SPACE_CELLS
    b = _erlang_b_log_space(flat_c, flat_a) if small else _erlang_b_recurrence(flat_c, flat_a)
    return b.reshape(c.shape)


def _erlang_c(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang C from Erlang B: ``C = B / (1 − ρ(1 − B))``, and 1 when ``ρ = a/c ≥ 1``."""
    c, a = np.broadcast_arrays(c, a)
    b = _erlang_b(c, a)
    rho = a / c
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rho < 1, b / (1 - rho * (1 - b)), 1.0)


def erlang_c(servers: ArrayLike, offered_load: ArrayLike) -> np.ndarray:
    """Probability that an arrival has to wait in an M/M/c queue (Erlang C) [fraction].

    Parameters
    ----------
    servers
        Number of servers ``c`` [count], 1 to ``MAX_SERVERS``.
    offered_load
        Offered load ``a = λ/μ = λ·S`` [Erlangs], ``≥ 0``.

    Returns
    -------
    numpy.ndarray
        ``C(c, a)``; 1 where ``a ≥ c`` (unstable: every arrival waits).

    Notes
    -----
    ``C = B / (1 − ρ(1 − B))`` with ``ρ = a/c`` (Kleinrock 1975, eq. 3.40 and 3.46; Gross & Harris
    §2.3), where Erlang B is found by the recurrence ``B(k) = a·B(k−1)/(k + a·B(k−1))``, or, for
    few configurations, by the sum ``(a^c/c!) / Σ_{k≤c} a^k/k!`` taken in log space. Both are
    stable for ``c`` in the tens of thousands, where the plain sum of ``a^k/k!`` overflows.
    """
    c = _servers("servers", servers)
    a = _nonnegative("offered_load", offered_load)
    return _erlang_c(c, a)


# --------------------------------------------------------------------------- M/M/c


def _mmc_core(lam: np.ndarray, s: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(ρ, stable, C, S/(c − a))`` for validated inputs; the last is ``1/(cμ − λ)``, inf if unstable."""
    lam, s, c = np.broadcast_arrays(lam, s, c)
    a = lam * s
    rho = a / c
    stable = rho < 1
    prob = _erlang_c(c, a)
    with np.errstate(divide="ignore"):
        time_scale_s = np.where(stable, s / np.where(stable, c - a, 1.0), np.inf)
    return rho, stable, prob, time_scale_s


def _wait_quantile(prob: np.ndarray, time_scale_s: np.ndarray, p: ArrayLike) -> np.ndarray:
    """``t_p = ln(C/(1−p)) / (cμ − λ)`` where ``C > 1 − p``, else 0 (Gross & Harris §2.3)."""
    log_ratio = np.log(np.maximum(prob / (1 - np.asarray(p)), 1.0))
    with np.errstate(invalid="ignore"):
        return np.where(log_ratio > 0, log_ratio * time_scale_s, 0.0)


def _queue_wait(lam, s, rho, stable, prob, mean_wait_s, p95_s, p99_s) -> QueueWait:
    """Assemble a QueueWait of fresh float arrays of one shape, adding ``W = W_q + S`` and ``L = λW``."""
    response_s = mean_wait_s + s
    with np.errstate(invalid="ignore"):
        in_system = np.where(lam > 0, lam * response_s, 0.0)
    shape = np.shape(in_system)
    full = [np.array(np.broadcast_to(x, shape), dtype=np.float64)
            for x in (rho, prob, mean_wait_s, p95_s, p99_s, response_s, in_system)]
    return QueueWait(full[0], np.array(np.broadcast_to(stable, shape)), *full[1:])


def mmc_wait(arrival_rate_per_s: ArrayLike, service_time_s: ArrayLike, servers: ArrayLike) -> QueueWait:
    """Waiting time in an M/M/c queue: Poisson arrivals, exponential service, ``c`` FIFO servers.

    Parameters
    ----------
    arrival_rate_per_s
        Arrival rate ``λ`` [requests/s], ``≥ 0``.
    service_time_s
        Mean service time ``S = 1/μ`` [s], ``> 0``.
    servers
        Number of servers ``c`` [count].

    Returns
    -------
    QueueWait
        ``ρ = λS/c``; ``C`` = :func:`erlang_c`; mean wait ``W_q = C / (cμ − λ)``; wait quantile
        ``t_p = ln(C/(1−p)) / (cμ − λ)`` when ``C > 1 − p``, else 0, from
        ``P(W_q > t) = C·e^{−(cμ−λ)t}``; response ``W = W_q + S``; ``L = λW``.
        Waits are ``inf`` when ``ρ ≥ 1``.

    Notes
    -----
    Kleinrock 1975, §3.5 eq. 3.43; Gross & Harris 1998, §2.3 (waiting-time distribution);
    Little 1961.
    """
    lam = _nonnegative("arrival_rate_per_s", arrival_rate_per_s)
    s = np.asarray(positive("service_time_s", service_time_s), dtype=np.float64)
    c = _servers("servers", servers)
    rho, stable, prob, scale_s = _mmc_core(lam, s, c)
    return _queue_wait(lam, s, rho, stable, prob, prob * scale_s,
                       _wait_quantile(prob, scale_s, 0.95), _wait_quantile(prob, scale_s, 0.99))


def mmc_wait_quantile_s(arrival_rate_per_s: ArrayLike, service_time_s: ArrayLike, servers: ArrayLike, *,
                        quantile: ArrayLike) -> np.ndarray:
    """The ``quantile`` of the M/M/c waiting time [s]; ``inf`` when ``ρ ≥ 1``.

    ``t_p = ln(C/(1−p)) / (cμ − λ)`` when ``C > 1 − p``, else 0 (Gross & Harris 1998, §2.3).
    ``quantile`` is a fraction in (0, 1), e.g. 0.95.
    """
    lam = _nonnegative("arrival_rate_per_s", arrival_rate_per_s)
    s = np.asarray(positive("service_time_s", service_time_s), dtype=np.float64)
    c = _servers("servers", servers)
    _, _, prob, scale_s = _mmc_core(lam, s, c)
    return _wait_quantile(prob, scale_s, _quantile(quantile))


# --------------------------------------------------------------------------- single server closed forms


def _mg1_mean_wait(lam: np.ndarray, s: np.ndarray, cv: ArrayLike) -> np.ndarray:
    """Pollaczek–Khinchine ``λ(1 + cv²)S² / (2(1 − ρ))``, inf when ``ρ ≥ 1``."""
    rho = lam * s
    stable = rho < 1
    with np.errstate(divide="ignore"):
        return np.where(stable, lam * (1 + np.square(cv)) * s * s / (2 * np.where(stable, 1 - rho, 1.0)), np.inf)


def mg1_mean_wait_s(arrival_rate_per_s: ArrayLike, service_time_s: ArrayLike, service_cv: ArrayLike) -> np.ndarray:
    """Mean wait in an M/G/1 queue by the Pollaczek–Khinchine formula [s].

    Parameters
    ----------
    arrival_rate_per_s
        Poisson arrival rate ``λ`` [requests/s], ``≥ 0``.
    service_time_s
        Mean service time ``E[S]`` [s], ``> 0``.
    service_cv
        Coefficient of variation of the service time, ``σ_S / E[S]`` [dimensionless], ``≥ 0``;
        0 is deterministic (M/D/1), 1 exponential (M/M/1).

    Returns
    -------
    numpy.ndarray
        ``W_q = λE[S²] / (2(1 − ρ))`` with ``E[S²] = (1 + cv²)E[S]²`` and ``ρ = λE[S]``;
        ``inf`` when ``ρ ≥ 1`` (Kleinrock 1975, §5.6 eq. 5.73 and 5.105).
    """
    lam = _nonnegative("arrival_rate_per_s", arrival_rate_per_s)
    s = np.asarray(positive("service_time_s", service_time_s), dtype=np.float64)
    return _mg1_mean_wait(lam, s, _nonnegative("service_cv", service_cv))


def mg1_wait_quantile_s(arrival_rate_per_s: ArrayLike, service_time_s: ArrayLike, service_cv: ArrayLike,
                        quantile: ArrayLike = 0.99) -> np.ndarray:
    """A quantile of the wait in an M/G/1 queue [s], by its exponential tail.

    An arrival waits with probability ``ρ``; a wait, given one, is taken as exponential with the
    Pollaczek–Khinchine mean ``W_q / ρ = (1 + cv²)S / (2(1 − ρ))``, so ``P(W > t) = ρ·e^{−t ρ / W_q}`` and
    ``t_p = (W_q / ρ)·ln(ρ / (1 − p))`` where ``ρ > 1 − p``, else 0. Exact for M/M/1 (``cv = 1``: the wait given
    one is exponential with mean ``S / (1 − ρ)``, Kleinrock 1975 §3.2; Gross & Harris 1998 §2.2); for other service
    laws the exponential tail is the heavy-traffic form (Kingman 1962, "On queues in heavy traffic", *J. R.
    Statist. Soc. B* 24) with the exact mean.

    Parameters
    ----------
    arrival_rate_per_s
        Poisson arrival rate ``λ`` [1/s], ``≥ 0``.
    service_time_s
        Mean service time ``E[S]`` [s], ``> 0``.
    service_cv
        Coefficient of variation of the service time [dimensionless], ``≥ 0``.
    quantile
        ``p`` in (0, 1) [fraction].

    Returns
    -------
    numpy.ndarray
        ``t_p`` [s]; ``inf`` when ``ρ = λE[S] ≥ 1``.
    """
    lam = _nonnegative("arrival_rate_per_s", arrival_rate_per_s)
    s = np.asarray(positive("service_time_s", service_time_s), dtype=np.float64)
    cv = _nonnegative("service_cv", service_cv)
    p = _quantile(quantile)
    rho = lam * s
    stable = rho < 1
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_given_wait = (1 + np.square(cv)) * s / (2 * np.where(stable, 1 - rho, 1.0))
        log_ratio = np.log(np.maximum(rho / (1 - p), 1.0))  # p < 1 (_quantile)
    return np.where(stable, np.where(log_ratio > 0, log_ratio * mean_given_wait, 0.0), np.inf)


def mm1_mean_wait_s(arrival_rate_per_s: ArrayLike, service_time_s: ArrayLike) -> np.ndarray:
    """Mean wait in an M/M/1 queue, ``W_q = ρ / (μ − λ) = ρS / (1 − ρ)`` [s]; ``inf`` when ``ρ ≥ 1``.

    Kleinrock 1975, §3.2 (eq. 3.27 for ``T``, less ``1/μ``). Equals :func:`mmc_wait` with one server.
    """
    return mg1_mean_wait_s(arrival_rate_per_s, service_time_s, 1.0)


def md1_mean_wait_s(arrival_rate_per_s: ArrayLike, service_time_s: ArrayLike) -> np.ndarray:
    """Mean wait in an M/D/1 queue (constant service), ``W_q = ρ / (2μ(1 − ρ))`` [s]; ``inf`` when ``ρ ≥ 1``.

    Pollaczek–Khinchine with ``cv = 0`` (Kleinrock 1975, §5.6; Gross & Harris 1998, §5.1.1):
    half the M/M/1 wait at the same load.
    """
    return mg1_mean_wait_s(arrival_rate_per_s, service_time_s, 0.0)


# --------------------------------------------------------------------------- batched LLM replica


def batched_server_wait(arrival_rate_per_s: ArrayLike, service_time_s: ArrayLike, max_batch: ArrayLike, *,
                        service_cv: ArrayLike = 1.0) -> QueueWait:
    """Queueing delay at an LLM replica that serves up to ``max_batch`` requests at once.

    Each batch slot is treated as a server: M/M/c with ``c = max_batch`` and the service time
    equal to the end-to-end latency of a request at full batch (a conservative choice, since a
    part-full batch runs faster). Service-time variability enters by the Allen–Cunneen
    approximation for M/G/c (Poisson arrivals, ``cv_a = 1``):
    ``W_q(M/G/c) ≈ W_q(M/M/c) · (1 + cv_s²) / 2`` (Gross & Harris 1998, §7.2; exact for c = 1,
    where it is Pollaczek–Khinchine).

    Parameters
    ----------
    arrival_rate_per_s
        Request arrival rate ``λ`` at this replica [requests/s], ``≥ 0``.
    service_time_s
        End-to-end latency of one request when the batch is full [s], ``> 0``.
    max_batch
        Concurrent requests the replica runs (vLLM ``max_num_seqs``) [count].
    service_cv
        Coefficient of variation of the service time [dimensionless], ``≥ 0``; 1 gives plain M/M/c.

    Returns
    -------
    QueueWait
        As :func:`mmc_wait`, with the mean wait **and the p95/p99 waits** multiplied by the same
        Allen–Cunneen factor ``(1 + cv²)/2`` (a heuristic for the quantiles: the tail keeps the
        M/M/c exponential shape, rescaled). ``probability_of_wait`` is the unscaled Erlang C.
        Response time and ``L = λW`` use the scaled wait.
    """
    lam = _nonnegative("arrival_rate_per_s", arrival_rate_per_s)
    s = np.asarray(positive("service_time_s", service_time_s), dtype=np.float64)
    c = _servers("max_batch", max_batch)
    factor = (1 + np.square(_nonnegative("service_cv", service_cv))) / 2
    rho, stable, prob, scale_s = _mmc_core(lam, s, c)
    scale_s = scale_s * factor
    return _queue_wait(lam, s, rho, stable, prob, prob * scale_s,
                       _wait_quantile(prob, scale_s, 0.95), _wait_quantile(prob, scale_s, 0.99))


def replica_ttft_wait_p99_s(arrival_rate_per_s: ArrayLike, slot_time_s: ArrayLike, slots: ArrayLike,
                            prompt_service_s: ArrayLike, *, slot_cv: ArrayLike = 1.0,
                            prompt_cv: ArrayLike = 0.0) -> np.ndarray:
    """The p99 of what an arriving request waits before its first token beyond its own prefill, at an LLM
    replica [s]: the wait for a batch slot (:func:`batched_server_wait`, ``slots`` servers of ``slot_time_s``)
    plus the wait for the steps' token budget, an M/G/1 queue of prompts each holding the budget for
    ``prompt_service_s`` (:func:`mg1_wait_quantile_s`). The two are taken one after the other and in the same
    busy periods (a burst of arrivals fills the slots and the prompt queue together), so their p99s add.

    Parameters
    ----------
    arrival_rate_per_s
        Poisson arrival rate at the replica [requests/s], ``≥ 0``.
    slot_time_s
        How long a request holds a slot [s], ``> 0``.
    slots
        Requests the replica runs at once (``max_num_seqs``) [count].
    prompt_service_s
        Engine time one prompt's tokens take in steps that fill the token budget [s], ``> 0``.
    slot_cv, prompt_cv
        Coefficients of variation of the slot time and of the prompt service [dimensionless], ``≥ 0``.
    """
    slot = batched_server_wait(arrival_rate_per_s, slot_time_s, slots, service_cv=slot_cv).p99_wait_s
    return slot + mg1_wait_quantile_s(arrival_rate_per_s, prompt_service_s, prompt_cv, 0.99)


def poisson_quantile(mean: ArrayLike, quantile: ArrayLike) -> np.ndarray:
    """A quantile of a Poisson count of mean ``μ``, as a continuous number [count]: ``μ + z√μ + (z² − 1)/6``, at
    least 0, with ``z`` the standard normal quantile. The Cornish–Fisher expansion to the skewness term (E. A.
    Cornish and R. A. Fisher, "Moments and cumulants in the specification of distributions", *Revue de l'Institut
    International de Statistique* 5, 1938; a Poisson count's skewness is ``1/√μ``): for ``μ ≥ 1`` it lies within one
    of the exact, integer quantile (μ = 20, p = 0.99: 31.14 against 31); below, it errs high (μ = 0.1: 1.57 against
    1). A count of mean 0 is 0."""
    mu = _nonnegative("mean", mean)
    z = _normal_quantile(_quantile(quantile))
    return np.where(mu > 0, np.maximum(mu + z * np.sqrt(mu) + (z * z - 1) / 6, 0.0), 0.0)


def _normal_quantile(p: np.ndarray) -> np.ndarray:
    """The standard normal quantile of each ``p`` in (0, 1)."""
    inv = np.vectorize(NormalDist().inv_cdf, otypes=[np.float64])
    return inv(p)


def prompts_during_decode_quantile(arrival_rate_per_s: ArrayLike, wait_s: ArrayLike, decode_s: ArrayLike,
                                   prompt_s: ArrayLike, quantile: ArrayLike = 0.99) -> np.ndarray:
    """A quantile of how many other requests' prompts an LLM replica prefills while one request decodes [count].

    With chunked prefill the engine fuses arriving prompts into the decode steps, so each prompt that runs during
    a request's decode lengthens it by ``prompt_s``. Those prompts are the ones that arrived while the request
    waited (``wait_s``: they queue behind it) and while it decodes, which lasts its ``decode_s`` of steps plus
    ``prompt_s`` per such prompt. Arrivals are Poisson at ``λ``, so the count ``K`` is Poisson with mean
    ``μ = λ(W + D) + ρK``, ``ρ = λ·prompt_s``: a request that meets more prompts decodes longer and meets more.
    Its quantile (:func:`poisson_quantile`, ``K = μ + z√μ + c``, ``c = (z² − 1)/6``) is the fixed point, in closed
    form ``√μ = (ρz + √(ρ²z² + 4(1 − ρ)(λ(W + D) + ρc))) / (2(1 − ρ))``.

    Parameters
    ----------
    arrival_rate_per_s
        Poisson arrival rate ``λ`` at the replica [1/s], ``≥ 0``.
    wait_s
        How long the request waited before its prefill ``W`` [s], ``≥ 0``; ``inf`` where the queue is unstable.
    decode_s
        Its decode steps' time without other prompts ``D`` [s], ``≥ 0``.
    prompt_s
        The step time one other prompt adds [s], ``≥ 0``.
    quantile
        ``p`` in (0, 1) [fraction].

    Returns
    -------
    numpy.ndarray
        ``K`` at ``p`` [count]; ``inf`` where ``ρ ≥ 1`` (prompts alone keep the replica busy) or the wait is.
    """
    lam, d = _nonnegative("arrival_rate_per_s", arrival_rate_per_s), _nonnegative("decode_s", decode_s)
    w = np.asarray(wait_s, dtype=np.float64)
    if np.any(np.isnan(w)) or np.any(w < 0):
        raise InvalidInputError("wait_s", wait_s, "a number ≥ 0 (inf: the wait is unbounded)")
    p = _nonnegative("prompt_s", prompt_s)
    z = _normal_quantile(_quantile(quantile))
    c = (z * z - 1) / 6
    rho = lam * p
    stable = (rho < 1) & np.isfinite(w)
    free = np.where(stable, 1 - rho, 1.0)
    arriving = np.where(stable & (lam > 0), lam * (np.where(stable, w, 0.0) + d), 0.0)
    disc = np.maximum(np.square(rho * z) + 4 * free * (arriving + rho * c), 0.0)
    mu = np.square((rho * z + np.sqrt(disc)) / (2 * free))  # the fixed point's Poisson mean
    return np.where(stable, poisson_quantile(mu, quantile), np.inf)


# --------------------------------------------------------------------------- sizing


def users_per_gpu(throughput_requests_per_s: ArrayLike, e2e_latency_s: ArrayLike, *, active_fraction: ArrayLike,
                  gpus: ArrayLike) -> np.ndarray:
    """Concurrent users one GPU supports, by Little's law [users/GPU].

    Parameters
    ----------
    throughput_requests_per_s
        Completed requests per second across the deployment ``λ`` [requests/s], ``≥ 0``.
    e2e_latency_s
        Mean end-to-end latency of a request ``W`` [s], ``> 0``.
    active_fraction
        Fraction of a user's session during which they have a request in flight [fraction], (0, 1].
    gpus
        GPUs serving that throughput [count].

    Returns
    -------
    numpy.ndarray
        ``λ·W / active_fraction / gpus``: active requests ``L = λW`` (Little 1961), users
        ``= L / active_fraction``, shared over the GPUs.
    """
    lam = _nonnegative("throughput_requests_per_s", throughput_requests_per_s)
    w = np.asarray(positive("e2e_latency_s", e2e_latency_s), dtype=np.float64)
    f = np.asarray(fraction("active_fraction", active_fraction), dtype=np.float64)
    n = np.asarray(positive_int("gpus", gpus), dtype=np.float64)
    return lam * w / f / n


def max_arrival_rate_for_wait(service_time_s: ArrayLike, servers: ArrayLike, *, target_wait_s: ArrayLike,
                              quantile: ArrayLike | None = None) -> np.ndarray:
    """The largest arrival rate at which the M/M/c wait stays within a target [requests/s].

    Parameters
    ----------
    service_time_s
        Mean service time ``S`` [s], ``> 0``.
    servers
        Number of servers ``c`` [count].
    target_wait_s
        Largest acceptable wait [s], ``≥ 0``.
    quantile
        None to bound the mean wait; a fraction in (0, 1) (e.g. 0.95) to bound that quantile.

    Returns
    -------
    numpy.ndarray
        ``λ*`` in ``[0, c/S)`` with ``W(λ*) ≤ target``, over all configurations at once: a grid of
        ``GRID_POINTS`` rates on ``(0, cμ)`` in one broadcast brackets it, ``BISECTION_STEPS`` halvings
        narrow the bracket to ``2⁻⁴⁶·cμ``; the waits of
        :func:`mmc_wait` (Kleinrock 1975, §3.5; Gross & Harris 1998, §2.3) grow with ``λ``.
        The result errs on the safe side (never above the exact root).
    """
    s = np.asarray(positive("service_time_s", service_time_s), dtype=np.float64)
    c = _servers("servers", servers)
    target = _nonnegative("target_wait_s", target_wait_s)
    p = None if quantile is None else _quantile(quantile)
    shape = np.broadcast_shapes(s.shape, c.shape, target.shape, () if p is None else p.shape)
    top = np.broadcast_to(c / s, shape)

    def ok(rate: np.ndarray, grid: bool = False) -> np.ndarray:
        x = (lambda v: np.asarray(v)[..., None]) if grid else np.asarray
        _, _, prob, scale_s = _mmc_core(rate, x(s), x(c))
        wait_s = prob * scale_s if p is None else _wait_quantile(prob, scale_s, x(p))
        return wait_s <= x(target)

    # the waits grow with λ, so the points that meet the target are a prefix of the grid
    below = ok(top[..., None] * (np.arange(1, GRID_POINTS) / GRID_POINTS), grid=True).sum(axis=-1)
    lo, hi = top * below / GRID_POINTS, top * (below + 1) / GRID_POINTS
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2
        good = ok(mid)
        lo, hi = np.where(good, mid, lo), np.where(good, hi, mid)
    return lo
