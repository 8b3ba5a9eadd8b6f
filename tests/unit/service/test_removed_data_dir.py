"""The embedded sidecar whose data directory is removed (or moved away) while it runs: readiness, writes and
searches say so by name with a 503, whichever thread serves them, and all of it recovers once the directory is
back."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult

from esbridge.errors import EngineUnavailable
from esbridge.service.mcp_server import build_server
from tests.support.hashing import HashingEmbedder
from tests.unit.service.conftest import KEY, ClientFactory, service_settings, tool_text

WRITE = {"X-API-Key": KEY}


def test_a_removed_data_directory_is_503_naming_it_and_recovers_when_it_is_back(make_client: ClientFactory) -> None:
    client = make_client(api_keys=[KEY])
    written = client.post("/v1/documents", json={"documents": [{"id": "a", "text": "kestrel"}]}, headers=WRITE)
    assert written.json()["written"] == 1
    assert client.get("/readyz").status_code == 200
    data_dir = Path(os.environ["ESBRIDGE_DATA_DIR"])
    away = data_dir.with_name(data_dir.name + ".away")
    shutil.move(data_dir, away)
    try:
        ready = client.get("/readyz")
        assert ready.status_code == 503, ready.text
        assert f"the data directory {data_dir} has no database" in ready.json()["checks"]["engine"]
        answers = [
            client.post("/v1/documents", json={"documents": [{"id": "b", "text": "heron"}]}, headers=WRITE),
            client.delete("/v1/documents/a", headers=WRITE),
        ]
        # Each search on its own thread: one that had the database open could answer, one opening it now could not.
        answers += [client.post("/v1/search", json={"query": "kestrel"}) for _ in range(8)]
        for answer in answers:
            assert answer.status_code == 503, answer.text
            error = answer.json()["error"]
            assert error["kind"] == "engine_unavailable"
            assert f"the data directory {data_dir} has no database" in error["message"]
            assert "move it back: searches, writes and readiness recover then" in error["message"]
            assert answer.headers["Retry-After"] == "5"
        assert not data_dir.exists()  # the refused write created nothing in its place
    finally:
        shutil.move(away, data_dir)
    assert client.get("/readyz").status_code == 200
    again = client.post("/v1/documents", json={"documents": [{"id": "b", "text": "heron"}]}, headers=WRITE)
    assert again.json()["written"] == 1
    assert client.delete("/v1/documents/a", headers=WRITE).json() == {"id": "a", "deleted_chunks": 1, "owned": []}
    assert client.post("/v1/search", json={"query": "heron"}).json()["results"][0]["doc_id"] == "b"


def test_the_mcp_tools_name_a_data_directory_removed_while_it_runs(make_client: ClientFactory) -> None:
    written = make_client(api_keys=[KEY]).post(
        "/v1/documents", json={"documents": [{"id": "a", "text": "kestrel"}]}, headers=WRITE
    )
    assert written.json()["written"] == 1
    data_dir = Path(os.environ["ESBRIDGE_DATA_DIR"])
    away = data_dir.with_name(data_dir.name + ".away")
    server = build_server(service_settings(), embedder=HashingEmbedder(), load_model=False)

    calls = [("search", {"query": "kestrel"}), ("index_status", {})]

    async def session() -> tuple[list[CallToolResult], list[CallToolResult], list[CallToolResult]]:
        async with Client(server) as client:
            before = [await client.call_tool(name, arguments) for name, arguments in calls]
            shutil.move(data_dir, away)
            try:  # the status from a worker thread that has the database open said it exists, with its chunks
                during = [await client.call_tool(name, arguments) for name, arguments in calls]
            finally:
                shutil.move(away, data_dir)
            return before, during, [await client.call_tool(name, arguments) for name, arguments in calls]

    before, during, after = anyio.run(session)
    assert not any(answer.is_error for answer in [*before, *after])
    for answer in during:
        assert answer.is_error
        assert f"the data directory {data_dir} has no database" in tool_text(answer)


def test_a_copy_restored_in_place_of_the_data_directory_is_refused_until_a_restart(
    make_client: ClientFactory,
) -> None:
    # The connections opened before still wrote into the removed database: a write answered 200 and was lost.
    client = make_client(api_keys=[KEY])
    written = client.post("/v1/documents", json={"documents": [{"id": "a", "text": "kestrel"}]}, headers=WRITE)
    assert written.json()["written"] == 1
    data_dir = Path(os.environ["ESBRIDGE_DATA_DIR"])
    backup = data_dir.with_name(data_dir.name + ".backup")
    shutil.copytree(data_dir, backup)
    shutil.rmtree(data_dir)
    shutil.copytree(backup, data_dir)
    answers = [
        client.get("/readyz"),
        client.post("/v1/documents", json={"documents": [{"id": "b", "text": "heron"}]}, headers=WRITE),
        client.post("/v1/search", json={"query": "kestrel"}),
    ]
    for answer in answers:
        assert answer.status_code == 503, answer.text
        said = answer.json()["checks"]["engine"] if answer.request.url.path == "/readyz" else answer.text
        assert f"the database {data_dir / 'esbridge.sqlite3'} is not the file this process opened" in said
    restarted = make_client(api_keys=[KEY])
    assert restarted.post("/v1/search", json={"query": "kestrel"}).json()["results"][0]["doc_id"] == "a"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("removed", "the data directory {data} has no database esbridge.sqlite3 (it was removed or moved"),
        (
            "a folder in its place",
            "the data directory {data} has no database esbridge.sqlite3 (it was removed or moved",
        ),
        ("replaced", "the database {data}/esbridge.sqlite3 is not the file this process opened"),
    ],
)
def test_the_data_directory_check_words_each_problem_as_the_engine_found_it(
    make_client: ClientFactory, change: str, said: str
) -> None:
    # It asked the engine, then looked at the file again only to choose its words, which could then contradict what
    # the engine found; the words now follow the engine's finding (which file-system calls make it is not the point).
    client = make_client(api_keys=[KEY])
    written = client.post("/v1/documents", json={"documents": [{"id": "a", "text": "kestrel"}]}, headers=WRITE)
    assert written.json()["written"] == 1
    backend = client.app.state.backend  # type: ignore[attr-defined]
    connected = client.portal.call(backend.connected)  # type: ignore[union-attr]
    data_dir = Path(os.environ["ESBRIDGE_DATA_DIR"])
    database = data_dir / "esbridge.sqlite3"
    if change == "replaced":
        shutil.copyfile(database, data_dir / "backup")
        os.replace(data_dir / "backup", database)
    else:
        for suffix in ("", "-wal", "-shm"):
            database.with_name(database.name + suffix).unlink(missing_ok=True)
        if change == "a folder in its place":
            database.mkdir()
    with pytest.raises(EngineUnavailable) as refused:
        backend.check_data_dir(connected)
    assert said.format(data=data_dir) in str(refused.value)


def test_a_removed_data_directory_with_a_newline_in_its_name_is_named_on_one_line(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = Path(os.environ["ESBRIDGE_DATA_DIR"]) / "data\nERROR forged"
    monkeypatch.setenv("ESBRIDGE_DATA_DIR", str(data_dir))
    client = make_client(api_keys=[KEY])
    written = client.post("/v1/documents", json={"documents": [{"id": "a", "text": "kestrel"}]}, headers=WRITE)
    assert written.json()["written"] == 1
    shutil.move(data_dir, data_dir.with_name("away"))
    said = client.post("/v1/search", json={"query": "kestrel"}).json()["error"]["message"]
    assert f"the data directory {data_dir.parent}/data\\u000aERROR forged has no database" in said
