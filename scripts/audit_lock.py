"""Check the pinned versions of the lock files against the advisories PyPI publishes.

    .venv/bin/python scripts/audit_lock.py [LOCK ...]     # default: requirements.lock and requirements-dev.lock

A fallback for ``pip-audit`` where only PyPI's per-project JSON is reachable (pip-audit asks for the
per-version record, and skips a package when that lookup fails). The per-project record carries the
advisories (PYSEC/GHSA/CVE ids, with the versions that fix them) of the project's newest release only,
so a pin equal to the newest release is audited and any other pin is reported as *not audited*. The
index is pip's own default (no host is configured here). Exit status: 1 when an advisory applies to a
pin, 2 when a lookup failed or a pin could not be audited, 0 otherwise.
"""
from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

from pip._internal.models.index import PyPI  # pip's default index; pip is in every venv


def pins(lock: Path) -> list[tuple[str, str]]:
    """(name, version) of every ``name==version`` line (comments and options skipped)."""
    out = []
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line and not line.startswith("-"):
            name, version = line.split("==", 1)
            out.append((name.strip(), version.split(";")[0].rstrip("\\ ").strip()))  # "x==1.0 \\" + hashes
    return out


def project_record(name: str) -> dict:
    with urllib.request.urlopen(f"{PyPI.pypi_url}/{name}/json", timeout=30) as r:
        return json.load(r)


def main() -> int:
    root = Path(__file__).resolve().parents[1]
    locks = [Path(a) for a in sys.argv[1:]] or [root / "requirements.lock", root / "requirements-dev.lock"]
    found, skipped, audited = [], [], 0
    for name, version in sorted({p for lock in locks for p in pins(lock)}):
        try:
            rec = project_record(name)
        except OSError as exc:
            skipped.append(f"{name}=={version}: lookup failed ({exc})")
            continue
        newest = rec["info"]["version"]
        if newest != version:
            skipped.append(f"{name}=={version}: not audited (newest release is {newest})")
            continue
        audited += 1
        for v in rec.get("vulnerabilities") or []:
            found.append(f"{name}=={version}: {v['id']} {'/'.join(v.get('aliases') or [])} "
                         f"fixed in {', '.join(v.get('fixed_in') or []) or 'no release'}")
    print(f"{audited} of {audited + len(skipped)} pinned packages audited, {len(found)} advisories apply")
    for line in found + skipped:
        print(f"  {line}")
    return 1 if found else 2 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
