"""The last line of defence around a page: no traceback ever reaches a user.

An :class:`InvalidInputError` is the user's to fix and is shown as it is. Anything else is a defect:
the page shows a short error id and the server log holds the full traceback under the same id.
"""
from __future__ import annotations

import logging
import uuid

import streamlit as st

from calculators.errors import InvalidInputError

log = logging.getLogger("llmcap.app")


def run_page(page) -> None:
    """``page.run()``, with input errors shown and unexpected errors logged under an id."""
    try:
        page.run()
    except InvalidInputError as exc:
        st.error(str(exc))
    except Exception:  # st.stop()/st.rerun() raise BaseException subclasses and pass through untouched
        error_id = uuid.uuid4().hex[:8]
        log.exception(f"error id {error_id}")
        st.error(f"Something went wrong (error id {error_id}). The details are in the server log; "
                 "please quote the id when you report it.")
