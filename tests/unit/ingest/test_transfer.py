from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import ConfigError, EsbridgeWarning, SourceError
from esbridge.ingest.export_file import read_export, read_header
from esbridge.ingest.transfer import export_chunks, import_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters

HEADER = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 3}, "chunks": 3}
GOOD = [{"_id": f"{name}#0", "doc_id": name, "body": name} for name in ("a", "b", "c")]


def export_bytes(header: dict[str, Any], chunks: list[bytes]) -> bytes:
    return b"\n".join([json.dumps(header).encode(), *chunks]) + b"\n"


def lines_of(path: Path) -> list[tuple[int, dict[str, Any] | str]]:
    _, lines = read_export(path)
    return list(lines)


def test_a_line_that_is_not_utf8_fails_alone(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    chunks = [json.dumps(GOOD[0]).encode(), b'{"_id": "x#0", "body": "caf\xff"}', json.dumps(GOOD[1]).encode()]
    path.write_bytes(export_bytes(HEADER, chunks))
    read = lines_of(path)
    assert [(number, item) for number, item in read if isinstance(item, dict)] == [(2, GOOD[0]), (4, GOOD[1])]
    [(number, reason)] = [(number, item) for number, item in read if isinstance(item, str)]
    assert number == 3
    assert "not UTF-8" in reason and "0xff" in reason


def test_a_gzipped_export_is_read_as_it_is(tmp_path: Path) -> None:
    plain = export_bytes(HEADER, [json.dumps(chunk, ensure_ascii=False).encode() for chunk in GOOD])
    (tmp_path / "export.jsonl").write_bytes(plain)
    (tmp_path / "export.jsonl.gz").write_bytes(gzip.compress(plain))
    header, lines = read_export(tmp_path / "export.jsonl.gz")
    assert header == HEADER
    assert list(lines) == lines_of(tmp_path / "export.jsonl")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ({key: value for key, value in HEADER.items() if key != "parameters"}, "no 'parameters' field"),
        ({**HEADER, "parameters": [3]}, "'parameters' must be an object, not array"),
        ({**HEADER, "parameters": {}}, r"'parameters' has no 'dimension'"),
        ({**HEADER, "parameters": {"dimension": 3, "colour": "red"}}, r"'parameters'.*colour"),
        ({**HEADER, "parameters": {"dimension": 0}}, r"'parameters'.*dimension must be in 1\.\.4096"),
        ({key: value for key, value in HEADER.items() if key != "version"}, "no 'version' field"),
        ({**HEADER, "version": 2}, "version 2; this esbridge reads 1"),
        ({"version": 1, "parameters": {"dimension": 3}}, "is not an esbridge export"),
    ],
)
def test_a_header_without_what_import_needs_is_refused_by_name(
    tmp_path: Path, header: dict[str, Any], message: str
) -> None:
    path = tmp_path / "export.jsonl"
    path.write_bytes(export_bytes(header, [json.dumps(GOOD[0]).encode()]))
    with pytest.raises(SourceError, match=message):
        read_export(path)


def test_a_header_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_bytes(b'{"format": "esbridge-export\xff"}\n')
    with pytest.raises(SourceError, match="first line is not UTF-8"):
        read_export(path)


def test_a_chunk_line_that_is_not_json_is_located(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_bytes(export_bytes(HEADER, [b'{"_id": "a#0", "body": "unterminated"']))
    assert lines_of(path) == [(2, "not JSON: Expecting ',' delimiter at the end of the line (column 38)")]


def test_an_import_into_an_index_without_a_field_its_chunks_carry_writes_nothing(tmp_path: Path) -> None:
    # An index made before link_weights existed refuses weighted chunks (strict mapping): say so, and how.
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        body = IndexManager(engine, "old", IndexParameters(dimension=3)).wanted_body()
        del body["mappings"]["properties"]["link_weights"]
        engine.create_index("old-v1", body)
        engine.update_aliases([{"add": {"index": "old-v1", "alias": "old", "is_write_index": True}}])
        weighted = {"_id": "d#0", "doc_id": "d", "links": ["a"], "link_weights": {"a": 3.0}}
        path = tmp_path / "export.jsonl"
        path.write_bytes(
            export_bytes({**HEADER, "chunks": 4}, [json.dumps(chunk).encode() for chunk in [*GOOD, weighted]])
        )
        with pytest.raises(ConfigError, match=r"index old has no mapping for link_weights.*`esbridge mapping apply`"):
            import_chunks(engine, "old", path)
        assert engine.count("old") == 0
        unweighted = tmp_path / "plain.jsonl"
        unweighted.write_bytes(export_bytes(HEADER, [json.dumps(chunk).encode() for chunk in GOOD]))
        assert import_chunks(engine, "old", unweighted) == (3, [])
    finally:
        engine.close()


def test_an_export_quantized_in_a_way_this_engine_lacks_is_imported_as_float(tmp_path: Path) -> None:
    # An Elasticsearch index with bbq vectors, exported: OpenSearch and the embedded engine have no bbq.
    path = tmp_path / "bbq.jsonl"
    header = {**HEADER, "parameters": {"dimension": 3, "vector_encoding": "bbq"}}
    chunks = [{**chunk, "chunk_id": chunk["_id"], "vector": [0.6, 0.8, 0.0]} for chunk in GOOD]
    path.write_bytes(export_bytes(header, [json.dumps(chunk).encode() for chunk in chunks]))
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        with pytest.warns(EsbridgeWarning, match=r"bbq.*stores them as float"):
            assert import_chunks(engine, "moved", path) == (3, [])
        assert engine.count("moved") == 3
    finally:
        engine.close()


def test_a_vector_that_is_not_a_list_fails_its_chunk_alone(tmp_path: Path) -> None:
    # A number there once stopped the whole import with a traceback (TypeError: object of type 'int' has no len()).
    path = tmp_path / "export.jsonl"
    chunks: list[dict[str, Any]] = [{**chunk, "chunk_id": chunk["_id"], "vector": [0.6, 0.8, 0.0]} for chunk in GOOD]
    chunks[0]["vector"], chunks[1]["vector"] = 5, {"x": 1, "y": 2, "z": 3}
    path.write_bytes(export_bytes(HEADER, [json.dumps(chunk).encode() for chunk in chunks]))
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        imported, failed = import_chunks(engine, "moved", path)
        assert imported == 1
        assert failed == [
            {"id": "a#0", "reason": "vector is number 5, not a list of numbers"},
            {"id": "b#0", "reason": "vector is object, not a list of numbers"},
        ]
        assert [hit.id for hit in engine.scan("moved", {"match_all": {}}, ["doc_id"], sort_field="chunk_id")] == ["c#0"]
    finally:
        engine.close()


def test_a_truncated_gzip_export_imports_its_whole_lines_and_says_how_many(tmp_path: Path) -> None:
    # An interrupted `esbridge export | gzip`: the import once stopped with only gzip's error, not saying that
    # (nor how many) chunks had been written.
    chunks = [{"_id": f"d{n}#0", "doc_id": f"d{n}", "body": os.urandom(200).hex()} for n in range(400)]
    whole = gzip.compress(export_bytes({**HEADER, "chunks": 400}, [json.dumps(chunk).encode() for chunk in chunks]))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        imported, failed = import_chunks(engine, "moved", path)
        assert 0 < imported < 400
        assert engine.count("moved") == imported
        reasons = [failure["reason"] for failure in failed]
        assert any(f"the file ends early, after {imported} chunk line(s)" in reason for reason in reasons)
        assert f"the header announces 400 chunks but the file holds {imported} lines" in reasons
    finally:
        engine.close()


class WritesDuringExport(io.StringIO):
    """The export's output; while the export writes its first chunk, another chunk is written to the index."""

    def __init__(self, engine: EmbeddedEngine) -> None:
        super().__init__()
        self.engine, self.lines = engine, 0

    def write(self, text: str) -> int:
        self.lines += 1
        if self.lines == 2:
            self.engine.bulk("notes", [BulkAction("index", "z#0", {"chunk_id": "z#0", "doc_id": "z", "body": "z"})])
        return super().write(text)


def test_an_export_of_an_index_written_meanwhile_says_its_header_count_is_off(tmp_path: Path) -> None:
    chunks = [
        {"_id": f"c{n:04d}#0", "chunk_id": f"c{n:04d}#0", "doc_id": f"c{n:04d}", "body": "c"} for n in range(1200)
    ]
    source = tmp_path / "source.jsonl"
    source.write_bytes(export_bytes({**HEADER, "chunks": 1200}, [json.dumps(chunk).encode() for chunk in chunks]))
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        assert import_chunks(engine, "notes", source) == (1200, [])
        out = WritesDuringExport(engine)  # the new chunk sorts after the first page the export reads
        with pytest.warns(EsbridgeWarning, match=r"changed while it was exported: it held 1200 chunks .* 1201 were"):
            written = export_chunks(engine, IndexManager(engine, "notes", IndexParameters(dimension=3)), out)
    finally:
        engine.close()
    assert written == 1201
    assert json.loads(out.getvalue().splitlines()[0])["chunks"] == 1200


def test_a_damaged_gzip_export_imports_its_whole_lines_and_says_where_it_stops(tmp_path: Path) -> None:
    # Bytes spoilt inside the compressed stream (here where the second gzip member's data starts): zlib's own
    # error escaped, a traceback on the command line.
    lines = [json.dumps({"_id": f"d{n}#0", "doc_id": f"d{n}", "body": f"b{n}"}).encode() for n in range(400)]
    first = gzip.compress(export_bytes({**HEADER, "chunks": 400}, lines[:200]))
    second = bytearray(gzip.compress(b"\n".join(lines[200:]) + b"\n"))
    second[10:40] = bytes(byte ^ 0x5A for byte in second[10:40])
    path = tmp_path / "damaged.jsonl.gz"
    path.write_bytes(first + bytes(second))
    read = lines_of(path)
    assert sum(isinstance(item, dict) for _, item in read) == 200
    assert f"cannot read {path}: Error -3 while decompressing data" in read[-1][1]
    assert "the file ends early, after 200 chunk line(s)" in read[-1][1]


def test_a_gzip_export_damaged_in_its_first_line_is_refused(tmp_path: Path) -> None:
    whole = bytearray(gzip.compress(export_bytes(HEADER, [json.dumps(chunk).encode() for chunk in GOOD])))
    whole[12:40] = bytes(byte ^ 0x5A for byte in whole[12:40])
    path = tmp_path / "damaged.jsonl.gz"
    path.write_bytes(bytes(whole))
    with pytest.raises(SourceError, match=f"cannot read {path}: Error -3 while decompressing data"):
        read_export(path)


@pytest.mark.parametrize("read", [read_header, read_export])
def test_an_export_on_a_pipe_is_refused_by_name_and_not_waited_on(tmp_path: Path, read: Any) -> None:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)  # `esbridge import <(zcat notes.jsonl.gz)`: the header is read once, the chunks again
    done = threading.Event()

    def release_waiting_readers() -> None:  # so that a reader that does wait fails the test instead of hanging
        while not done.wait(0.5):
            with contextlib.suppress(OSError):  # ENXIO: nothing is reading it
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    releaser = threading.Thread(target=release_waiting_readers)
    releaser.start()
    try:
        with pytest.raises(SourceError, match=f"cannot read {path}: it is not a regular file.*save it to a file first"):
            read(path)
    finally:
        done.set()
        releaser.join()
