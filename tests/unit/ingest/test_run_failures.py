"""An ingest cut short by its embedding model, on the embedded engine: what it says, what it keeps, the re-run."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import ConfigError, EmbeddingError, EngineUnavailable, IngestInterrupted
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from tests.support.hashing import HashingEmbedder
from tests.support.writer_lock import another_writer


class FailsOnCall(HashingEmbedder):
    """Raises on its ``fail_on``-th call, as a model does on a batch it cannot embed (or Ctrl-C during it)."""

    def __init__(self, fail_on: int, error: BaseException | None = None) -> None:
        self.calls, self.fail_on = 0, fail_on
        self.error = error or EmbeddingError("out of memory", model=self.name)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == self.fail_on:
            raise self.error
        return super().embed(texts)


@pytest.fixture
def records(tmp_path: Path) -> Path:
    path = tmp_path / "records.jsonl"
    rows = [{"id": f"r{n:02d}", "title": f"Record {n}", "text": f"Tidal turbine number {n}."} for n in range(10)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def run(engine: EmbeddedEngine, records: Path, embedder: HashingEmbedder) -> IngestReport:
    manager = IndexManager(engine, "notes", IndexParameters(dimension=embedder.dimension))
    return ingest(records, engine=engine, manager=manager, embedder=embedder, options=IngestOptions(window=4))


def test_a_model_failing_on_one_batch_says_how_much_was_written_and_a_rerun_writes_the_rest(
    engine: EmbeddedEngine, records: Path
) -> None:
    with pytest.raises(EmbeddingError, match=r"out of memory.* 8 of 10 chunks were written"):
        run(engine, records, FailsOnCall(fail_on=3))
    engine.refresh("notes")
    assert engine.count("notes") == 8

    again = run(engine, records, HashingEmbedder())
    assert (again.failed, again.unchanged, again.chunks_indexed) == ([], 8, 2)
    assert engine.count("notes") == 10


def test_ctrl_c_says_how_much_was_written_and_a_rerun_writes_the_rest(engine: EmbeddedEngine, records: Path) -> None:
    with pytest.raises(IngestInterrupted, match=r"^8 of 10 chunk writes were done and are kept; run the command"):
        run(engine, records, FailsOnCall(fail_on=3, error=KeyboardInterrupt()))
    engine.refresh("notes")
    assert engine.count("notes") == 8

    again = run(engine, records, HashingEmbedder())
    assert (again.failed, again.unchanged, again.chunks_indexed) == ([], 8, 2)
    assert engine.count("notes") == 10


class RefreshFails(EmbeddedEngine):
    """The embedded engine, which stops answering once the writes are done (a node dies before the refresh)."""

    def refresh(self, index: str) -> None:
        raise EngineUnavailable("connection refused", url="http://127.0.0.1:9", operation="refresh", index=index)


def test_an_engine_gone_after_the_writes_says_they_were_all_done(tmp_path: Path, records: Path) -> None:
    engine = RefreshFails(tmp_path / "gone")
    try:
        gone = r"^refresh failed on .*: connection refused, after all 10 chunk writes were done \(they are kept\)\. Run"
        with pytest.raises(EngineUnavailable, match=gone):
            run(engine, records, HashingEmbedder())
        assert EmbeddedEngine.count(engine, "notes") == 10
    finally:
        engine.close()


def test_another_process_writing_is_named_without_saying_the_engine_stopped(tmp_path: Path, records: Path) -> None:
    first = EmbeddedEngine(tmp_path / "shared")
    try:
        run(first, records, HashingEmbedder())
    finally:
        first.close()
    records.write_text(records.read_text(encoding="utf-8").replace("Tidal", "Wave"), encoding="utf-8")
    with another_writer(tmp_path / "shared") as pid:
        second = EmbeddedEngine(tmp_path / "shared")
        try:
            busy = rf"writes stopped after 0 of 10 chunk writes: the data directory .* another process \(pid {pid}\)"
            with pytest.raises(EngineUnavailable, match=busy) as refused:
                run(second, records, HashingEmbedder())
            assert "stopped answering" not in str(refused.value)
        finally:
            second.close()


def test_two_notes_with_one_id_keep_the_first_and_still_let_deleted_notes_go(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for name in ("a.md", "b.md", "c.md", "a.MD"):  # a.md and a.MD are both the note 'a'
        (vault / name).write_text(f"The note {name}.\n", encoding="utf-8")
    first = run(engine, vault, HashingEmbedder())
    assert [failure["reason"] for failure in first.failed] == ["duplicate id 'a'; the first one was kept"]
    (vault / "c.md").unlink()
    second = run(engine, vault, HashingEmbedder())
    assert second.deleted == 1
    engine.refresh("notes")
    kept = engine.scan("notes", {"match_all": {}}, ["body"], sort_field="chunk_id")
    assert {hit.id: hit.source["body"] for hit in kept} == {"a#0": "The note a.MD.", "b#0": "The note b.md."}


def test_a_line_without_a_readable_id_keeps_other_documents_but_not_the_old_tail_of_one_read_whole(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    path = tmp_path / "app.jsonl"
    long = " ".join(f"word{n}" for n in range(2000))
    rows = [{"id": "doc", "title": "Doc", "text": long}, {"id": "gone", "title": "Gone", "text": "gone"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert run(engine, path, HashingEmbedder()).chunks_indexed > 2
    # The app rewrote 'doc' shorter, dropped 'gone', and is still writing its last line.
    path.write_text(json.dumps({"id": "doc", "title": "Doc", "text": "now short"}) + '\n{"id": "ne', encoding="utf-8")
    report = run(engine, path, HashingEmbedder())
    [failure] = report.failed
    assert failure["reason"] == "invalid JSON: Unterminated string starting at column 8"
    assert report.warnings == [
        "1 chunk(s) no longer in the source were kept because some records could not be read; fix them and run "
        "again to remove the rest"
    ]
    engine.refresh("notes")
    kept = engine.scan("notes", {"match_all": {}}, ["body"], sort_field="chunk_id")
    assert {hit.id: hit.source["body"] for hit in kept} == {"doc#0": "now short", "gone#0": "gone"}


def test_a_folder_whose_name_is_not_utf8_needs_a_source_label(engine: EmbeddedEngine, tmp_path: Path) -> None:
    vault = tmp_path / os.fsdecode(b"caf\xe9")
    vault.mkdir()
    (vault / "note.md").write_text("A note.\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"caf\\xe9, the default source label, is not UTF-8 text; nothing was written"
    ):
        run(engine, vault, HashingEmbedder())
    manager = IndexManager(engine, "notes", IndexParameters(dimension=HashingEmbedder().dimension))
    report = ingest(
        vault, engine=engine, manager=manager, embedder=HashingEmbedder(), options=IngestOptions(source="cafe")
    )
    assert (report.chunks_indexed, report.failed) == (1, [])


def test_a_source_label_that_is_not_utf8_is_named_as_the_label(engine: EmbeddedEngine, tmp_path: Path) -> None:
    # --source with bytes that are not UTF-8: the error blamed the folder's name, which was fine.
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "note.md").write_text("A note.\n", encoding="utf-8")
    manager = IndexManager(engine, "notes", IndexParameters(dimension=HashingEmbedder().dimension))
    with pytest.raises(ConfigError, match=r"^the source label 'caf\\udce9' \(--source\) is not UTF-8 text") as refused:
        ingest(vault, engine=engine, manager=manager, embedder=None, options=IngestOptions(source="caf\udce9"))
    assert "default" not in str(refused.value)


def test_a_document_whose_later_chunk_ids_are_too_long_is_refused_whole_and_keeps_its_old_version(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    # A 510-byte id: chunks #0-#9 fit the engines' 512 bytes, #10 does not; the engine took the first ten
    # over the old version and refused the rest, leaving a document half old, half new.
    path = tmp_path / "app.jsonl"
    doc_id = "d" * 510
    long = " ".join(f"word{n}" for n in range(3000))
    old = [{"id": doc_id, "title": "Doc", "text": "The old version."}, {"id": "other", "text": "Other, old."}]
    path.write_text("".join(json.dumps(row) + "\n" for row in old), encoding="utf-8")
    assert run(engine, path, HashingEmbedder()).failed == []
    new = [{"id": doc_id, "title": "Doc", "text": long}, {"id": "other", "text": "Other, new."}]
    path.write_text("".join(json.dumps(row) + "\n" for row in new), encoding="utf-8")
    report = run(engine, path, HashingEmbedder())
    [failure] = report.failed
    assert failure["id"] == doc_id
    assert re.fullmatch(
        rf"chunk {doc_id}#10: id is 513 bytes long; engines accept at most 512 \(shorten the record's id\): none of "
        r"its \d+ chunks was written",
        failure["reason"],
    )
    assert (report.chunks_indexed, report.deleted) == (1, 0)
    engine.refresh("notes")
    kept = engine.scan("notes", {"match_all": {}}, ["body"], sort_field="chunk_id")
    assert {hit.id: hit.source["body"] for hit in kept} == {f"{doc_id}#0": "The old version.", "other#0": "Other, new."}


def test_a_tool_refused_for_its_long_ids_keeps_its_old_version_when_another_line_has_no_readable_id(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    # The server is read whole, so its stale tools go; the tool refused whole is not stale but kept, even when
    # a line whose id cannot be read makes the run keep only what it cannot tell is gone.
    path = tmp_path / "servers.jsonl"
    name = "t" * (510 - len("srv/tools/"))
    server = {"id": "srv", "name": "Server", "path": "/srv", "description": "A server."}
    old = [{**server, "tools": [{"name": name, "description": "The old tool."}, {"name": "gone"}]}]
    path.write_text("".join(json.dumps(row) + "\n" for row in old), encoding="utf-8")
    manager = IndexManager(engine, "notes", IndexParameters(dimension=HashingEmbedder().dimension))
    options = IngestOptions(window=4, source_format="registry")
    assert ingest(path, engine=engine, manager=manager, embedder=HashingEmbedder(), options=options).failed == []
    long = " ".join(f"word{n}" for n in range(3000))
    new = json.dumps({**server, "tools": [{"name": name, "description": long}]}) + '\n{"id": "ne'
    path.write_text(new, encoding="utf-8")
    report = ingest(path, engine=engine, manager=manager, embedder=HashingEmbedder(), options=options)
    refused, unreadable = report.failed
    assert refused["reason"].startswith(f"chunk srv/tools/{name}#10: id is 513 bytes long")
    assert unreadable["id"] == "servers.jsonl:2"
    engine.refresh("notes")
    kept = engine.scan("notes", {"match_all": {}}, ["body"], sort_field="chunk_id")
    tools = {hit.id: hit.source["body"] for hit in kept if hit.id.startswith("srv/tools/")}
    assert tools == {f"srv/tools/{name}#0": "The old tool."}


def test_a_note_whose_path_is_too_long_for_a_chunk_id_is_refused_naming_its_path_and_the_limit(
    engine: EmbeddedEngine, tmp_path: Path
) -> None:
    # The reason said "shorten the record's id", which a vault's author has no way to act on.
    folder = "/".join(["f" * 100] * 5)  # 504 bytes and a slash
    vault = tmp_path / "vault"
    (vault / folder).mkdir(parents=True)
    (vault / folder / "pump-station.md").write_text("# Pump\n\nThe pump.\n", encoding="utf-8")
    (vault / "short.md").write_text("A short path.\n", encoding="utf-8")
    manager = IndexManager(engine, "notes", IndexParameters(dimension=HashingEmbedder().dimension))
    report = ingest(vault, engine=engine, manager=manager, embedder=HashingEmbedder(), options=IngestOptions())
    [failure] = report.failed
    path = f"{folder}/pump-station.md"
    assert failure["id"] == path
    assert failure["reason"] == (
        "the note's path is 520 bytes long, and its id (the path without the extension) with a chunk number makes "
        "chunk ids of up to 519 bytes, over the 512 the engines accept: move or rename the note so that its path in "
        "the vault is at most 513 bytes (shorter folder or file names); none of its 1 chunk(s) was written"
    )
    assert report.chunks_indexed == 1
