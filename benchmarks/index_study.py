"""What the research scripts that study an already ingested evaluation index share: their arguments
(a BEIR dataset folder, the engine, the index's alias, the query split) and the settings those name."""

from __future__ import annotations

import argparse
from pathlib import Path

from esbridge.config import Settings, load_settings


def study_parser(doc: str | None, *, split: str) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first line, with the arguments every study takes."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--url")
    parser.add_argument("--engine")
    parser.add_argument("--index", required=True, help="the alias of an already ingested evaluation index")
    parser.add_argument("--split", default=split)
    return parser


def study_settings(args: argparse.Namespace) -> Settings:
    return load_settings(url=args.url, engine=args.engine, index=args.index)
