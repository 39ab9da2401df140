"""``llmcap app``: start the web app from wherever the package is installed (``streamlit run`` underneath)."""
from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.resources import files


def cmd_app(a: argparse.Namespace) -> int:
    """Run ``streamlit run <installed app>/streamlit_app.py`` with any extra Streamlit flags.

    It runs in the app's folder, so Streamlit reads the product's ``.streamlit/config.toml`` shipped there
    (headless, XSRF protection, 5 MB uploads, no usage statistics).
    """
    folder = files("app")
    return subprocess.call([sys.executable, "-m", "streamlit", "run", str(folder.joinpath("streamlit_app.py")),
                            *a.streamlit_args], cwd=str(folder))


def register(sub) -> None:
    """Add ``app`` to the main parser's sub-parsers."""
    p = sub.add_parser("app", help="start the web app (extra flags go to streamlit, e.g. --server.port 8600)")
    p.add_argument("streamlit_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_app)
