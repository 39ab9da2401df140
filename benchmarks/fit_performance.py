"""Fit the performance model's default coefficients on the public corpus; write ``performance_fit.toml``.

    .venv/bin/python benchmarks/fit_performance.py [--check] [--iterations N] [--engine-sd SD] [--moe-sd SD]
                                                   [--out FILE] [--jobs N] [--start FILE]
                                                   [--shipped-from FILE] [--sources S ...]

What is fitted (docs/performance-model.md §4): the reference set of :class:`~calculators.perf.roofline.Efficiencies`
(the experts' and attention's compute shares and the all-reduce terms of GPUs joined by PCIe only among them) and the
8- and 4-bit compute shares (20 numbers); per GPU family a compute and a memory efficiency and a factor on the
GPU-side per-layer costs; a factor on the software costs per engine generation — 46 numbers on the 18 sources with
comparable rows (22 in the corpus), the
per-family and per-engine ones drawn towards the reference by a Gaussian prior so that a family or engine seen in
one source moves only as far as its rows insist (``--engine-sd``: the prior's width on the engine-generation
factors; a narrower one leaves fewer free parameters in effect, and is kept only if it predicts left-out sources
better). The loss is a robust (Cauchy, scale 0.3) sum of the log-ratios
``ln(measured / predicted)`` of TPOT, TTFT (half weight) and output tokens/s per GPU over every comparable row, each
source's rows weighted ``1 / √n`` so the largest source does not drown the others; Levenberg–Marquardt on
forward-difference Jacobians (a configuration whose efficiencies a column does not move is predicted once per
Jacobian), efficiencies through a logistic (so never above 1) and costs through an exponential (never negative).

The shipped profile is fitted on every source (from the priors' means, or ``--start``: from a fit file's profile);
then once per source with that source's rows left out (warm-started from the shipped fit), and those held-out
profiles are stored too: the accuracy harness predicts each source with the profile that never saw it
(leave-one-source-out). ``--shipped-from`` takes a fit file's profile as the shipped one and ``--sources`` refits
only some sources held out, so that the refits can be shared between machines and their ``[[held_out]]`` tables
joined in one file. The file it writes has no leave-one-family-out refits: run ``benchmarks/family_holdout.py
--write`` after it, then ``benchmarks/fit_timing_bands.py``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calculators.perf.accuracy import predict  # noqa: E402
from calculators.perf.coefficients import FIT_FILE, Profile, parse_fit_file  # noqa: E402
from calculators.perf.comparable import comparable_rows  # noqa: E402
from calculators.perf.measurements import measurements_frame  # noqa: E402

OUT = ROOT / "calculators" / "data" / FIT_FILE
#: (name, transform, start, prior sd in θ) of the reference set. θ is logit for efficiencies, log otherwise.
#: The PCIe all-reduce terms start at NCCL's small-message latency over PCIe (about 100 µs) and half the link's
#: bandwidth, with wide priors: one source of the corpus runs tensor parallelism over PCIe (docs/performance-model.md
#: §3.4). The MLA share is drawn to FlashMLA's published ≈ 90 % of HBM bandwidth (docs/performance-model.md §4): with a
#: wide prior it absorbed the DeepSeek-R1 rows' other gaps (0.47 on every source, 0.21 without InferenceX). The
#: attention share is drawn to FlashAttention-3's published 75 % of an H100's FP16 peak (arXiv 2407.08608).
REFERENCE = [("compute", "logit", 0.7, 1.5), ("memory", "logit", 0.8, 1.5), ("step_overhead_s", "log", 2e-3, 2.0),
             ("layer_overhead_s", "log", 2e-5, 3.0), ("sequence_overhead_s", "log", 2e-5, 3.0),
             ("allreduce_latency_s", "log", 1e-5, 2.0), ("attention_halving_context_tokens", "log", 3e4, 3.0),
             ("pcie_allreduce_latency_s", "log", 1e-4, 1.5), ("pcie_link_efficiency", "logit", 0.5, 1.0),
             ("moe_small_batch_penalty", "log", 0.5, 3.0), ("moe_layer_overhead_s", "log", 2e-5, 3.0),
             ("moe_expert_efficiency", "logit", 0.7, 1.5), ("mla_attention", "logit", 0.9, 1.0),
             ("request_overhead_s", "log", 0.03, 2.0), ("prefill_layer_overhead_s", "log", 1e-4, 3.0),
             ("prefill_moe_layer_overhead_s", "log", 1e-4, 3.0), ("fp8_compute_share", "logit", 0.85, 1.0),
             ("fp4_compute_share", "logit", 0.75, 1.0), ("moe_compute_share", "logit", 0.7, 1.0),
             ("attention_compute_share", "logit", 0.75, 1.0)]
#: Prior sd of each family's memory and compute logit offsets and GPU-side cost log-factor, and of the engines'.
FAMILY_SD, ENGINE_SD = {"memory": 0.7, "compute": 1.5, "overhead": 0.7}, 0.7
ENGINES = ("sglang", "sglang-old", "trtllm", "trtllm-old", "vllm-v0", "vllm-v1-piecewise", "lmdeploy", "atom")
METRIC_WEIGHT = {"tpot": 1.0, "ttft": 0.5, "throughput": 1.0}
SCALE = 0.3
"""The Cauchy loss's scale in log-ratio: a row 5 % off is weighed 0.97, one 20 % off 0.73, one 2× off 0.16 (IRLS
weights). 0.15, about the rows' median |log-ratio|, was fitted and judged held out on 2026-12-05 and not shipped
(docs/performance-model.md §11, "Tried on this fit, not shipped")."""


def _to(transform: str, v: float) -> float:
    return float(np.log(v / (1 - v)) if transform == "logit" else np.log(v))


def _from(transform: str, x: float) -> float:
    return float(1 / (1 + np.exp(-x)) if transform == "logit" else np.exp(x))


class Space:
    """θ ↔ Profile: the reference (20), per-family memory and compute logit offsets and GPU-side cost
    log-factors, engine log-factors."""

    def __init__(self, families: list[str], engine_sd: float = ENGINE_SD, moe_sd: float | None = None) -> None:
        self.families = families
        self.names = ([n for n, *_ in REFERENCE] + [f"family:{f}" for f in families]
                      + [f"compute:{f}" for f in families] + [f"overhead:{f}" for f in families]
                      + [f"engine:{e}" for e in ENGINES])
        self.mean = np.array([_to(t, v) for _, t, v, _ in REFERENCE] + [0.0] * (len(self.names) - len(REFERENCE)))
        reference_sd = [moe_sd if moe_sd is not None and n == "moe_expert_efficiency" else sd
                        for n, _, _, sd in REFERENCE]
        self.sd = np.array(reference_sd + [FAMILY_SD[k] for k in ("memory", "compute", "overhead")
                                           for _ in families]
                           + [engine_sd] * len(ENGINES))

    def theta(self, profile: Profile) -> np.ndarray:
        """The θ of ``profile`` (the inverse of :meth:`profile`): to warm-start a fit from a fit file's profile."""
        ref = profile.reference.model_dump()
        head = [_to(t, ref[n]) for n, t, _, _ in REFERENCE]
        fams = [profile.family[f] for f in self.families]
        return np.array(head + [_to("logit", f.memory) - head[1] for f in fams]
                        + [_to("logit", f.compute) - head[0] for f in fams]
                        + [float(np.log(f.overhead_factor)) for f in fams]
                        + [float(np.log(profile.engine[e].overhead_factor)) for e in ENGINES])

    def profile(self, theta: np.ndarray) -> Profile:
        ref = {n: _from(t, theta[i]) for i, (n, t, _, _) in enumerate(REFERENCE)}
        k = len(REFERENCE)
        n = len(self.families)
        fam = {f: {"compute": _from("logit", theta[0] + theta[k + n + j]),
                   "memory": _from("logit", theta[1] + theta[k + j]),
                   "overhead_factor": float(np.exp(theta[k + 2 * n + j]))} for j, f in enumerate(self.families)}
        k += 3 * n
        eng = {e: {"overhead_factor": float(np.exp(theta[k + j]))} for j, e in enumerate(ENGINES)}
        return Profile.model_validate({"reference": ref, "family": fam, "engine": eng})


def residuals(rows: pd.DataFrame, profile: Profile,
              memo: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Log-ratios ln(measured / predicted) of every compared point, and their weights (``memo``: the
    configurations already predicted with the same efficiencies, kept for one Jacobian). A trial profile can make
    a row's prediction infinite (a step that never ends); its infinite log-ratio is replaced by ±5 below, so
    numpy's divide-by-zero warning says nothing and is silenced."""
    with np.errstate(divide="ignore"):
        p = predict(rows, profile=profile, memo=memo)
    n = p.groupby(["source_id", "metric"])["metric"].transform("size").to_numpy(float)
    w = p["metric"].map(METRIC_WEIGHT).to_numpy(float) / np.sqrt(n)
    return np.nan_to_num(p["log_ratio"].to_numpy(float), nan=0.0, posinf=5.0, neginf=-5.0), w


def _robust(r: np.ndarray) -> tuple[float, np.ndarray]:
    """Cauchy loss ``s²·ln(1 + (r/s)²)`` and its IRLS weights ``1 / (1 + (r/s)²)``: a point 20× off (a benchmark
    that queued its requests for minutes) pulls on the fit almost nothing; weights at :data:`SCALE`'s."""
    z = 1 + (r / SCALE) ** 2
    return float(np.sum(np.log(z)) * SCALE**2), 1 / z


def _objective(rows: pd.DataFrame, space: Space, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The prior-regularised robust loss at ``theta``, with the residuals and weights it came from."""
    r, w = residuals(rows, space.profile(theta))
    prior = (theta - space.mean) / space.sd
    return _robust(np.sqrt(w) * r)[0] + SCALE**2 * float(prior @ prior), r, w


def _levenberg_marquardt(rows: pd.DataFrame, space: Space, theta: np.ndarray, iterations: int,
                         log: Callable[[str], None]) -> np.ndarray:
    """Gauss–Newton steps on IRLS weights, damped until the loss falls; stops when no step helps."""
    mu = 1e-2
    loss, r, w = _objective(rows, space, theta)
    previous = np.inf
    for it in range(iterations):
        sw = np.sqrt(w * _robust(np.sqrt(w) * r)[1])
        jac = np.empty((len(r), len(theta)))
        memo: dict = {}
        residuals(rows, space.profile(theta), memo)
        for j in range(len(theta)):
            d = theta.copy()
            d[j] += 1e-3
            jac[:, j] = (residuals(rows, space.profile(d), memo)[0] - r) / 1e-3
        a = (jac * sw[:, None]).T @ (jac * sw[:, None]) + np.diag(SCALE**2 / space.sd**2)
        g = (jac * sw[:, None]).T @ (sw * r) + SCALE**2 * (theta - space.mean) / space.sd**2
        for _ in range(10):
            step = np.linalg.solve(a + mu * np.diag(np.diag(a)), -g)
            new_loss, nr, nw = _objective(rows, space, theta + step)
            if new_loss < loss:
                theta, loss, r, w, mu = theta + step, new_loss, nr, nw, mu / 3
                break
            mu *= 4
        else:
            break
        log(f"  iteration {it + 1}: loss {loss:.5f}, median |log-ratio| {np.median(np.abs(r)):.3f}")
        if np.max(np.abs(step)) < 1e-3 or _stalled(loss, previous):
            break
        previous = loss
    return theta


def _stalled(loss: float, previous: float) -> bool:
    """The last step bought less than 0.01 % of the loss."""
    return previous - loss < 1e-4 * loss


def _polish(rows: pd.DataFrame, space: Space, theta: np.ndarray, log: Callable[[str], None]) -> np.ndarray:
    """One coordinate sweep at steps 0.4 and 0.1 in θ: where the loss is not smooth (the roofline's max, the
    prefill chunks), a step along one coefficient can still help after Gauss–Newton stalls."""
    loss = _objective(rows, space, theta)[0]
    for delta in (0.4, 0.1):
        for j in range(len(theta)):
            for sign in (1.0, -1.0):
                trial = theta.copy()
                trial[j] += sign * delta
                new = _objective(rows, space, trial)[0]
                if new < loss:
                    theta, loss = trial, new
                    break
    log(f"  coordinate sweep: loss {loss:.5f}")
    return theta


def fit(rows: pd.DataFrame, space: Space, start: np.ndarray, iterations: int,
        log: Callable[[str], None] = print) -> np.ndarray:
    """Levenberg–Marquardt, a coordinate sweep, Levenberg–Marquardt again (see the module docstring)."""
    theta = _levenberg_marquardt(rows, space, start.copy(), iterations, log)
    theta = _polish(rows, space, theta, log)
    return _levenberg_marquardt(rows, space, theta, iterations, log)


def refit_without(source: str, rows: pd.DataFrame, space: Space, start: np.ndarray, iterations: int) -> Profile:
    """The fit on every source but ``source``, warm-started from ``start`` (one leave-one-source-out profile)."""
    theta = fit(rows[rows["source_id"] != source], space, start, iterations, log=lambda _: None)
    return space.profile(theta)


def _toml_table(header: str, values: dict[str, float]) -> list[str]:
    return [f"[{header}]", *(f"{k} = {v:.6g}" for k, v in values.items()), ""]


def profile_toml(prefix: str, p: Profile) -> list[str]:
    """TOML lines of one profile under ``prefix`` (``shipped`` or ``held_out.profile``)."""
    lines = _toml_table(f"{prefix}.reference", p.reference.model_dump())
    for kind in ("family", "engine"):
        for key, entry in getattr(p, kind).items():
            lines += _toml_table(f'{prefix}.{kind}."{key}"', entry.model_dump())
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="print the fit, do not write the file")
    ap.add_argument("--iterations", type=int, default=25)
    ap.add_argument("--engine-sd", type=float, default=ENGINE_SD,
                    help="prior sd of the engine-generation log-factors (smaller: pulled harder to the reference)")
    ap.add_argument("--moe-sd", type=float, default=None,
                    help="prior sd (logit) of the MoE expert efficiency around its start of 0.7 (default 1.5)")
    ap.add_argument("--out", type=Path, default=OUT, help="where to write the fit file")
    ap.add_argument("--jobs", type=int, default=1, help="processes for the leave-one-source-out refits")
    begin = ap.add_mutually_exclusive_group()
    begin.add_argument("--start", type=Path, help="warm-start the fit on every source from this fit file's profile")
    begin.add_argument("--shipped-from", type=Path,
                       help="take this fit file's profile as the fit on every source and only refit the held-out ones")
    ap.add_argument("--sources", nargs="+", help="refit only these sources held out (default: every source)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    frame = measurements_frame()
    rows = comparable_rows(frame)
    space = Space(sorted(rows["gpu_family"].unique()), args.engine_sd, args.moe_sd)
    print(f"fitting {len(space.names)} numbers on {len(rows)} rows of {rows['source_id'].nunique()} sources")
    if args.shipped_from:
        shipped = space.theta(parse_fit_file(args.shipped_from.read_text(encoding="utf-8")).shipped)
    else:
        start = (space.theta(parse_fit_file(args.start.read_text(encoding="utf-8")).shipped) if args.start
                 else space.mean)
        shipped = fit(rows, space, start, args.iterations)
    lines = ["# The performance model's default coefficients, fitted on the public measurement corpus.",
             "# Written by benchmarks/fit_performance.py; method in docs/performance-model.md §4 and §11.",
             f"fitted = {dt.date.today().isoformat()}",
             f'corpus = "public measurement corpus: {len(frame)} rows, {frame["source_id"].nunique()} sources, '
             f'{len(rows)} comparable"',
             f'method = "robust (Cauchy, scale {SCALE:g}) least squares on log-ratios, sources weighted 1/sqrt(n), '
             'Gaussian prior on the '
             f'per-family and per-engine entries (family memory/compute/cost sd {FAMILY_SD["memory"]:g}/'
             f'{FAMILY_SD["compute"]:g}/{FAMILY_SD["overhead"]:g}, engine sd {args.engine_sd:g}) and on the MLA '
             'and attention shares '
             '(0.9 and 0.75, logit sd 1) and on the PCIe all-reduce terms (100 us, log sd 1.5; 0.5, logit sd 1'
             + ("" if args.moe_sd is None else f", MoE expert efficiency sd {args.moe_sd:g}") + ')"',
             'script = "benchmarks/fit_performance.py"', "", *profile_toml("shipped", space.profile(shipped))]
    sources = sorted(args.sources or rows["source_id"].unique())
    refit = partial(refit_without, rows=rows, space=space, start=shipped, iterations=args.iterations)
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        for source, profile in zip(sources, pool.map(refit, sources), strict=True):
            print(f"refitted without {source} ({time.perf_counter() - t0:.0f} s)")
            lines += ["[[held_out]]", f'source = "{source}"', "", *profile_toml("held_out.profile", profile)]
    text = "\n".join(lines)
    parse_fit_file(text)
    print(text)
    if not args.check:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
