"""The timing band: factors from residual quantiles, coverage judged leave-one-source-out (worked by hand)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from calculators.errors import InvalidInputError
from calculators.perf.bands import fit_band, load_bands, parse_band_file, timing_band

GOOD = """fitted = 2026-12-01
corpus = "test"
method = "test"
[tpot]
low_factor = 0.8
high_factor = 1.25
coverage = 0.8
n_rows = 10
n_sources = 3
[ttft]
low_factor = 0.5
high_factor = 2.0
coverage = 0.7
n_rows = 10
n_sources = 3
[throughput]
low_factor = 0.9
high_factor = 1.1
coverage = 0.9
n_rows = 10
n_sources = 3
"""


def test_fit_band_quantiles_and_leave_one_source_out_coverage():
    # Source a: ratios 1, 1, 1, 1 (log 0); source b: ratio e (log 1); source c: ratio e^-1 (log -1).
    log_ratio = pd.Series([0.0, 0.0, 0.0, 0.0, 1.0, -1.0])
    source = pd.Series(["a", "a", "a", "a", "b", "c"])
    e = fit_band(log_ratio, source)
    # pandas' linear quantile over [-1, 0, 0, 0, 0, 1]: q10 at position 0.5 -> -0.5; q90 at 4.5 -> 0.5.
    assert e.low_factor == pytest.approx(math.exp(-0.5))
    assert e.high_factor == pytest.approx(math.exp(0.5))
    # Leave a out: others [1, -1] -> [-0.8, 0.8]: a's four zeros inside (4/4).
    # Leave b out: others [0,0,0,0,-1] -> q10 -0.6, q90 0: b's 1.0 outside. Leave c out: [0,0,0,0,1] ->
    # q10 0, q90 0.6: c's -1 outside. Coverage 4 / 6.
    assert e.coverage == pytest.approx(4 / 6)
    assert (e.n_rows, e.n_sources) == (6, 3)


def test_fit_band_needs_two_sources():
    with pytest.raises(InvalidInputError, match="at least two sources"):
        fit_band(pd.Series([0.1, 0.2]), pd.Series(["a", "a"]))


def test_band_edges_and_pessimistic_edge():
    f = parse_band_file(GOOD)
    assert f.tpot.high_factor == 1.25
    band = timing_band("tpot")
    lo, hi = band.edges(np.array([0.040]))
    assert lo[0] == pytest.approx(0.040 * band.low_factor) and hi[0] == pytest.approx(0.040 * band.high_factor)
    assert band.pessimistic_factor == band.high_factor
    assert timing_band("throughput").pessimistic_factor == timing_band("throughput").low_factor


def test_range_text_reads_as_a_range():
    # the "80 % band" words around it are the page's caption (tests/app/test_app_views.py)
    band = timing_band("tpot")
    text = band.range_text(0.038, 1e3, "ms")
    lo, hi = 38 * band.low_factor, 38 * band.high_factor
    assert text == f"{lo:,.0f}–{hi:,.0f} ms"


def test_shipped_file_is_valid_and_ordered():
    f = load_bands()
    for m in ("tpot", "ttft", "throughput"):
        e = getattr(f, m)
        assert 0 < e.low_factor <= e.high_factor and 0 <= e.coverage <= 1 and e.n_sources >= 2


@pytest.mark.parametrize("bad, field", [
    (GOOD.replace("low_factor = 0.8", "low_factor = -1"), "low_factor"),
    (GOOD.replace("coverage = 0.8", "coverage = 1.5"), "coverage"),
    (GOOD.replace("low_factor = 0.8", "low_factor = 2"), "above high_factor"),
    (GOOD.replace("fitted = 2026-12-01\n", ""), "fitted"),
])
def test_bad_band_file_names_the_field(bad, field):
    with pytest.raises(InvalidInputError, match=field):
        parse_band_file(bad)


def test_unknown_metric_is_refused():
    with pytest.raises(InvalidInputError, match="tpot, ttft, throughput"):
        timing_band("latency")


def test_band_is_widened_to_hold_the_estimate():
    # every residual above 0 (measured always slower than predicted): q10 = 0.2 > 0, so the low edge is 0
    log_ratio = pd.Series([0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    e = fit_band(log_ratio, pd.Series(["a", "a", "b", "b", "c", "c"]))
    assert e.low_factor == 1.0  # the estimate itself
    assert e.high_factor == pytest.approx(math.exp(0.65))  # linear q90 of [0.2 … 0.7] at position 4.5
