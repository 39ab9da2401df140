"""Measured benchmark runs: importers (vLLM, GuideLLM, AIPerf/GenAI-Perf, LLMPerf, generic) and analysis.

Public API::

    detect_and_load(name: str, data: bytes) -> Profile      # one file, format recognised from its content
    detect_format(name: str, data: bytes) -> str             # one of FORMATS
    combine(profiles: Iterable[Profile]) -> Profile          # several files of one sweep → one profile
    load_many(files: Mapping[str, bytes]) -> Profile         # detect + combine (+ nightly *.commands sidecars)
    Profile, LoadPoint, Stats                                # frozen pydantic models, SI units (s, tokens)
    MAX_PROFILE_BYTES                                        # size limit per file

See ``model.py`` for the normalised metric definitions and each format module for its conversions.
"""
from calculators.profiles._common import MAX_PROFILE_BYTES
from calculators.profiles.detect import FORMATS, combine, detect_and_load, detect_format, load_many
from calculators.profiles.model import LoadPoint, Profile, Stats, build_profile, sort_points

__all__ = [
    "FORMATS",
    "MAX_PROFILE_BYTES",
    "LoadPoint",
    "Profile",
    "Stats",
    "build_profile",
    "combine",
    "detect_and_load",
    "detect_format",
    "load_many",
    "sort_points",
]
