"""A file that stops being UTF-8 is named by the line where it does and the byte in that line, not by a byte offset
in the whole file: settings files written to, the API keys file, Markdown notes, qrels whatever their line ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbridge.attach.settings_file import write_field_map
from esbridge.config.fields import FieldMap
from esbridge.errors import ConfigError, SourceError
from esbridge.ingest.beir import read_qrels
from esbridge.ingest.markdown import read_vault
from esbridge.ingest.model import Problem
from esbridge.service.auth import read_keys_file

CONTINUATION = "invalid UTF-8: byte 0xe9 at byte offset 11 of the line (invalid continuation byte)"


def test_a_settings_file_an_inspect_writes_to_names_the_line_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "esbridge.toml"
    path.write_bytes(b'url = "http://127.0.0.1:9200"\n\n[pipeline]\n# caf\xe9 = 1\nfusion = "rrf"\n')
    with pytest.raises(ConfigError) as refused:
        write_field_map(path, "products", FieldMap(text={"name": 1.0}))
    assert str(refused.value) == (
        f"cannot read config file {path}: line 4: invalid UTF-8: byte 0xe9 at byte offset 5 of the line (invalid "
        "continuation byte)"
    )
    assert b"[fields.products]" not in path.read_bytes()


def test_an_api_keys_file_names_the_line_that_is_not_utf8_and_no_key(tmp_path: Path) -> None:
    key = "k" * 32
    path = tmp_path / "keys"
    path.write_bytes(f"{key} read\r\n".encode() + b"# owner caf\xe9\r\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError) as refused:
        read_keys_file(path)
    message = str(refused.value)
    assert message == f"cannot read the API keys file {path}: line 2: {CONTINUATION}"
    assert key not in message


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_markdown_note_that_is_not_utf8_is_a_problem_naming_its_line_and_byte(tmp_path: Path, bom: bytes) -> None:
    (tmp_path / "bad.md").write_bytes(bom + b"# Notes\r\rline ab\n\xe9t\xe9\n")
    problems = [item for item in read_vault(tmp_path) if isinstance(item, Problem)]
    assert [(problem.line, problem.reason) for problem in problems] == [
        (4, "invalid UTF-8: byte 0xe9 at byte offset 0 of the line (invalid continuation byte)")
    ]


def test_qrels_with_old_mac_line_ends_name_the_line_that_is_not_utf8(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\r1\t10\t1\r2\tcaf\xe9-20\t1\r")
    with pytest.raises(SourceError) as refused:
        read_qrels(folder, "test")
    assert str(refused.value) == (
        f"{folder}/qrels/test.tsv, line 3: invalid UTF-8: byte 0xe9 at byte offset 5 of the line (invalid "
        "continuation byte); the file must be UTF-8 text"
    )
