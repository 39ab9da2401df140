"""One vectorised call over models × GPUs × TP × weight formats × batch × context."""
from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np
import pandas as pd

from calculators.errors import InvalidInputError
from calculators.perf.roofline import Coefficients, Efficiencies, Roofline, decode_terms
from calculators.specs.schema import GPUSpec, ModelSpec


def stack_coefficients(parts: list[Coefficients]) -> Coefficients:
    """Concatenate per-configuration coefficients into one set of 1-D arrays."""
    def col(name: str) -> np.ndarray:
        return np.concatenate([np.broadcast_to(np.asarray(getattr(p, name), dtype=np.float64), p.tp.shape).ravel()
                               for p in parts])
    # Stacked, the scalar fields (pp, peak_flop_per_s, ...) become per-configuration arrays too.
    stacked: dict[str, Any] = {f.name: col(f.name) for f in fields(Coefficients)}
    return Coefficients(**stacked)


def stack_efficiencies(parts: list[tuple[Efficiencies, int]]) -> Efficiencies:
    """Each configuration's efficiencies (the fitted set of its GPU family, or the one given), ``n`` rows each,
    as one set of 1-D arrays with a trailing (batch, context) axis pair."""
    cols: dict[str, Any] = {f.name: np.concatenate([np.full(n, getattr(e, f.name), dtype=np.float64)
                                                     for e, n in parts])[:, None, None] for f in fields(Efficiencies)}
    return Efficiencies(**cols)


def decode_sweep(models: list[ModelSpec], gpus: list[GPUSpec], tensor_parallel_sizes: list[int],
                 batch_sizes: np.ndarray, context_lens: np.ndarray, *, quantizations: tuple[str, ...] = ("none",),
                 efficiencies: Efficiencies | None = None) -> pd.DataFrame:
    """Decode step time, throughput and bound at every combination — a tidy DataFrame.

    TP sizes a model cannot use (heads that do not divide) and GPUs without a scale-up link at
    TP > 1 are left out. The configurations are enumerated once; the formula is evaluated in one
    broadcast over (configuration, batch, context).
    """
    e = efficiencies or Efficiencies()
    parts, effs, labels = [], [], []
    for m in models:
        tps = [t for t in tensor_parallel_sizes if m.num_attention_heads % t == 0 and
               (m.is_mla or (m.num_key_value_heads % t == 0 if t <= m.num_key_value_heads
                             else t % m.num_key_value_heads == 0))]
        for g in gpus:
            use = tps if g.scale_up_bytes_per_s_per_direction > 0 else [t for t in tps if t == 1]
            for q in quantizations:
                if not use:
                    continue
                r = Roofline(m, g, tensor_parallel_size=np.array(use), quantization=q, efficiencies=e)
                parts.append(r.coefficients)
                effs.append((r.efficiencies, len(use)))
                labels += [(m.id, g.id, q, t) for t in use]
    if not parts:
        raise InvalidInputError("tensor_parallel_size", tensor_parallel_sizes, "a size every model can use")
    c = stack_coefficients(parts)
    b = np.asarray(batch_sizes, dtype=np.float64)[None, :, None]
    ctx = np.asarray(context_lens, dtype=np.float64)[None, None, :]
    t = decode_terms(_expand(c), stack_efficiencies(effs), b, ctx, 1)
    step = t["step_s"]
    shape = step.shape
    per_cfg = shape[1] * shape[2]  # rows per configuration, configurations outermost
    codes = [_codes(np.array([lab[k] for lab in labels], dtype=object), per_cfg) for k in range(3)]
    return pd.DataFrame({
        "model": codes[0], "gpu": codes[1], "quantization": codes[2],
        "tensor_parallel_size": np.repeat(np.array([lab[3] for lab in labels], dtype=np.int64), per_cfg),
        "batch_size": np.broadcast_to(b, shape).ravel(), "context_tokens": np.broadcast_to(ctx, shape).ravel(),
        "decode_step_s": step.ravel(), "output_tokens_per_s": (b / step).ravel(),
        "output_tokens_per_s_per_gpu": (b / step / c.tp[:, None, None] / np.asarray(c.pp)[:, None, None]).ravel(),
        "bound": pd.Categorical.from_codes(np.broadcast_to(t["memory_bound"], shape).ravel().astype(np.int8) ^ 1,
                                           categories=["memory", "compute"]),
    })


def _codes(values: np.ndarray, repeat: int) -> pd.Categorical:
    """One label per configuration, repeated for its rows, as a categorical (no Python string per row)."""
    categories, codes = np.unique(values, return_inverse=True)
    return pd.Categorical.from_codes(np.repeat(codes, repeat), categories=categories)


def _expand(c: Coefficients) -> Coefficients:
    """Give every coefficient a trailing (batch, context) axis pair for broadcasting."""
    expanded: dict[str, Any] = {f.name: np.asarray(getattr(c, f.name))[:, None, None] for f in fields(Coefficients)}
    return Coefficients(**expanded)
