"""AIPerf's sweep export (``profile_export_aiperf_sweep.csv``): values, detection and bad files.

Expected numbers were read by hand from the fixture (values there are in ms, requests/s, tokens/s, s).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from calculators.errors import InvalidInputError
from calculators.profiles import detect_and_load, detect_format, load_many
from calculators.profiles.aiperf import load_sweep_csv

FIX = Path(__file__).parents[1] / "fixtures" / "profiles"
SWEEP = FIX / "aiperf-0.11-format_handmade_conc-sweep_3-trials_profile_export_aiperf_sweep.csv"


def rows() -> list[list[str]]:
    return list(csv.reader(io.StringIO(SWEEP.read_text(encoding="utf-8"))))


def edited(row: int, col: str, value: str) -> bytes:
    """The fixture with one cell replaced (``row`` is the 1-based row in the file)."""
    table = rows()
    table[row - 1][table[0].index(col)] = value
    out = io.StringIO()
    csv.writer(out).writerows(table)
    return out.getvalue().encode()


def load_bytes(data: bytes, name: str = "sweep.csv"):
    return detect_and_load(name, data)


# --- detection -------------------------------------------------------------------------------------------------------


def test_detected_by_content_not_name():
    assert detect_format(SWEEP.name, SWEEP.read_bytes()) == "aiperf-sweep-csv"
    assert detect_format("upload.bin", SWEEP.read_bytes()) == "aiperf-sweep-csv"


def test_generic_csv_with_mean_columns_stays_generic():
    data = b"concurrency,ttft_ms_mean,tpot_ms_mean,output_tokens_per_s\n4,30,8,400\n"
    assert detect_format("g.csv", data) == "generic-csv"


def test_per_run_aiperf_csv_is_not_a_sweep():
    data = b"Metric,avg,min,max,p99\nTime to First Token (ms),12.3,10.0,15.0,14.9\n\nMetric,Value\n"
    assert detect_format("p.csv", data) == "aiperf-csv"


# --- values ----------------------------------------------------------------------------------------------------------


def test_one_load_point_per_concurrency_in_order():
    p = detect_and_load(SWEEP.name, SWEEP.read_bytes())
    assert p.source_format == "aiperf-sweep-csv"
    assert p.source_files == (SWEEP.name,)
    assert [lp.concurrency for lp in p.load_points] == [1, 8, 32, 128]
    assert [lp.label for lp in p.load_points] == ["concurrency=1", "concurrency=8", "concurrency=32",
                                                  "concurrency=128"]
    assert p.model is None and any("mean over trials" in n for n in p.notes)


def test_concurrency_8_worked_by_hand():
    lp = detect_and_load(SWEEP.name, SWEEP.read_bytes()).load_points[1]
    # time_to_first_token_{avg,p50,p90,p99}_mean = 35.62, 33.90, 44.10, 61.25 ms
    assert lp.ttft_s.mean == pytest.approx(0.03562)
    assert lp.ttft_s.median == pytest.approx(0.0339)
    assert lp.ttft_s.p90 == pytest.approx(0.0441)
    assert lp.ttft_s.p99 == pytest.approx(0.06125)
    assert lp.ttft_s.p95 is None  # not in the file
    # inter_token_latency (excludes TTFT) is TPOT: 7.04 ms → 0.00704 s; p99 7.95 ms
    assert lp.tpot_s.mean == pytest.approx(0.00704)
    assert lp.tpot_s.p99 == pytest.approx(0.00795)
    # inter_chunk_latency is ITL: 7.00 ms
    assert lp.itl_s.mean == pytest.approx(0.007)
    # request_latency avg 1830.82 ms, p99 1905.33 ms
    assert lp.e2e_latency_s.mean == pytest.approx(1.83082)
    assert lp.e2e_latency_s.p99 == pytest.approx(1.90533)
    # not times: taken as written
    assert lp.request_throughput_per_s == pytest.approx(4.37)
    assert lp.output_tokens_per_s == pytest.approx(1118.62)
    assert lp.mean_input_tokens == 1024 and lp.mean_output_tokens == 256
    assert lp.duration_s == pytest.approx(91.53)  # benchmark_duration is in seconds already
    assert lp.completed_requests is None  # request_count's mean over trials need not be whole


def test_itl_12_3_ms_is_0_0123_s():
    lp = load_bytes(edited(2, "inter_token_latency_avg_mean", "12.3")).load_points[0]
    assert lp.tpot_s.mean == pytest.approx(0.0123)


def test_cv_may_be_infinite():
    assert load_bytes(edited(2, "request_throughput_avg_cv", "inf")).load_points[0].request_throughput_per_s == 0.63


def test_single_trial_bare_tags_and_request_rate_sweep():
    data = (b"request_rate,time_to_first_token_mean,time_to_first_token_std,time_to_first_token_min,"
            b"time_to_first_token_max,time_to_first_token_cv,request_throughput_mean\r\n"
            b"2.0,25.00,0.00,20.00,40.00,0.0000,1.98\r\ninf,900.50,0.00,30.00,2000.00,0.0000,31.20\r\n")
    p = load_bytes(data)
    assert [lp.request_rate_per_s for lp in p.load_points] == [2.0, float("inf")]
    assert p.load_points[0].ttft_s.mean == pytest.approx(0.025)
    assert p.load_points[1].request_throughput_per_s == pytest.approx(31.2)


def test_other_swept_parameters_go_into_the_label():
    data = b"concurrency,isl,request_throughput_avg_mean\n4,512,3.1\n4,2048,2.2\n"
    assert [lp.label for lp in load_bytes(data).load_points] == ["concurrency=4, isl=512", "concurrency=4, isl=2048"]


def test_combines_with_other_files_of_the_same_run():
    p = load_many([(SWEEP.name, SWEEP.read_bytes())])
    assert len(p.load_points) == 4


# --- bad files -------------------------------------------------------------------------------------------------------


def test_missing_load_column():
    table = [r[1:] for r in rows()]
    with pytest.raises(InvalidInputError, match="header.*concurrency or request_rate column"):
        load_sweep_csv("s.csv", table)
    out = io.StringIO()
    csv.writer(out).writerows(table)
    with pytest.raises(InvalidInputError, match="s.csv: format"):
        load_bytes(out.getvalue().encode(), "s.csv")


def test_missing_load_value():
    with pytest.raises(InvalidInputError, match="row 3 concurrency.*concurrency or request rate"):
        load_bytes(edited(3, "concurrency", ""))


@pytest.mark.parametrize("col", ["inter_token_latency_avg_mean", "inter_token_latency_avg_std", "concurrency"])
def test_negative_value_names_row_and_column(col):
    with pytest.raises(InvalidInputError, match=f"sweep.csv: row 3 {col}: got '-7.04'; a number ≥ 0"):
        load_bytes(edited(3, col, "-7.04"))


def test_non_numeric_value_names_row_and_column():
    with pytest.raises(InvalidInputError, match="row 4 time_to_first_token_p99_mean: got '12 ms'; a number"):
        load_bytes(edited(4, "time_to_first_token_p99_mean", "12 ms"))


@pytest.mark.parametrize("value", ["nan", "-inf"])
def test_nan_is_refused(value):
    with pytest.raises(InvalidInputError, match="row 2 request_latency_p99_mean"):
        load_bytes(edited(2, "request_latency_p99_mean", value))


def test_duplicate_metric_column():
    data = b"concurrency,request_throughput_mean,request_throughput_avg_mean\n1,2,2\n"
    with pytest.raises(InvalidInputError, match="each column once"):
        load_bytes(data)


def test_too_many_cells():
    data = b"concurrency,request_throughput_avg_mean\n1,2,3\n"
    with pytest.raises(InvalidInputError, match="row 2.*at most 2 cells"):
        load_bytes(data)


def test_header_only_is_an_empty_sweep():
    with pytest.raises(InvalidInputError, match="empty sweep"):
        load_bytes(b"concurrency,request_throughput_avg_mean\n")
