"""benchmarks/server_load.py still speaks Streamlit's websocket protocol: two sessions for a few seconds,
each change re-running the app (the benchmark's figures are only worth something while this passes)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_two_protocol_sessions_change_inputs_without_errors():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "server_load.py"), "--sessions", "2",
                          "--duration-s", "3", "--think-s", "0.2"], capture_output=True, text=True, timeout=180,
                         cwd=ROOT).stdout
    assert "errors      : 0" in out, out
    changes = int(re.search(r"input change: (\d+) changes", out).group(1))
    assert changes >= 2, out
