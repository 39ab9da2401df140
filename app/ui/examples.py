"""The landing page's three filled-in examples: one per task people come for.

Each example is a full scenario (fields not named keep :class:`~calculators.scenario.Scenario`'s
defaults, so nothing of an earlier scenario lingers) and the page that answers it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.ui.inputs import widget_values
from calculators.scenario import Scenario

_FLAGS = ("gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens", "kv_cache_dtype")


@dataclass(frozen=True)
class Example:
    """A task, its example scenario (fields that differ from the defaults) and the page that answers it."""

    name: str
    title: str
    question: str
    button: str
    page: str
    changes: dict[str, Any] = field(default_factory=dict)

    @property
    def scenario(self) -> Scenario:
        return Scenario(**self.changes)

    @property
    def widget_values(self) -> dict[str, Any]:
        """The sidebar's widget values for the whole example scenario (every field, defaults included)."""
        return widget_values(self.scenario.model_dump())

    @property
    def summary(self) -> str:
        """One line: the example's model, GPU and what it sets (vLLM flags, or the workload and SLO)."""
        s = self.scenario
        flags = [f"{k} {v:g}" if isinstance(v, float) else f"{k} {v:,}" for k, v in self.changes.items()
                 if k in _FLAGS]
        if flags:
            return f"Example: {s.model} on {s.gpu}, {', '.join(flags)}."
        slo = []
        if s.ttft_p99_ms:
            slo.append(f"p99 TTFT ≤ {s.ttft_p99_ms:g} ms")
        if s.tpot_p99_ms:
            slo.append(f"p99 TPOT ≤ {s.tpot_p99_ms:g} ms")
        return (f"Example: {s.model} on {s.gpu}, {s.input_len:g} tokens in / {s.output_len:g} out, "
                f"{s.request_rate_per_s:g} requests/s" + (f", {', '.join(slo)}" if slo else "") + ".")


EXAMPLES = (
    Example("fleet", "Size a fleet",
            "Which GPU, what tensor parallelism, how many GPUs — and what it costs per month and per million tokens.",
            "Plan a fleet", "views/fleet.py",
            {"model": "meta-llama/Llama-3.1-70B", "gpu": "H100-SXM", "tensor_parallel_size": 4,
             "input_len": 2000, "output_len": 300, "request_rate_per_s": 40, "ttft_p99_ms": 1000, "tpot_p99_ms": 50}),
    Example("quote", "Quote a configuration",
            "A layout a customer can read: the chosen GPUs, the cost, the math and the public sources, as HTML "
            "or PDF.",
            "Build a quote", "views/fleet.py",
            {"model": "Qwen/Qwen2.5-32B", "gpu": "H100-SXM", "tensor_parallel_size": 2, "input_len": 1000,
             "output_len": 500, "request_rate_per_s": 5, "ttft_p99_ms": 2000, "tpot_p99_ms": 60}),
    Example("flags", "Check my vLLM flags",
            "The KV-cache size and concurrency vLLM will report for these flags, and a check against its "
            "start-up log.",
            "Check vLLM flags", "views/kv_cache.py",
            {"model": "meta-llama/Llama-3.1-8B", "gpu": "A100-80GB-SXM", "gpu_memory_utilization": 0.9,
             "max_model_len": 32768, "max_num_seqs": 256}),
)

__all__ = ["EXAMPLES", "Example"]
