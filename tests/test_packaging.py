"""A non-editable install works from any folder: the wheel carries the catalog, the CLI and the app."""
from __future__ import annotations

import fcntl
import json
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel built from this tree (its dependencies come from ours)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # setuptools builds in the tree's own build/ folder: two xdist workers building at once collide there
    with open(tmp_path_factory.getbasetemp().parent / "wheel-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                        str(tmp / "dist"), str(ROOT)], check=True, capture_output=True, timeout=300)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    wheel = next((tmp / "dist").glob("llmcap-*.whl"))
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True, timeout=300,
                   capture_output=True)
    # numpy, streamlit, … from this environment; a plain path entry, so our editable install's hook is not read
    purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return venv


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_llmcap_capacity_from_another_folder(installed, tmp_path):
    p = _run(installed, "llmcap", "capacity", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100",
             "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    # 2 × 32 layers × 8 KV heads × 128 × 2 B = 131,072 B per token (bf16, TP 1)
    assert doc["kv_cache_bytes_per_token"] == 131_072 and doc["fits"]


def test_the_installed_package_is_the_one_used(installed, tmp_path):
    p = _run(installed, "python", "-c", "import calculators, app; print(calculators.__file__, app.__file__)",
             cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert all(str(installed) in path for path in p.stdout.split()), p.stdout


def test_the_installed_app_renders(installed, tmp_path):
    script = textwrap.dedent("""
        from importlib.resources import files
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file(str(files("app") / "streamlit_app.py"), default_timeout=60).run()
        assert not at.exception, at.exception
        print(at.title[0].value)
        at.switch_page("views/overview.py").run()  # the page files ship beside the entry point
        assert not at.exception and not at.error, at.exception
        print(at.title[0].value, len(at.metric))
        assert (files("app") / ".streamlit" / "config.toml").is_file()
    """)
    p = _run(installed, "python", "-c", script, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    start, overview = p.stdout.splitlines()[:2]
    assert start == "LLM serving capacity planner" and overview.startswith("Overview")
