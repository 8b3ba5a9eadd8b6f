"""A path given to ``esbridge ingest`` is named escaped in its errors: a line break, an escape sequence or a
right-to-left override in a file or folder name (all possible on Linux) neither splits the error line nor drives the
terminal nor shows the name reversed, and bytes that are not UTF-8 are shown as ``\\xNN``."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.factory import EMBEDDERS
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EsbridgeError
from esbridge.ingest.report import IngestReport
from esbridge.ingest.sources import SourceFormat
from tests.support.hashing import HashingEmbedder
from tests.support.ingest_runs import ingest_into

ODD = "notes\nerror: forged\x1b[2J\u202etxt"
SHOWN = "notes\\u000aerror: forged\\u001b[2J\\u202etxt"


def run(engine: EmbeddedEngine, path: Path, source_format: SourceFormat = "auto", **options: object) -> IngestReport:
    return ingest_into(engine, "paths", path, source_format, **options)


def refusal(engine: EmbeddedEngine, path: Path, source_format: SourceFormat = "auto", **options: object) -> str:
    with pytest.raises(EsbridgeError) as refused:
        run(engine, path, source_format, **options)
    message = str(refused.value)
    assert ODD not in message and "\n" not in message and "\x1b" not in message and "\u202e" not in message
    return message


def test_the_command_names_an_empty_folder_escaped_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EMBEDDERS, "hashing", lambda settings: HashingEmbedder())
    env = {
        "ESBRIDGE_EMBEDDING__PROVIDER": "hashing",
        "ESBRIDGE_DATA_DIR": str(tmp_path / "data"),
        "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"),
    }
    folder = tmp_path / ODD
    folder.mkdir()
    result = CliRunner(env=env).invoke(main, ["ingest", str(folder), "--format", "markdown", "--engine", "embedded"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: found no documents in {tmp_path}/{SHOWN} (read as a Markdown vault: its .md notes); nothing was "
        "written\n"
    )


def test_a_file_whose_format_cannot_be_told_or_that_is_not_the_format_given_is_named_escaped(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    folder = tmp_path / ODD
    folder.mkdir()
    (folder / "queries.jsonl").write_text("", encoding="utf-8")
    odd_file = tmp_path / f"{ODD}.csv"
    odd_file.write_text("a,b\n", encoding="utf-8")
    assert refusal(engine, odd_file) == (
        f"cannot tell the format of {tmp_path}/{SHOWN}.csv: pass --format markdown, jsonl, beir or registry"
    )
    assert refusal(engine, folder, "jsonl") == f"JSON-lines file is not a file: {tmp_path}/{SHOWN}"
    assert refusal(engine, folder, "registry") == f"registry JSON-lines file is not a file: {tmp_path}/{SHOWN}"
    assert refusal(engine, odd_file, "markdown").startswith(
        f"vault folder {tmp_path}/{SHOWN}.csv does not exist or is not a folder, nor a note file"
    )
    assert refusal(engine, folder).startswith(f"{tmp_path}/{SHOWN} holds queries.jsonl but no corpus.jsonl")
    assert refusal(engine, folder, "beir") == f"BEIR corpus not found: {tmp_path}/{SHOWN}/corpus.jsonl"


def test_a_compressed_file_is_named_escaped_in_the_error_and_its_hint(engine: EmbeddedEngine, tmp_path: Path) -> None:
    packed = tmp_path / f"{ODD}.jsonl"
    packed.write_bytes(gzip.compress(b'{"id": "a", "title": "A"}\n'))
    assert refusal(engine, packed) == (
        f"JSON-lines file {tmp_path}/{SHOWN}.jsonl is gzip-compressed: decompress it first "
        f"(gunzip -c '{tmp_path}/{SHOWN}.jsonl' > '{tmp_path}/{SHOWN}.utf8.jsonl')"
    )


def test_a_folder_name_that_is_not_utf8_is_named_with_its_bytes_and_characters_escaped(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/vault\xff\n\x1b[2J"))
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    assert refusal(engine, folder) == (
        f"the name of {tmp_path.resolve()}/vault\\xff\\u000a\\u001b[2J, the default source label, is not UTF-8 text; "
        "nothing was written. Give the source a label with --source"
    )


def test_the_mass_delete_and_other_source_refusals_name_the_path_escaped(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    first = tmp_path / "first.jsonl"
    first.write_text('{"id": "a", "title": "A"}\n{"id": "b", "title": "B"}\n', encoding="utf-8")
    assert run(engine, first, source="shared").failed == []
    odd = tmp_path / f"{ODD}.jsonl"
    odd.write_text('{"id": "c", "title": "C"}\n', encoding="utf-8")
    assert refusal(engine, odd, source="shared") == (
        f"index paths-v1 holds 2 chunks for source 'shared', and {tmp_path}/{SHOWN}.jsonl would delete 2 of them "
        f"(100%); nothing was written. If {tmp_path}/{SHOWN}.jsonl is another collection that shares the name "
        "'shared', give it its own label with --source; if the documents really were removed, run again with "
        "--allow-mass-delete"
    )
    odd.write_text('{"id": "a", "title": "A"}\n', encoding="utf-8")
    assert refusal(engine, odd, source="other").startswith(
        f"index paths-v1 already holds 1 chunk(s) of documents that {tmp_path}/{SHOWN}.jsonl would write, under "
        "another source label"
    )
