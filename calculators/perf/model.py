"""The one performance-model interface every time-based calculator uses (docs/performance-model.md §1).

Implementations: :class:`calculators.perf.roofline.Roofline` (analytic). Throughput, latency, knee,
fleet and simulator code only call these methods, never ask which model they hold.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError


@runtime_checkable
class PerformanceModel(Protocol):
    """Step times of one replica (all its GPUs together) [s]."""

    @property
    def num_gpus(self) -> np.ndarray: ...

    def decode_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike) -> np.ndarray: ...

    def prefill_time_s(self, prompt_tokens: ArrayLike, num_prompts: ArrayLike = 1) -> np.ndarray: ...

    def step_time_s(self, batch: ArrayLike, context_tokens: ArrayLike, phase: str = "decode") -> np.ndarray: ...


class _PhaseMethods(Protocol):
    """The two phase methods :class:`StepTimeMixin` dispatches to."""

    def decode_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike) -> np.ndarray: ...

    def prefill_time_s(self, prompt_tokens: ArrayLike, num_prompts: ArrayLike = 1) -> np.ndarray: ...


class StepTimeMixin:
    """``step_time_s`` for any model that has the two phase methods (one mechanism, not one per model)."""

    def step_time_s(self: _PhaseMethods, batch: ArrayLike, context_tokens: ArrayLike,
                    phase: str = "decode") -> np.ndarray:
        """One engine step [s]: a decode step of ``batch`` sequences at ``context_tokens``, or the
        prefill of ``batch`` prompts of ``context_tokens`` tokens."""
        if phase == "decode":
            return self.decode_step_time_s(batch, context_tokens)
        if phase == "prefill":
            return self.prefill_time_s(context_tokens, batch)
        raise InvalidInputError("phase", phase, "decode or prefill")
