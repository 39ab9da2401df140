"""The product's one exception for invalid input.

A configuration that does not fit is a *result*, never an exception; this is only for input
that has no meaning (negative sizes, heads that do not divide, unknown ids, malformed files).
"""
from __future__ import annotations


class InvalidInputError(ValueError):
    """Input that the product cannot interpret.

    Parameters
    ----------
    field
        The name of the field as the user knows it (vLLM's argument name where one exists).
    value
        What was given.
    allowed
        What would have been accepted, in words.
    """

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"{field}: got {shown}; {allowed}")
