"""``streamlit run`` that times the server's share of every input change (used by ``benchmarks/load.py``).

    LLMCAP_SERVER_TIMING=/tmp/t.txt python benchmarks/timed_server.py run app/streamlit_app.py ...

For each rerun a browser asks for, it appends ``<unix time> <seconds>`` to the file: the wall time from
the request reaching the server to the script finishing (queueing behind other sessions included;
coalesced requests count from the first). The browser's own rendering is not in it.
"""
from __future__ import annotations

import os
import sys
import threading
import time

from streamlit.runtime import app_session
from streamlit.runtime.scriptrunner import ScriptRunnerEvent
from streamlit.web import cli

OUT = os.environ["LLMCAP_SERVER_TIMING"]
_LOCK = threading.Lock()
_real_request = app_session.AppSession.request_rerun
_real_event = app_session.AppSession._on_scriptrunner_event


def _request_rerun(self: app_session.AppSession, client_state: object | None) -> None:
    if client_state is not None:
        self.__dict__.setdefault("_timing_starts", []).append(time.perf_counter())
    return _real_request(self, client_state)


def _on_event(self: app_session.AppSession, sender: object, event: ScriptRunnerEvent, *args: object,
              **kwargs: object) -> None:
    starts = self.__dict__.get("_timing_starts")
    if event == ScriptRunnerEvent.SCRIPT_STOPPED_WITH_SUCCESS and starts:
        took = time.perf_counter() - starts[0]
        starts.clear()
        with _LOCK, open(OUT, "a") as f:
            f.write(f"{time.time():.3f} {took:.6f}\n")
    return _real_event(self, sender, event, *args, **kwargs)


app_session.AppSession.request_rerun = _request_rerun
app_session.AppSession._on_scriptrunner_event = _on_event

if __name__ == "__main__":
    sys.argv = ["streamlit", *sys.argv[1:]]
    sys.exit(cli.main())
