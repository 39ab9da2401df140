"""Which timing a fleet is sized on: the model's estimate, or the pessimistic edge of its 80 % bands.

The bands (:func:`calculators.perf.bands.timing_band`, docs/performance-model.md §11) say how far measured
TPOT and TTFT fell from the model's estimate on public measurements. *Conservative* sizing plans with a
performance model whose times are stretched to the pessimistic edge: :class:`ScaledModel` wraps any
:class:`~calculators.perf.model.PerformanceModel` and multiplies

- every engine step (a decode step, and a step that fuses arriving prompts' chunks into it) by the TPOT
  band's high factor: TPOT is then exactly the band's pessimistic edge and a replica's throughput falls
  by the same factor (close to the throughput band's low edge);
- a prefill run on its own (prompt tokens beyond the step's token budget) by the TTFT band's high factor.

Under chunked prefill a prompt is processed inside fused steps, so TTFT moves with the step factor; its
own band (which also holds the queueing the benchmarks measured) is shown beside it, not folded in.
Every figure the planner derives from step times (TPOT, TTFT, throughput, replicas, cost) then follows; the
planner itself does not know which model it holds. The bands are the GPU's: for a GPU whose family has no runs in
the corpus, those measured with each GPU family left out of the fit. They describe the shipped fit only, so a plan
on a calibration carries none and is not sized conservatively (:func:`calculators.planning.fleet.plan_layout`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError
from calculators.perf.bands import seen_family, timing_band
from calculators.perf.model import PerformanceModel, StepTimeMixin, decodes_first
from calculators.perf.roofline import DEFAULT_MAX_NUM_BATCHED_TOKENS
from calculators.specs.schema import GPUSpec

Sizing = Literal["estimate", "conservative"]
SIZINGS: tuple[str, ...] = ("estimate", "conservative")


@dataclass(frozen=True)
class ScaledModel(StepTimeMixin):
    """``inner``'s engine steps × ``step_factor`` and its stand-alone prefills × ``prefill_factor``."""

    inner: PerformanceModel
    step_factor: float
    prefill_factor: float

    @property
    def num_gpus(self) -> np.ndarray:
        return self.inner.num_gpus

    @property
    def request_overhead_s(self) -> float:
        return self.inner.request_overhead_s

    @property
    def max_num_batched_tokens(self) -> int:
        """The inner model's token budget per step (vLLM's default when it has none)."""
        return int(getattr(self.inner, "max_num_batched_tokens", DEFAULT_MAX_NUM_BATCHED_TOKENS))

    @property
    def decodes_first(self) -> bool:
        """The inner model's scheduling order (:func:`~calculators.perf.model.decodes_first`)."""
        return decodes_first(self.inner)

    def decode_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike) -> np.ndarray:
        """One decode step [s], stretched by ``step_factor``."""
        return self.step_factor * self.inner.decode_step_time_s(batch_size, context_tokens)

    def prefill_time_s(self, prompt_tokens: ArrayLike, num_prompts: ArrayLike = 1) -> np.ndarray:
        """Prefill of ``num_prompts`` prompts [s], stretched by ``prefill_factor``."""
        return self.prefill_factor * self.inner.prefill_time_s(prompt_tokens, num_prompts)

    def mixed_step_time_s(self, batch_size: ArrayLike, context_tokens: ArrayLike, prefill_tokens: ArrayLike,
                          prompt_tokens: ArrayLike) -> np.ndarray:
        """A decode step fused with prompt chunks [s], stretched by ``step_factor``."""
        return self.step_factor * self.inner.mixed_step_time_s(batch_size, context_tokens, prefill_tokens,
                                                               prompt_tokens)


def pessimistic_factors(gpu: GPUSpec | None = None) -> tuple[float, float]:
    """``(step, prefill)`` factors of conservative sizing: the TPOT and TTFT bands' pessimistic edges (``gpu``'s
    bands: those measured with GPU families left out where its family has no runs)."""
    return timing_band("tpot", gpu).pessimistic_factor, timing_band("ttft", gpu).pessimistic_factor


def sized_model(pm: PerformanceModel, sizing: str, gpu: GPUSpec | None = None) -> PerformanceModel:
    """``pm`` itself for ``"estimate"``; ``pm`` stretched to the pessimistic edge of ``gpu``'s bands for
    ``"conservative"``."""
    if sizing == "estimate":
        return pm
    if sizing == "conservative":
        return ScaledModel(pm, *pessimistic_factors(gpu))
    raise InvalidInputError("sizing", sizing, "estimate or conservative")


def _unseen_sentence(sizing: str, gpus: Sequence[GPUSpec]) -> str:
    """For the GPUs among ``gpus`` whose family has no runs: which bands apply to them instead."""
    unseen = [g for g in gpus if not seen_family(g)]
    if not unseen:
        return ""
    tpot, ttft = timing_band("tpot", unseen[0]), timing_band("ttft", unseen[0])  # one band for every such GPU
    which = ", ".join(dict.fromkeys(g.id for g in unseen))
    if sizing == "conservative":
        use = (f"every engine step × {tpot.pessimistic_factor:.2f} and prefills that run alone × "
               f"{ttft.pessimistic_factor:.2f}")
    else:
        use = (f"TPOT ×{tpot.low_factor:.2f}–×{tpot.high_factor:.2f}, TTFT ×{ttft.low_factor:.2f}–"
               f"×{ttft.high_factor:.2f}")
    return (f" For the {which}, whose family has no runs in the corpus, the bands measured with each GPU family "
            f"left out of the fit apply ({use}; they held on average {100 * tpot.coverage:.0f} % (TPOT) and "
            f"{100 * ttft.coverage:.0f} % (TTFT) of each left-out family's measurements).")


def sizing_sentence(sizing: str, gpus: Sequence[GPUSpec] = (), shipped: bool = True) -> str:
    """What the plan was sized on, in one sentence with the bands' factors and coverage (for pages and quotes),
    and, where one of ``gpus`` (the GPU types planned) has a family without runs, the bands it takes instead;
    for efficiencies that are not the shipped fit (``shipped`` False: a calibration), that they have no band."""
    if not shipped:
        return ("Sized on the model's estimate; no 80 % band: the efficiencies are a calibration or given, and the "
                "bands (measured on public data) describe the shipped fitted model.")
    tpot, ttft = timing_band("tpot"), timing_band("ttft")
    held = (f"80 % bands held on average {100 * tpot.coverage:.0f} % (TPOT) and {100 * ttft.coverage:.0f} % (TTFT) "
            "of the measurements of each public source left out of their fit")
    if sizing == "conservative":
        return (f"Conservative sizing: every engine step × {tpot.pessimistic_factor:.2f} (the TPOT band's "
                f"pessimistic edge) and prefills that run alone × {ttft.pessimistic_factor:.2f} (the TTFT band's); "
                f"the model's {held}." + _unseen_sentence(sizing, gpus))
    return (f"Sized on the model's estimate; its {held}." + _unseen_sentence(sizing, gpus)
            + " Conservative sizing sizes for their pessimistic edge.")


def band_edges_s(metric: str, estimate_s: float, gpu: GPUSpec | None = None) -> tuple[float, float]:
    """``(low, high)`` of ``gpu``'s 80 % band of ``metric`` (``"tpot"`` or ``"ttft"``) around an estimate [s]."""
    lo, hi = timing_band(metric, gpu).edges(estimate_s)
    return float(lo), float(hi)
