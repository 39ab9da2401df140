"""What a fleet costs: per hour, per month, per year, and per million input, output and all tokens.

One rule for every page, the quote, the plan's JSON and CSV (docs/queueing.md §5):

- ``$/hour = GPUs × $/GPU-hour``; ``$/month = $/hour × 730 h`` (8,760 h / 12, the month cloud price lists
  use); ``$/year = $/hour × 8,760 h``.
- The GPU time is split between prefill and decode by their shares of a request cycle: input tokens carry
  the prefill share, output tokens the decode share, so ``$/1M input = $/s × prefill share / (λ × I) × 10⁶``
  and ``$/1M output = $/s × (1 − prefill share) / (λ × O) × 10⁶``; all tokens together:
  ``$/1M tokens (input + output) = $/s / (λ × (I + O)) × 10⁶``.

:data:`COST_LABELS` names each figure the same way wherever it is shown, and always says which tokens.
"""
from __future__ import annotations

from calculators.errors import InvalidInputError
from calculators.validation import positive

SECONDS_PER_HOUR = 3600.0
HOURS_PER_MONTH = 730.0  # 8,760 h / 12: the month cloud price lists use
HOURS_PER_YEAR = 8760.0
TOKENS_PER_MILLION = 1e6

#: Key (LayoutPlan field, JSON key, CSV column) → the label every page and the quote show.
COST_LABELS: dict[str, str] = {
    "usd_per_hour": "$/hour",
    "usd_per_month": "$/month (730 h)",
    "usd_per_year": "$/year (8,760 h)",
    "usd_per_million_input_tokens": "$/1M input tokens",
    "usd_per_million_output_tokens": "$/1M output tokens",
    "usd_per_million_tokens": "$/1M tokens (input + output)",
}


def fleet_costs(total_gpus: int, usd_per_gpu_hour: float, request_rate_per_s: float, input_len: float,
                output_len: float, prefill_share: float) -> dict[str, float]:
    """The six figures of :data:`COST_LABELS` [USD] for ``total_gpus`` GPUs at ``usd_per_gpu_hour``
    serving ``request_rate_per_s`` requests of ``input_len`` + ``output_len`` tokens, the GPU time split
    by ``prefill_share`` (the prefill's share of a request cycle, 0–1)."""
    usd_per_hour = float(positive("total_gpus", total_gpus)) * float(positive("usd_per_gpu_hour", usd_per_gpu_hour))
    usd_per_s = usd_per_hour / SECONDS_PER_HOUR
    lam, share = float(positive("request_rate_per_s", request_rate_per_s)), float(prefill_share)
    if not 0 <= share <= 1:
        raise InvalidInputError("prefill_share", prefill_share, "a share from 0 to 1")
    i, o = float(positive("input_len", input_len)), float(positive("output_len", output_len))
    return {
        "usd_per_hour": usd_per_hour,
        "usd_per_month": usd_per_hour * HOURS_PER_MONTH,
        "usd_per_year": usd_per_hour * HOURS_PER_YEAR,
        "usd_per_million_input_tokens": usd_per_s * share / (lam * i) * TOKENS_PER_MILLION,
        "usd_per_million_output_tokens": usd_per_s * (1 - share) / (lam * o) * TOKENS_PER_MILLION,
        "usd_per_million_tokens": usd_per_s / (lam * (i + o)) * TOKENS_PER_MILLION,
    }
