"""Shared test helpers: fixture paths and the catalog."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# No test reaches the real Hugging Face Hub: unknown ids meet a closed local port, offline. The Hub's own
# tests (tests/specs/test_hf_hub.py) serve a local Hub and set these per test. Subprocesses inherit them.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_ENDPOINT"] = "http://127.0.0.1:9"

FIXTURES = Path(__file__).parent / "fixtures"
HF_CONFIGS = FIXTURES / "hf_configs"


def hf(name: str):
    """Import a fixture config.json by its file stem (``meta-llama__Llama-3.1-70B``)."""
    from calculators.specs.hf_config import load_config_file
    return load_config_file(HF_CONFIGS / f"{name}.json")


@pytest.fixture(scope="session")
def vllm_cases() -> dict[str, dict]:
    cases = json.loads((FIXTURES / "vllm_logs" / "cases.json").read_text())
    return {c["case_id"]: c for c in cases}


# Browser fixtures, defined once for the whole run (one live server and one browser per worker).
from tests.e2e.helpers import browser, page, server_url  # noqa: E402, F401
