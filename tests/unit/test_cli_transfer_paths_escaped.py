"""A path given to ``esbridge import`` or ``esbridge export`` is named escaped in their errors: a line break, an escape
sequence or a right-to-left override in a file or folder name neither splits the error line nor drives the terminal
nor shows the name reversed, and bytes that are not UTF-8 are shown as ``\\xNN``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from esbridge.cli import main
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.transfer import import_chunks

ODD = "export\nerror: forged\x1b[2J\u202etxt"
NAMES = [
    pytest.param(ODD, "export\\u000aerror: forged\\u001b[2J\\u202etxt", id="controls"),
    pytest.param(os.fsdecode(b"export\xff"), "export\\xff", id="not-utf-8"),
]
HEADER = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 3}, "chunks": 1}
CHUNK = {"_id": "a#0", "chunk_id": "a#0", "doc_id": "a", "body": "a"}


def invoke(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"ESBRIDGE_DATA_DIR": str(tmp_path / "data")})


def assert_escaped(result: Result, raw: str, shown: str) -> str:
    assert result.exit_code == 1, result.output
    assert shown in result.stderr
    assert raw not in result.stderr and "\x1b" not in result.stderr and "\u202e" not in result.stderr
    return result.stderr


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_import_names_a_file_that_is_not_an_export_escaped(tmp_path: Path, name: str, shown: str) -> None:
    source = tmp_path / name
    source.write_text("hello\n", encoding="utf-8")
    result = invoke(tmp_path, "import", str(source), "--index", "notes")
    stderr = assert_escaped(result, name, shown)
    assert stderr == f"Error: {tmp_path}/{shown} is not an esbridge export: the first line is not JSON " + (
        "(Expecting value: line 1 column 1 (char 0))\n"
    )


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_import_names_the_file_of_a_line_it_could_not_use_escaped(tmp_path: Path, name: str, shown: str) -> None:
    source = tmp_path / name
    source.write_text(json.dumps(HEADER) + "\n" + json.dumps(CHUNK) + "\nnot json\n", encoding="utf-8")
    result = invoke(tmp_path, "import", str(source), "--index", "notes")
    assert_escaped(result, name, shown)
    assert f"failed: {shown}:3: not JSON" in result.stderr


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    source = tmp_path / "source.jsonl"
    source.write_text(json.dumps(HEADER) + "\n" + json.dumps(CHUNK) + "\n", encoding="utf-8")
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        assert import_chunks(engine, "notes", source) == (1, [])
    finally:
        engine.close()
    return tmp_path / "data"


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_export_names_a_file_it_cannot_write_escaped(tmp_path: Path, data_dir: Path, name: str, shown: str) -> None:
    target = tmp_path / name / "notes.jsonl"  # in a folder that does not exist
    result = invoke(tmp_path, "export", "--index", "notes", "-o", str(target))
    stderr = assert_escaped(result, name, shown)
    assert stderr == f"Error: cannot write {tmp_path}/{shown}/notes.jsonl: No such file or directory\n"
