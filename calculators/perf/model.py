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

    @property
    def request_overhead_s(self) -> float: ...

    def decode_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike) -> np.ndarray: ...

    def prefill_time_s(self, prompt_tokens: ArrayLike, num_prompts: ArrayLike = 1) -> np.ndarray: ...

    def mixed_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike, prefill_tokens: ArrayLike,
                          prompt_tokens: ArrayLike) -> np.ndarray: ...

    def step_time_s(self, batch: ArrayLike, context_tokens: ArrayLike, phase: str = "decode") -> np.ndarray: ...


def scheduler_recv_interval(pm: PerformanceModel) -> int:
    """Decode steps between the scheduler's polls for new requests (SGLang's ``--scheduler-recv-interval``;
    a step with prompt tokens, or an idle engine, polls at once), 1 where the model states none (vLLM polls every
    step). See docs/performance-model.md §2."""
    return int(getattr(pm, "scheduler_recv_interval", 1))


def decodes_first(pm: PerformanceModel) -> bool:
    """Whether the engine schedules every running request's next token before any waiting prompt's chunk, so that
    arriving prompts get only the token budget the decodes leave (vLLM with chunked prefill: V1 always, V0 with
    ``--enable-chunked-prefill``; V1's ``Scheduler.schedule`` takes its running requests first, then the waiting
    ones, https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/core/sched/scheduler.py). False where prompts go
    first and the decodes wait through prefill-only steps (SGLang's default, V0 without chunked prefill), or where
    the model does not say. See docs/performance-model.md §2."""
    return bool(getattr(pm, "decodes_first", False))


class _PhaseMethods(Protocol):
    """The two phase methods :class:`StepTimeMixin` dispatches to."""

    def decode_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike) -> np.ndarray: ...

    def prefill_time_s(self, prompt_tokens: ArrayLike, num_prompts: ArrayLike = 1) -> np.ndarray: ...


class StepTimeMixin:
    """``step_time_s`` and ``mixed_step_time_s`` for any model that has the two phase methods (one mechanism,
    not one per model). A model that can fuse the phases (the roofline) overrides ``mixed_step_time_s``."""

    def mixed_step_time_s(self: _PhaseMethods, batch_size: ArrayLike, context_tokens: ArrayLike,
                          prefill_tokens: ArrayLike, prompt_tokens: ArrayLike) -> np.ndarray:
        """A decode step of ``batch_size`` (0: none) plus the prefill of ``prefill_tokens`` prompt tokens, run one
        after the other [s]."""
        b, p = np.asarray(batch_size, dtype=np.float64), np.asarray(prefill_tokens, dtype=np.float64)
        decode = np.where(b > 0, self.decode_step_time_s(np.maximum(b, 1.0), context_tokens), 0.0)
        return decode + np.where(p > 0, self.prefill_time_s(np.maximum(p, 1.0), 1), 0.0)

    def step_time_s(self: _PhaseMethods, batch: ArrayLike, context_tokens: ArrayLike,
                    phase: str = "decode") -> np.ndarray:
        """One engine step [s]: a decode step of ``batch`` sequences at ``context_tokens``, or the
        prefill of ``batch`` prompts of ``context_tokens`` tokens."""
        if phase == "decode":
            return self.decode_step_time_s(batch, context_tokens)
        if phase == "prefill":
            return self.prefill_time_s(context_tokens, batch)
        raise InvalidInputError("phase", phase, "decode or prefill")
