"""House rules of the design card that a test can check."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_calculators_import_neither_streamlit_nor_plotly():
    for path in (ROOT / "calculators").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] in {"streamlit", "plotly"} for n in names), path


def test_no_legacy_pages_folder():
    assert not (ROOT / "app" / "pages").exists()


UNSAFE = re.compile(r"import pickle|from pickle|(?<![\w.])eval\(|yaml\.load\(|yaml\.unsafe_load|(?<![\w.])exec\(|"
                    r"import marshal|import shelve|torch\.load\(|pd\.read_pickle|np\.load\([^)]*allow_pickle=True")


def test_safe_loaders_only():
    """No eval/exec, pickle, marshal or yaml.load anywhere a user's file or URL could reach."""
    for folder in ("calculators", "app", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            assert not UNSAFE.search(path.read_text()), path


SESSION_KEY_LITERAL = re.compile(r"session_state(\[|\.get\(|\.setdefault\(|\.pop\()\s*f?[\"']_")


def test_session_state_keys_live_in_one_module():
    """The app's own (non-widget) session-state keys are names from app/ui/keys.py, not string literals."""
    for path in (ROOT / "app").rglob("*.py"):
        if path.name != "keys.py":
            assert not SESSION_KEY_LITERAL.search(path.read_text()), path
