"""Argument checks shared by the calculators; each raises InvalidInputError naming the field."""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from calculators.errors import InvalidInputError


def finite(field: str, value: ArrayLike) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(field, value, "a number") from None
    if arr.size == 0:
        raise InvalidInputError(field, value, "a number, not an empty list")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(field, value, "a finite number")
    return arr


def positive_int(field: str, value: ArrayLike, *, maximum: float = 2**53, scalar: bool = False) -> np.ndarray | int:
    """A positive whole number (or an array of them, unless ``scalar``)."""
    arr = finite(field, value)
    if scalar and arr.ndim != 0:
        raise InvalidInputError(field, value, "one whole number, not a list")
    if np.any(arr < 1) or np.any(arr != np.floor(arr)) or np.any(arr > maximum):
        raise InvalidInputError(field, value, f"a whole number from 1 to {maximum:.0f}")
    out = arr.astype(np.int64)
    return int(out) if out.ndim == 0 else out


def positive(field: str, value: ArrayLike) -> np.ndarray | float:
    """A positive, finite number (or an array of them)."""
    arr = finite(field, value)
    if np.any(arr <= 0):
        raise InvalidInputError(field, value, "a positive number")
    return float(arr) if arr.ndim == 0 else arr


def at_least(field: str, value: ArrayLike, minimum: float, allowed: str) -> np.ndarray | float:
    """A finite number of at least ``minimum`` (or an array of them); ``allowed`` says so in the user's words."""
    arr = finite(field, value)
    if np.any(arr < minimum):
        raise InvalidInputError(field, value, allowed)
    return float(arr) if arr.ndim == 0 else arr


def fraction(field: str, value: ArrayLike) -> np.ndarray | float:
    """A number in (0, 1]."""
    arr = finite(field, value)
    if np.any(arr <= 0) or np.any(arr > 1):
        raise InvalidInputError(field, value, "a fraction in (0, 1]")
    return float(arr) if arr.ndim == 0 else arr
