"""benchmarks/fit_performance.py: the parameter space maps a fit file's profile to θ and back, so a fit can start
from a fit file (``--start``) or take one as its fit on every source (``--shipped-from``)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.fit_performance import ENGINES, Space  # noqa: E402
from calculators.perf.coefficients import load_fit  # noqa: E402


def test_theta_of_a_profile_gives_the_profile_back():
    shipped = load_fit().shipped
    space = Space(sorted(shipped.family))
    again = space.profile(space.theta(shipped))
    for key, value in shipped.reference.model_dump().items():
        assert getattr(again.reference, key) == pytest.approx(value, rel=1e-9)
    for family, entry in shipped.family.items():
        assert again.family[family].model_dump() == pytest.approx(entry.model_dump(), rel=1e-9)
    assert {e: again.engine[e].overhead_factor for e in ENGINES} == pytest.approx(
        {e: shipped.engine[e].overhead_factor for e in ENGINES}, rel=1e-9)


def test_family_offsets_are_logits_from_the_reference():
    # Reference memory 0.8 and a family at 0.9: the family's θ is logit(0.9) − logit(0.8) = 2.1972 − 1.3863 = 0.8109;
    # a GPU-side cost factor of 2 is ln 2 = 0.6931.
    shipped = load_fit().shipped
    ref = shipped.reference.model_copy(update={"memory": 0.8})
    fam = {"X": shipped.family["NVIDIA Hopper"].model_copy(update={"memory": 0.9, "overhead_factor": 2.0})}
    space = Space(["X"])
    theta = space.theta(shipped.model_copy(update={"reference": ref, "family": fam}))
    names = dict(zip(space.names, theta, strict=True))
    assert names["family:X"] == pytest.approx(math.log(9) - math.log(4), rel=1e-12)
    assert names["overhead:X"] == pytest.approx(math.log(2), rel=1e-12)


def test_family_refits_replace_those_in_the_fit_file():
    # benchmarks/family_holdout.py --write: the file keeps its head and held-out sources and gets exactly the
    # given family refits, replacing the ones it had; the result is a valid fit file
    from benchmarks.family_holdout import with_family_refits
    from calculators.perf.coefficients import FIT_FILE, parse_fit_file
    text = (Path(__file__).resolve().parents[1] / "calculators" / "data" / FIT_FILE).read_text(encoding="utf-8")
    fit = parse_fit_file(text)
    ada = fit.without_family("NVIDIA Ada")
    again = parse_fit_file(with_family_refits(text, {"NVIDIA Ada": ada}))
    assert [h.family for h in again.held_out_family] == ["NVIDIA Ada"]
    assert again.without_family("NVIDIA Ada") == ada and again.held_out == fit.held_out
    assert again.shipped == fit.shipped
