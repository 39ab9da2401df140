"""Release parsing and the per-release rules of calculators/vllm/versions.py."""
from __future__ import annotations

import pytest

from calculators.errors import InvalidInputError
from calculators.vllm.versions import parse_vllm_version


@pytest.mark.parametrize(("text", "release", "engine"), [
    ("0.5.5", (0, 5, 5), "V0"),  # the oldest release whose accounting was read (docs/vllm-memory.md §2.7)
    ("v0.9.2rc1", (0, 9, 2), "V1"),
    ("0.11.0+cu128", (0, 11, 0), "V1"),
    ("0.10", (0, 10, 0), "V1"),
])
def test_releases_parse_with_their_default_engine(text, release, engine):
    v = parse_vllm_version(text)
    assert (v.release, v.engine) == (release, engine)


@pytest.mark.parametrize("text", ["0.5.4", "0.4.3", "1.0.0", "latest", ""])
def test_releases_outside_the_read_range_are_refused_by_name(text):
    with pytest.raises(InvalidInputError) as exc:
        parse_vllm_version(text)
    assert exc.value.field == "vllm_version"
