"""Hostile files (issue 8) through every loader they could reach: an InvalidInputError (for a pasted log:
a clear result or an InvalidInputError), within 2 s and bounded memory, and nothing else.

The small files live in tests/fixtures/hostile/ (regenerate with ``python scripts/make_hostile.py``);
files just over the size limits are generated here in tmp_path.
"""
from __future__ import annotations

import importlib.util
import time
import tracemalloc
from pathlib import Path

import pytest

from calculators.errors import InvalidInputError

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = Path(__file__).parent / "fixtures" / "hostile"
_spec = importlib.util.spec_from_file_location("make_hostile", ROOT / "scripts" / "make_hostile.py")
make_hostile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_hostile)

import calculators.perf.calibration  # noqa: E402,F401  - imported up front: the timings measure reading, not imports
import calculators.profiles  # noqa: E402,F401
import calculators.sim.workload  # noqa: E402,F401
import calculators.specs.hf_config  # noqa: E402,F401
import calculators.vllm.startup_log  # noqa: E402,F401

SECONDS = 2.0
MEMORY_BYTES = 200 * 2**20


def _config_file(path: Path, data: bytes):
    from calculators.specs.hf_config import load_config_file
    return load_config_file(path)


def _config_text(path: Path, data: bytes):
    from calculators.specs.hf_config import model_from_json_text
    return model_from_json_text(data)


def _profile(path: Path, data: bytes):
    from calculators.profiles import detect_and_load
    return detect_and_load(path.name, data)


def _profile_many(path: Path, data: bytes):
    from calculators.profiles import load_many
    return load_many([(path.name, data)])


def _calibration(path: Path, data: bytes):
    from calculators.perf.calibration import Calibration
    return Calibration.from_json(data)


def _trace(path: Path, data: bytes):
    from calculators.sim.workload import read_trace
    return read_trace(path)


def _log(path: Path, data: bytes):
    from calculators.vllm.startup_log import parse_vllm_log
    return parse_vllm_log(data.decode("utf-8", errors="replace"))  # what a text area would hold


STRICT_LOADERS = {"config_file": _config_file, "config_text": _config_text, "profile": _profile,
                  "profile_many": _profile_many, "calibration": _calibration, "trace": _trace}


def _measure(fn, path: Path, data: bytes):
    tracemalloc.start()
    t = time.perf_counter()
    try:
        try:
            result = fn(path, data)
        except InvalidInputError as exc:
            result = exc
        elapsed = time.perf_counter() - t
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, elapsed, peak


def _check(fn, path: Path, *, strict: bool = True):
    data = path.read_bytes()
    result, elapsed, peak = _measure(fn, path, data)  # any other exception fails the test here
    assert elapsed < SECONDS, f"{path.name}: {elapsed:.2f} s"
    assert peak < MEMORY_BYTES + 4 * len(data), f"{path.name}: peak {peak / 2**20:.0f} MiB"
    if strict:
        assert isinstance(result, InvalidInputError), f"{fn.__name__}({path.name}) accepted it: {result!r}"[:300]
        assert result.field
    return result


HOSTILE_FILES = sorted(p.name for p in HOSTILE.iterdir()) if HOSTILE.is_dir() else []


def test_fixtures_are_current_and_small():
    expected = make_hostile.files()
    assert sorted(expected) == HOSTILE_FILES, "run python scripts/make_hostile.py"
    for name, data in expected.items():
        assert (HOSTILE / name).read_bytes() == data, name
        assert len(data) < 64 * 1024, name


@pytest.mark.parametrize("loader", sorted(STRICT_LOADERS))
@pytest.mark.parametrize("name", HOSTILE_FILES)
def test_hostile_file_is_an_input_error(name, loader):
    _check(STRICT_LOADERS[loader], HOSTILE / name)


@pytest.mark.parametrize("name", HOSTILE_FILES)
def test_hostile_file_as_pasted_log(name):
    from calculators.vllm.startup_log import VllmLog
    result = _check(_log, HOSTILE / name, strict=False)
    assert isinstance(result, InvalidInputError | VllmLog)


def test_mixed_version_log_is_a_clear_result():
    from calculators.vllm.startup_log import scenario_updates
    log = _check(_log, HOSTILE / "mixed_versions.log", strict=False)
    assert log.version == "0.6.3"  # the first version printed wins, and the result says there were several
    assert "several versions: 0.6.3, 0.10.1" in log.version_range
    assert all(t >= 0 for t in log.kv_cache_tokens)  # "GPU KV cache size: -5 tokens" is not a vLLM line
    assert log.kv_cache_tokens == (420208,)
    assert log.settings["tensor_parallel_size"] == 1  # the args line's TP of -4 is ignored, not carried on
    scenario_updates(log)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return make_hostile.big_files(tmp_path_factory.mktemp("big"))


@pytest.mark.parametrize("name", ["over_config_limit.json", "over_profile_limit.json", "over_upload_limit.json"])
@pytest.mark.parametrize("loader", sorted(STRICT_LOADERS))
def test_file_over_a_limit(big, name, loader):
    from calculators.profiles import MAX_PROFILE_BYTES
    from calculators.specs.hf_config import MAX_CONFIG_BYTES
    path = big[name]
    assert path.stat().st_size > min(MAX_CONFIG_BYTES, MAX_PROFILE_BYTES)
    _check(STRICT_LOADERS[loader], path)


def test_upload_limit_is_small():
    assert make_hostile.upload_limit_bytes() <= 50 * 2**20


def test_cli_reads_hostile_files_with_one_line(capsys):
    from calculators.cli.main import main
    for name in HOSTILE_FILES:
        path = str(HOSTILE / name)
        for argv in (["profile", "import", path], ["capacity", "--model", path, "--gpu", "H100"]):
            if argv[0] == "capacity" and not name.endswith(".json"):
                continue
            assert main(argv) == 2, argv
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and err[0].startswith("llmcap: error:"), (argv, err)
