"""Unit constants. Everything inside is SI base units; these convert at the edges only."""
from __future__ import annotations

KiB = 2**10
MiB = 2**20
GiB = 2**30
GB = 10**9
TB = 10**12
TFLOP = 10**12


def gib(n_bytes: float) -> float:
    """Bytes to GiB (binary, 2**30)."""
    return n_bytes / GiB
