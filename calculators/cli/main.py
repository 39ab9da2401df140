"""``llmcap``: the command-line face of the calculators. Bad input exits 2 with one clear line.

One module per command (``accuracy``, ``app``, ``capacity``, ``catalog``, ``perf``, ``plan``, ``profile``,
``simulate``), each with a ``register(sub)`` that adds its sub-parser; the flags they share live in
:mod:`calculators.cli.flags`.
"""
from __future__ import annotations

import argparse
import sys

from calculators.cli import accuracy, app, capacity, catalog, perf, plan, profile, simulate
from calculators.cli.flags import Parser
from calculators.errors import InvalidInputError
from calculators.specs.catalog import CatalogError


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="llmcap", description="LLM serving capacity planner")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in (capacity, perf, plan, profile, simulate, catalog, accuracy, app):
        command.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # output piped into `head`
        return 0
    except InvalidInputError as exc:
        print(f"llmcap: error: {exc}", file=sys.stderr)
        return 2
    except CatalogError as exc:
        print(f"llmcap: error: {exc}", file=sys.stderr)
        return 1
