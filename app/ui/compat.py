"""Work-arounds for the Streamlit release we pin, each with the reason and how to know it can go.

Streamlit 1.67: an *integer* ``number_input`` bound to the URL (``bind="query-params"``) seeds
itself from ``?tp=inf`` by calling ``int(inf)`` in ``NumberInputSerde.deserialize``, which raises
``OverflowError`` before any app code runs (float inputs already fall back to their default).
The guard below gives integer inputs the same fallback. Remove it when
``tests/app/test_isolation.py::test_non_finite_numbers_in_the_url_are_warnings`` passes without it.
"""
from __future__ import annotations

import math


def guard_integer_inputs_from_non_finite_urls() -> None:
    """Make non-finite URL values fall back to the widget's default instead of raising."""
    try:
        from streamlit.elements.widgets.number_input import NumberInputSerde
    except ImportError:  # a Streamlit without this class has a different code path: nothing to guard
        return
    if getattr(NumberInputSerde.deserialize, "_llmcap_guarded", False):
        return
    original = NumberInputSerde.deserialize

    def deserialize(self, ui_value):  # noqa: ANN001, ANN202 (Streamlit's own signature)
        if isinstance(ui_value, float) and not math.isfinite(ui_value):
            ui_value = None
        return original(self, ui_value)

    deserialize._llmcap_guarded = True
    NumberInputSerde.deserialize = deserialize
