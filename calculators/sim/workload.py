"""Workloads for the serving simulator: arrival processes, length distributions and traces.

Every generator takes a :class:`numpy.random.Generator`, so a workload built from a seed repeats
exactly. Arrival times [s] and token counts [tokens] come out as NumPy arrays, drawn in one
vectorised call each.

Sources: the log-normal fit from a mean and a 95th percentile uses ``E[X] = exp(μ + σ²/2)`` and
``Q_0.95 = exp(μ + z·σ)`` with ``z = Φ⁻¹(0.95) = 1.6449`` (Johnson, Kotz & Balakrishnan,
*Continuous Univariate Distributions* vol. 1, 2nd ed. 1994, ch. 14); gamma inter-arrival times with
shape ``k = 1/cv²`` have coefficient of variation ``cv`` (ibid., ch. 17), ``cv = 1`` being Poisson.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.validation import fraction, positive, positive_int

Z95 = 1.6448536269514722  # Φ⁻¹(0.95)
MAX_TRACE_BYTES = 20 * 1024 * 1024
"""Largest replay trace read [bytes] (about a million requests)."""
TRACE_COLUMNS = ("arrival_time_s", "input_tokens", "output_tokens")
MAX_SIM_REQUESTS = 1_000_000
"""Most requests one workload draws (a million simulate in about 20 s; more would exhaust memory)."""


# --------------------------------------------------------------------------- length distributions


@runtime_checkable
class LengthDistribution(Protocol):
    """Token counts [tokens]: ``sample(rng, n)`` draws ``n`` whole numbers ≥ 1."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray: ...


@runtime_checkable
class ArrivalProcess(Protocol):
    """Open-loop arrivals at a mean ``rate_per_s`` [1/s]; ``times(rng, n)`` draws ``n`` arrival times [s]."""

    @property
    def rate_per_s(self) -> float: ...

    def times(self, rng: np.random.Generator, n: int) -> np.ndarray: ...


def lognormal_params(mean: ArrayLike, p95: ArrayLike, *, field: str = "length") -> tuple[np.ndarray, np.ndarray]:
    """``(μ, σ)`` of the log-normal with this mean and 95th percentile (the smaller root).

    Parameters
    ----------
    mean
        Mean of the distribution [tokens], ``> 0``.
    p95
        95th percentile [tokens], ``mean ≤ p95 ≤ mean · exp(z²/2) ≈ 3.87 · mean``.
    field
        Name used in errors (``<field>`` and ``<field>_p95``).

    Returns
    -------
    tuple of numpy.ndarray
        ``σ = z − sqrt(z² − 2 ln(p95/mean))`` (smaller root of ``σ²/2 − zσ + ln(p95/mean) = 0``,
        from ``exp(μ + σ²/2) = mean`` and ``exp(μ + zσ) = p95``) and ``μ = ln(mean) − σ²/2``.
    """
    m = np.asarray(positive(field, mean), dtype=np.float64)
    q = np.asarray(positive(f"{field}_p95", p95), dtype=np.float64)
    ratio = np.log(q / m)
    disc = Z95**2 - 2 * ratio
    if np.any(ratio < -1e-12) or np.any(disc < 0):
        top = math.exp(Z95**2 / 2)
        raise InvalidInputError(f"{field}_p95", p95, f"a 95th percentile from the mean to {top:.3f} × the mean "
                                "(a log-normal cannot have another)")
    sigma = Z95 - np.sqrt(np.maximum(disc, 0.0))
    sigma = np.maximum(sigma, 0.0)
    return np.log(m) - sigma**2 / 2, sigma


@dataclass(frozen=True)
class Fixed:
    """Every request has ``tokens`` tokens."""

    tokens: int

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, positive_int("tokens", self.tokens), dtype=np.int64)

    @property
    def mean(self) -> float:
        return float(self.tokens)


@dataclass(frozen=True)
class LogNormal:
    """Log-normal lengths with this mean and 95th percentile [tokens], rounded, clipped to [1, max_tokens]."""

    mean_tokens: float
    p95_tokens: float
    max_tokens: int | None = None

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        mu, sigma = lognormal_params(self.mean_tokens, self.p95_tokens)
        x = np.rint(rng.lognormal(float(mu), float(sigma), n))
        top = np.inf if self.max_tokens is None else positive_int("max_tokens", self.max_tokens)
        return np.clip(x, 1, top).astype(np.int64)

    @property
    def mean(self) -> float:
        return float(self.mean_tokens)


@dataclass(frozen=True)
class Mixture:
    """A mixture of length distributions (e.g. bimodal: short chat and long documents)."""

    components: tuple
    weights: tuple[float, ...]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        w = np.asarray(self.weights, dtype=np.float64)
        if len(self.components) == 0 or w.shape != (len(self.components),) or np.any(w < 0) or w.sum() <= 0:
            raise InvalidInputError("weights", self.weights, "one non-negative weight per component, not all zero")
        pick = rng.choice(len(w), size=n, p=w / w.sum())
        draws = np.stack([c.sample(rng, n) for c in self.components])  # one vectorised draw per component
        return draws[pick, np.arange(n)]

    @property
    def mean(self) -> float:
        w = np.asarray(self.weights, dtype=np.float64)
        return float(np.dot(w / w.sum(), [c.mean for c in self.components]))


def bimodal(short: LengthDistribution, long: LengthDistribution, long_fraction: float) -> Mixture:
    """A two-component mixture: share ``long_fraction`` drawn from ``long``, the rest from ``short``."""
    f = 0.0 if long_fraction == 0 else float(fraction("long_fraction", long_fraction))
    return Mixture((short, long), (1 - f, f))


@dataclass(frozen=True)
class Empirical:
    """Resample observed lengths with replacement (``cycle=True``: use them in order, repeating)."""

    values: tuple[int, ...]
    cycle: bool = False

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        v = np.asarray(positive_int("values", np.asarray(self.values)), dtype=np.int64).ravel()
        if v.size == 0:
            raise InvalidInputError("values", self.values, "one or more observed lengths")
        return np.resize(v, n) if self.cycle else rng.choice(v, size=n)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))


def length_distribution(mean: float | None, p95: float | None = None, *, kind: str | None = None,
                        max_len: int | None = None, field: str = "input_len") -> Fixed | LogNormal:
    """Lengths [tokens] from a mean and, optionally, a 95th percentile: :class:`LogNormal` when ``kind`` is
    ``"lognormal"`` (the default when ``p95`` is given), else :class:`Fixed` (a whole number ≥ 1).

    ``max_len`` clips log-normal draws (vLLM's ``max_model_len``); errors name ``field`` and ``{field}_p95``.
    """
    if mean is None:
        raise InvalidInputError(field, None, "a mean number of tokens")
    if (kind or ("lognormal" if p95 is not None else "fixed")) == "lognormal":
        if p95 is None:
            raise InvalidInputError(f"{field}_p95", None, "a 95th percentile for log-normal lengths")
        lognormal_params(mean, p95, field=field)
        return LogNormal(mean, p95, max_len)
    if not math.isfinite(mean) or mean < 1 or mean != int(mean):
        raise InvalidInputError(field, mean, "a whole number of tokens ≥ 1 for fixed lengths")
    return Fixed(int(mean))


def as_length_dist(value: LengthDistribution | ArrayLike) -> LengthDistribution:
    """An int is :class:`Fixed`; an array of lengths is :class:`Empirical`; a distribution passes."""
    if isinstance(value, LengthDistribution):
        return value
    if np.ndim(value) == 0:
        return Fixed(int(positive_int("tokens", value, scalar=True)))
    return Empirical(tuple(int(x) for x in np.ravel(value)))


# --------------------------------------------------------------------------- arrival processes


@dataclass(frozen=True)
class Poisson:
    """Poisson arrivals at ``rate_per_s`` (exponential inter-arrival times)."""

    rate_per_s: float

    def times(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.cumsum(rng.exponential(1 / positive("rate_per_s", self.rate_per_s), n))


@dataclass(frozen=True)
class Gamma:
    """Bursty arrivals: gamma inter-arrival times of mean ``1/rate`` and coefficient of variation ``cv``
    (``CV_RANGE``: below it the arrivals are evenly spaced, use :class:`Constant`; beyond it the gamma shape
    ``1/cv²`` underflows)."""

    rate_per_s: float
    cv: float

    CV_RANGE = (0.01, 100.0)

    def times(self, rng: np.random.Generator, n: int) -> np.ndarray:
        lo, hi = self.CV_RANGE
        if not lo <= positive("arrival_cv", self.cv) <= hi:
            raise InvalidInputError("arrival_cv", self.cv, f"a coefficient of variation from {lo:g} to {hi:g} "
                                    "(1 = Poisson; for evenly spaced arrivals use constant arrivals)")
        k = 1 / self.cv ** 2
        return np.cumsum(rng.gamma(k, 1 / (positive("rate_per_s", self.rate_per_s) * k), n))


@dataclass(frozen=True)
class Constant:
    """Evenly spaced arrivals, one every ``1/rate`` seconds (the first at ``1/rate``)."""

    rate_per_s: float

    def times(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.arange(1, n + 1) / positive("rate_per_s", self.rate_per_s)


@dataclass(frozen=True)
class ClosedLoop:
    """``concurrency`` users, each sending its next request ``think_time_s`` (mean, exponential) after
    the previous one finished; all start at time 0."""

    concurrency: int
    think_time_s: float = 0.0


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Workload:
    """Requests to simulate: arrival times [s] (``None`` for closed loop) and token counts; for a closed loop,
    each request's think time [s] and the share of the request overhead it spends before the engine
    (``overhead_share``, :meth:`reissue_s`)."""

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    arrival_s: np.ndarray | None = None
    closed_loop: ClosedLoop | None = None
    think_s: np.ndarray | None = None
    offered_rate_per_s: float | None = None
    meta: dict = field(default_factory=dict, compare=False)
    overhead_share: np.ndarray | None = None

    @property
    def num_requests(self) -> int:
        return int(self.input_tokens.size)

    def reissue_s(self, i: int, j: int, request_overhead_s: float) -> float:
        """Closed loop: how long after request ``i`` ends in the engine its user's next request ``j`` reaches
        the engine [s]: the rest of ``i``'s ``request_overhead_s`` (its last tokens streamed back), the user's
        think time, and the share of ``j``'s before the engine (API server, tokenisation). Each request's
        share (:attr:`overhead_share`) is uniform on [0, 1): a fixed split would lock arrivals to the
        engine's step clock, and the wait for the next step would swing between none and a whole step with
        the ratio of the overhead to the step time, where the closed forms take half a step."""
        think = 0.0 if self.think_s is None else float(self.think_s[i])
        if self.overhead_share is None:  # built by hand without shares: all of it before the engine
            return think + request_overhead_s
        share = self.overhead_share
        return float((1.0 - share[i]) * request_overhead_s + think + share[j] * request_overhead_s)


def make_workload(arrivals: ArrivalProcess | ClosedLoop, input_len: LengthDistribution | ArrayLike,
                  output_len: LengthDistribution | ArrayLike, *, num_requests: int | None = None,
                  duration_s: float | None = None, seed: int = 0) -> Workload:
    """Draw a seeded workload.

    Parameters
    ----------
    arrivals
        :class:`Poisson`, :class:`Gamma`, :class:`Constant` or :class:`ClosedLoop`.
    input_len, output_len
        Length distributions [tokens] (an int is fixed, an array is resampled empirically).
    num_requests
        Requests to draw; for open-loop arrivals it may instead follow from ``duration_s``
        (all arrivals before ``duration_s``). Required for closed loop.
    seed
        Seed of the :class:`numpy.random.Generator`; arrivals, input and output lengths each draw
        from their own spawned stream, so changing one distribution leaves the others unchanged.
    """
    a_rng, i_rng, o_rng, t_rng, s_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5))
    ind, outd = as_length_dist(input_len), as_length_dist(output_len)
    if isinstance(arrivals, ClosedLoop):
        positive_int("concurrency", arrivals.concurrency)
        if num_requests is None:
            raise InvalidInputError("num_requests", None, "a number of requests for a closed-loop workload")
        n = int(positive_int("num_requests", num_requests, scalar=True))
        think = (t_rng.exponential(arrivals.think_time_s, n) if arrivals.think_time_s > 0 else np.zeros(n))
        return Workload(ind.sample(i_rng, n), outd.sample(o_rng, n), None, arrivals, think,
                        overhead_share=s_rng.random(n))
    if not isinstance(arrivals, ArrivalProcess):
        raise InvalidInputError("arrivals", arrivals, "Poisson, Gamma, Constant or ClosedLoop")
    if num_requests is not None:
        n = int(positive_int("num_requests", num_requests, scalar=True))
        times = arrivals.times(a_rng, n)
    elif duration_s is not None:
        d = positive("duration_s", duration_s)
        if not arrivals.rate_per_s * d <= MAX_SIM_REQUESTS:
            raise InvalidInputError("request_rate × duration_s", arrivals.rate_per_s * d,
                                    f"at most {MAX_SIM_REQUESTS:,} requests")
        n_guess = int(arrivals.rate_per_s * d * 1.2 + 10 * math.sqrt(arrivals.rate_per_s * d) + 10)
        times = arrivals.times(a_rng, n_guess)
        while times[-1] < d:  # rare: draw more from the same stream
            times = np.concatenate([times, times[-1] + arrivals.times(a_rng, n_guess)])
        times = times[times < d]
        n = times.size
        if n == 0:
            raise InvalidInputError("duration_s", d, "long enough for at least one arrival")
    else:
        raise InvalidInputError("num_requests", None, "num_requests or duration_s")
    return Workload(ind.sample(i_rng, n), outd.sample(o_rng, n), times, None, None,
                    offered_rate_per_s=float(arrivals.rate_per_s))


def initial_arrivals(wl: Workload) -> tuple[list[tuple[float, int]], int]:
    """The arrival heap a run starts with, ``[(time_s, request id)]``, and the next id to release.

    Open loop: every request at its arrival time. Closed loop: the first ``concurrency`` requests at 0;
    each later one arrives ``think_s`` after a user's previous request finishes.
    """
    if wl.closed_loop is None:
        assert wl.arrival_s is not None  # an open-loop workload has its arrival times
        return list(zip(wl.arrival_s.tolist(), range(wl.num_requests), strict=True)), wl.num_requests
    n0 = min(int(wl.closed_loop.concurrency), wl.num_requests)
    return [(0.0, i) for i in range(n0)], n0


def workload_from_arrays(arrival_s: ArrayLike, input_tokens: ArrayLike, output_tokens: ArrayLike) -> Workload:
    """A workload from given arrival times [s] and token counts (sorted by arrival)."""
    a = np.asarray(arrival_s, dtype=np.float64)
    i = np.asarray(positive_int("input_tokens", np.asarray(input_tokens)), dtype=np.int64).ravel()
    o = np.asarray(positive_int("output_tokens", np.asarray(output_tokens)), dtype=np.int64).ravel()
    if a.ndim != 1 or not (a.size == i.size == o.size) or a.size == 0:
        raise InvalidInputError("arrival_s", a.size, "one arrival time per request, same length as the token arrays")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise InvalidInputError("arrival_s", arrival_s, "finite, non-negative times in seconds")
    order = np.argsort(a, kind="stable")
    return Workload(i[order], o[order], a[order])


def read_trace(path: str | Path) -> Workload:
    """Read a replay trace: a CSV with a header naming ``arrival_time_s, input_tokens, output_tokens``.

    Raises
    ------
    InvalidInputError
        Naming the file's line and the column of the first malformed value (``field`` is
        ``"trace line N: column"``).
    """
    p = Path(path)
    try:
        if p.stat().st_size > MAX_TRACE_BYTES:
            raise InvalidInputError("trace", f"{p.stat().st_size} bytes", f"at most {MAX_TRACE_BYTES} bytes")
        text = p.read_text(encoding="utf-8")
        rows = list(csv.reader(text.splitlines()))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InvalidInputError("trace", str(p), f"a readable CSV file ({exc.__class__.__name__})") from None
    if not rows:
        raise InvalidInputError("trace line 1: header", "", "a header naming " + ", ".join(TRACE_COLUMNS))
    header = [h.strip() for h in rows[0]]
    missing = [c for c in TRACE_COLUMNS if c not in header]
    if missing:
        raise InvalidInputError("trace line 1: header", rows[0], "a header naming " + ", ".join(TRACE_COLUMNS))
    cols = [header.index(c) for c in TRACE_COLUMNS]
    out: list[list[float]] = [[], [], []]
    for lineno, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        for k, (name, j) in enumerate(zip(TRACE_COLUMNS, cols, strict=True)):
            raw = row[j].strip() if j < len(row) else ""
            try:
                v = float(raw)
            except ValueError:
                v = math.nan
            ok = math.isfinite(v) and (v >= 0 if k == 0 else (v >= 1 and v == int(v)))
            if not ok:
                allowed = "a finite time ≥ 0 in seconds" if k == 0 else "a whole number of tokens ≥ 1"
                raise InvalidInputError(f"trace line {lineno}: {name}", raw, allowed)
            out[k].append(v)
    if not out[0]:
        raise InvalidInputError("trace", str(p), "one or more request rows after the header")
    return workload_from_arrays(out[0], np.asarray(out[1], dtype=np.int64), np.asarray(out[2], dtype=np.int64))


def write_trace(path: str | Path, wl: Workload) -> None:
    """Write an open-loop workload as a replay trace CSV."""
    if wl.arrival_s is None:
        raise InvalidInputError("workload", "closed loop", "an open-loop workload with arrival times")
    lines = [",".join(TRACE_COLUMNS)] + [f"{a!r},{i},{o}" for a, i, o in
                                         zip(wl.arrival_s.tolist(), wl.input_tokens.tolist(),
                                             wl.output_tokens.tolist(), strict=True)]
    Path(path).write_text("\n".join(lines) + "\n")
