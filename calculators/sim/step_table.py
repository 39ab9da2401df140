"""Step times of one run, tabulated once: decode per batch size on a context grid, prefill per token count.

The simulator asks for a step time millions of times; one vectorised call of the performance model per
batch size (at most ``CONTEXT_GRID_POINTS`` contexts, linearly interpolated) keeps each lookup O(1).
"""
from __future__ import annotations

import math

import numpy as np

from calculators.perf.model import PerformanceModel

CONTEXT_GRID_POINTS = 2048


PREFILL_GRID_POINTS = 256


class StepTable:
    """Decode times per batch size on a context grid, and what prompt tokens add to a step, per batch size on a
    token grid (both lazy: one vectorised call per batch size), interpolated linearly.

    A step of ``B`` decodes and ``P`` prompt tokens takes ``decode(B, C) + added(B, P)`` with ``added(B, P) =
    mixed(B, C̄, P, Ī) − mixed(B, C̄, 0, Ī)`` at the workload's mean context ``C̄`` and prompt ``Ī``: the
    performance model's fused step (docs/performance-model.md §2), the same rule as the closed-loop formulas.
    ``added(0, P)`` is a prompt-only step.
    """

    def __init__(self, pm: PerformanceModel, max_context: int, max_prefill: int, *, mean_context: float = 1.0,
                 mean_prompt: float = 1.0):
        self.pm = pm
        self.ref = (max(mean_context, 1.0), max(mean_prompt, 1.0))
        self.hp = max(1.0, (max_prefill - 1) / PREFILL_GRID_POINTS)
        self.p_grid = 1.0 + self.hp * np.arange(int(math.ceil((max_prefill - 1) / self.hp)) + 2)
        self.added_rows: dict[int, list[float]] = {}
        self.h = max(1.0, math.ceil((max_context + 2) / CONTEXT_GRID_POINTS))
        self.inv_h = 1.0 / self.h
        self.grid = self.h * np.arange(1, int(math.ceil((max_context + 2) / self.h)) + 3)
        self.rows: dict[int, list[float]] = {}

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

    def added_row(self, batch: int) -> list[float]:
        r = self.added_rows.get(batch)
        if r is None:
            ctx, prompt = self.ref
            mixed = np.broadcast_to(self.pm.mixed_step_time_s(batch, ctx, self.p_grid, prompt), self.p_grid.shape)
            base = float(np.ravel(self.pm.mixed_step_time_s(batch, ctx, 0.0, prompt))[0]) if batch else 0.0
            r = (mixed.astype(float) - base).tolist()
            self.added_rows[batch] = r
        return r

    def added(self, batch: int, prompt_tokens: int) -> float:
        """What ``prompt_tokens`` (≥ 1) prompt tokens add to a step of ``batch`` decodes [s]."""
        r = self.added_row(batch)
        x = (prompt_tokens - 1.0) / self.hp
        i = int(x)
        a = r[i]
        return a + (x - i) * (r[i + 1] - a)


class ConstantStepModel:
    """A stub performance model: every decode step takes ``decode_s``, a prefill of ``P`` tokens
    ``prefill_fixed_s + prefill_s_per_token · P``, and each request ``request_overhead_s`` outside the steps
    (for validating against closed-form queues) [s]; the scheduler polls every ``scheduler_recv_interval``
    decode steps."""

    def __init__(self, decode_s: float = 0.01, prefill_s_per_token: float = 0.0, prefill_fixed_s: float = 0.0,
                 request_overhead_s: float = 0.0, scheduler_recv_interval: int = 1):
        self.decode_s, self.per_token, self.fixed = decode_s, prefill_s_per_token, prefill_fixed_s
        self.request_overhead_s, self.scheduler_recv_interval = request_overhead_s, scheduler_recv_interval

    @property
    def num_gpus(self) -> np.ndarray:
        return np.asarray(1)

    def decode_step_time_s(self, batch_size, context_tokens) -> np.ndarray:
        return np.full(np.broadcast(np.asarray(batch_size), np.asarray(context_tokens)).shape, self.decode_s)

    def prefill_time_s(self, prompt_tokens, num_prompts=1) -> np.ndarray:
        return self.fixed + self.per_token * np.asarray(prompt_tokens, dtype=np.float64) * np.asarray(num_prompts)

    def mixed_step_time_s(self, batch_size, context_tokens, prefill_tokens, prompt_tokens) -> np.ndarray:
        p = np.asarray(prefill_tokens, dtype=np.float64)
        decode = np.where(np.asarray(batch_size) > 0, self.decode_s, 0.0)
        return decode + np.where(p > 0, self.fixed + self.per_token * p, 0.0)

    def step_time_s(self, batch, context_tokens, phase: str = "decode") -> np.ndarray:
        return (self.decode_step_time_s(batch, context_tokens) if phase == "decode"
                else self.prefill_time_s(context_tokens, batch))
