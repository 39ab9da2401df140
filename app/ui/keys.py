"""Every session-state key the app keeps besides its widgets' own keys, in one place.

Widgets keep their values under the ``key=`` they are given where they are drawn; these are the other
things a session remembers between reruns. Names say what is stored.
"""
from __future__ import annotations

# the scenario (sidebar) and what was computed from it
COMPUTED = "_computed"                    # state.Computed of this rerun, read by every view
URL_MESSAGES = "_url_messages"            # messages about the link, read once per session
OPENED_WITH_SCENARIO = "_opened_with_scenario"  # the session's first URL held a scenario (a shared link)
MODEL_ALIASES = "_model_aliases"          # model names from links, kept as the user typed them
CUSTOM_GPUS = "custom_gpus"               # id -> GPUSpec
CUSTOM_MODELS = "custom_models"           # id -> (ModelSpec, config dict)
CALIBRATION = "calibration"               # the calibration in force (perf.Calibration) or None
CALIBRATION_PARAM = "_calibration_param"  # its compact form, which the permalink carries
MODEL_PICKER_MESSAGE = "_model_picker_msg"  # (kind, text) of the last add-a-model attempt, shown once

# Measured profiles page
PROFILE = "measured_profile"              # the imported Profile
CANDIDATE = "prof_calibration"            # a fitted calibration not yet applied
PROFILE_SIGNATURE = "_prof_sig"           # what the uploaded files were, to read them once
PROFILE_ERROR = "_prof_error"
PROFILE_FROM = "_prof_from"               # which page inputs the profile filled in
PROFILE_DEFAULTS_FOR = "_prof_defaults_for"
CALIBRATION_ERROR = "_prof_cal_error"

# Batching simulator page
SIM_RESULTS = "sim_results"
SIM_TRACE = "sim_trace"                   # the uploaded trace: name, bytes, sha1
SIM_TRACE_PARSED = "_sim_trace_parsed"
SIM_UPLOAD_N = "_sim_upload_n"            # bumped to give a fresh, empty uploader
SIM_SEED_RESULT = "sim_seed_result"       # continuous vs static
SIM_SWEEP_RESULT = "sim_sweep_result"

# per-session memos of heavy results (app.ui.memo): one key per memo name
MEMO_PREFIX = "_memo_"

# Fleet planner: its own inputs and the chosen layout, bound to the URL (widget key = URL parameter)
FLEET_GPUS = "fleet_gpus"
FLEET_CAP = "fleet_cap"
FLEET_N_PLUS_ONE = "fleet_n1"
FLEET_PRICE = "fleet_price"
FLEET_CONSERVATIVE = "fleet_conservative"
FLEET_LAYOUT = "fleet_layout"
#: URL parameters a page reads itself (the scenario reader leaves them alone).
PAGE_URL_KEYS = (FLEET_GPUS, FLEET_CAP, FLEET_N_PLUS_ONE, FLEET_PRICE, FLEET_CONSERVATIVE, FLEET_LAYOUT)
