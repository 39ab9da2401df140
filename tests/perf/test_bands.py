"""The timing band: source-weighted residual quantiles, calibrated until their leave-one-source-out coverage
reaches 80 % (worked by hand)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from calculators.errors import InvalidInputError
from calculators.perf.bands import (
    fit_band,
    held_out_coverage,
    load_bands,
    parse_band_file,
    seen_family,
    source_weights,
    timing_band,
    weighted_quantile,
)
from calculators.specs.catalog import get_gpu

GOOD = """fitted = 2026-12-01
corpus = "test"
method = "test"
[tpot]
low_factor = 0.8
high_factor = 1.25
tail = 0.1
coverage = 0.8
row_coverage = 0.8
n_rows = 10
n_sources = 3
[ttft]
low_factor = 0.5
high_factor = 2.0
tail = 0.05
coverage = 0.7
row_coverage = 0.6
n_rows = 10
n_sources = 3
[throughput]
low_factor = 0.9
high_factor = 1.1
tail = 0.1
coverage = 0.9
row_coverage = 0.9
n_rows = 10
n_sources = 3
[unseen_family.tpot]
low_factor = 0.5
high_factor = 2.0
tail = 0.05
coverage = 0.8
row_coverage = 0.8
n_rows = 10
n_sources = 3
[unseen_family.ttft]
low_factor = 0.4
high_factor = 2.5
tail = 0.05
coverage = 0.8
row_coverage = 0.8
n_rows = 10
n_sources = 3
[unseen_family.throughput]
low_factor = 0.3
high_factor = 1.5
tail = 0.05
coverage = 0.8
row_coverage = 0.8
n_rows = 10
n_sources = 3
"""


def test_weighted_quantile_by_hand():
    # equal weights: Hazen's midpoints (i - 1/2)/n = 0.125, 0.375, 0.625, 0.875 for 0, 1, 2, 3
    assert weighted_quantile([3, 0, 2, 1], [1, 1, 1, 1], 0.5) == pytest.approx(1.5)
    assert weighted_quantile([0, 1, 2, 3], [1, 1, 1, 1], 0.25) == pytest.approx(0.5)
    assert weighted_quantile([0, 1, 2, 3], [1, 1, 1, 1], 0.05) == 0.0  # held flat beyond the first midpoint
    # weights 3:1: midpoints 0.375 and 0.875, so the median lies a quarter of the way from 0 to 1
    assert weighted_quantile([0, 1], [3, 1], 0.5) == pytest.approx(0.25)


def test_every_source_counts_once():
    assert list(source_weights(["a", "a", "a", "a", "b"])) == [0.25, 0.25, 0.25, 0.25, 1.0]


def test_every_family_counts_once_and_its_sources_alike():
    # family A: source s with 2 rows, t with 1 → s's rows 1/2 × 1/2, t's row 1/2; family B's one row 1
    assert list(source_weights(["A", "B", "A", "A"], ["s", "u", "t", "s"])) == [0.25, 1.0, 0.5, 0.25]


def test_fit_band_holds_out_groups_with_sources_weighted_within():
    # Family A: source s (ten rows at 0.1) and source t (one row at 0.5); families B (±0.2), C (±0.3).
    # Weighted within A, t's one row counts as much as s's ten: A's residuals weigh 0.1 and 0.5 half each.
    lr = pd.Series([0.1] * 10 + [0.5, 0.2, -0.2, 0.3, -0.3])
    family = pd.Series(["A"] * 11 + ["B", "B", "C", "C"])
    source = pd.Series(["s"] * 10 + ["t", "u", "u", "v", "v"])
    e = fit_band(lr, family, within=source)
    # At tail 10 %: A held out, B and C's four values weigh alike (midpoints 1/8 … 7/8), edges held flat at
    # ±0.3: s's ten rows inside, t's 0.5 outside (10 of 11). B held out: A and C give -0.3 at midpoint 1/8 and
    # 0.5 at 7/8, so edges -0.3 and 0.5: both inside. C held out: A and B give edges -0.2 and 0.5: -0.3 outside,
    # 0.3 inside (1/2). Mean over families (10/11 + 1 + 1/2) / 3 = 0.803: the 80 % target at the first tail.
    assert e.tail == 0.10 and e.coverage == pytest.approx((10 / 11 + 1 + 0.5) / 3)
    assert (e.n_rows, e.n_sources) == (15, 4)


def test_a_gpu_of_a_family_without_runs_takes_the_unseen_family_band():
    f = load_bands()
    t4, h100 = timing_band("tpot", get_gpu("T4")), timing_band("tpot", get_gpu("H100"))
    assert (t4.low_factor, t4.high_factor) == (f.unseen_family.tpot.low_factor, f.unseen_family.tpot.high_factor)
    assert (h100.low_factor, h100.high_factor) == (f.tpot.low_factor, f.tpot.high_factor)
    assert t4.held_out == "family" and "GPU family" in t4.held_out_text
    assert h100.held_out == "source" and "public source" in h100.held_out_text
    assert not seen_family(get_gpu("T4")) and seen_family(get_gpu("H100"))


def _pairs(halves: dict[str, float]) -> tuple[pd.Series, pd.Series]:
    """Two rows per source, residuals ±x."""
    return (pd.Series([v for x in halves.values() for v in (x, -x)]),
            pd.Series([k for k in halves for _ in (0, 1)]))


def test_fit_band_widens_until_held_out_sources_are_covered():
    # Five sources of two rows each, residuals ±0.1, ±0.2, ±0.3, ±0.4 and ±0.38. Leave one out: eight values
    # at midpoints 1/16, 3/16, … 15/16, so q90 lies 0.7 of the way from the third largest to the largest but
    # one, and q95 (past 15/16) is the largest.
    lr, src = _pairs({"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "e": 0.38})
    # tail 10 %: d out (others' q90 = 0.3 + 0.7 × 0.08 = 0.356 < 0.4), e out (0.3 + 0.7 × 0.1 = 0.37 < 0.38)
    assert [share for _, share in held_out_coverage(lr, src, 0.10).values()] == [1, 1, 1, 0, 0]
    # tail 5 %: e in (others' largest 0.4), d still out (0.38): 4 of 5 sources, the 80 % target
    assert [share for _, share in held_out_coverage(lr, src, 0.05).values()] == [1, 1, 1, 0, 1]
    e = fit_band(lr, src)
    assert e.tail == 0.05 and e.coverage == pytest.approx(0.8) and e.row_coverage == pytest.approx(0.8)
    # all ten values: midpoints 0.05 … 0.95, so q5 and q95 are the extremes ±0.4
    assert (e.low_factor, e.high_factor) == pytest.approx((math.exp(-0.4), math.exp(0.4)))
    assert (e.n_rows, e.n_sources) == (10, 5)


def test_fit_band_says_when_no_tail_covers_enough():
    # ±0.1, ±0.2, ±0.3 and an outlier ±1: no band fitted without the outlier holds it (the others' edges
    # never pass ±0.3), so every tail level leaves coverage at 3 of 4 sources and the widest is kept
    lr, src = _pairs({"a": 0.1, "b": 0.2, "c": 0.3, "d": 1.0})
    e = fit_band(lr, src)
    assert e.tail == 0.01 and e.coverage == pytest.approx(0.75)
    assert (e.low_factor, e.high_factor) == pytest.approx((math.exp(-1.0), math.exp(1.0)))


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
        for e in (getattr(f, m), getattr(f.unseen_family, m)):
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
    # every residual above 0 (measured always slower than predicted): the low edge is the estimate itself
    log_ratio = pd.Series([0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    e = fit_band(log_ratio, pd.Series(["a", "a", "b", "b", "c", "c"]))
    assert e.low_factor == 1.0
    # left out, c's 0.6 and 0.7 lie above the others' largest (0.5): coverage stays at 2 of 3 sources, so the
    # widest tail is kept, whose high edge is the largest residual
    assert e.tail == 0.01 and e.coverage == pytest.approx(2 / 3) and e.high_factor == pytest.approx(math.exp(0.7))
