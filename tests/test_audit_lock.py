"""scripts/audit_lock.py without the network: which lines are pins, and how a record is judged."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("audit_lock", ROOT / "scripts" / "audit_lock.py")
audit_lock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(audit_lock)


def test_pins_reads_name_and_version_and_skips_the_rest(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("# a comment\n--extra-index-url x\nnumpy==2.4.6\nstreamlit == 1.67.0  # why\n"
                    "tomli==2.2.1 ; python_version < '3.11'\n\n"
                    "zipp==3.1.0 \\\n    --hash=sha256:0a1b\n")
    assert audit_lock.pins(lock) == [("numpy", "2.4.6"), ("streamlit", "1.67.0"), ("tomli", "2.2.1"),
                                       ("zipp", "3.1.0")]


def test_the_project_lock_pins_every_line():
    pins = audit_lock.pins(ROOT / "requirements.lock")
    assert len(pins) >= 40 and ("streamlit", "1.67.0") in pins


def test_an_advisory_on_the_pinned_newest_release_fails_and_an_older_pin_is_not_audited(tmp_path, monkeypatch,
                                                                                         capsys):
    records = {"a": {"info": {"version": "1.0"}, "vulnerabilities": [
                   {"id": "PYSEC-1", "aliases": ["CVE-1"], "fixed_in": ["1.1"]}]},
               "b": {"info": {"version": "3.0"}, "vulnerabilities": []}}
    monkeypatch.setattr(audit_lock, "project_record", lambda name: records[name])
    lock = tmp_path / "requirements.lock"
    lock.write_text("a==1.0\nb==2.0\n")
    monkeypatch.setattr("sys.argv", ["audit_lock.py", str(lock)])
    assert audit_lock.main() == 1
    out = capsys.readouterr().out
    assert "1 of 2 pinned packages audited, 1 advisories apply" in out
    assert "PYSEC-1 CVE-1 fixed in 1.1" in out and "b==2.0: not audited (newest release is 3.0)" in out
