"""One evaluation against one engine: bring the dataset's corpus into the index (or reuse it), run the
judged queries through the configurations, and score them."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from esbridge.attach.guard import preflight
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder
from esbridge.engines import Engine, connect, connect_async, prepare, resolve_kind
from esbridge.engines.capabilities import Capabilities
from esbridge.errors import IndexNotFound, ReadOnlyIndex, SourceError
from esbridge.evaluation.dataset import JudgedQueries
from esbridge.evaluation.methods import Configuration
from esbridge.evaluation.reranking import Rerankers
from esbridge.evaluation.runner import ConfigurationRuns, Depth, run_configurations
from esbridge.ids import shown_path
from esbridge.ingest.beir import CORPUS_FILE, ID_FIELD, BeirRecord
from esbridge.ingest.json_lines import known_id, read_json_lines
from esbridge.ingest.markdown import is_text
from esbridge.ingest.model import Problem
from esbridge.ingest.model_record import refuse_other_model
from esbridge.ingest.progress import ProgressFactory, no_progress
from esbridge.ingest.refusals import DOC_ID_BATCH, EmptySourceRefused, ForeignDocumentsRefused, MassDeleteRefused
from esbridge.ingest.report import IngestReport
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.parameters import parameters_from


@dataclass
class Session:
    engine: str
    index: str
    queries: int
    ingest: dict[str, Any] | None = None
    run_s: float = 0.0
    engine_requests: int = 0
    outcomes: list[ConfigurationRuns] = field(default_factory=list)


class Prepared(NamedTuple):
    settings: Settings
    """the settings to search with (an attached index's field map as checked against its mapping)"""
    ingested: IngestReport | None
    """None with ``reuse``"""


def prepare_index(
    settings: Settings, folder: Path, embedder: Embedder | None, *, reuse: bool, progress: ProgressFactory = no_progress
) -> Prepared:
    """Ingest the corpus into ``settings.index`` (creating it if needed; unchanged chunks are skipped),
    or with ``reuse`` only check that the index exists. A corpus that gave no document is refused."""
    adapter = connect(settings)
    try:
        if settings.attached and not reuse:
            raise ReadOnlyIndex(
                f"index {settings.index} is attached (it has a [fields.{settings.index}] field map): eval does not "
                "ingest into it; evaluate it as it is with --reuse, with judgements that name its document ids"
            )
        if reuse:
            if not adapter.index_exists(settings.index):
                raise IndexNotFound(
                    f"index {settings.index!r} does not exist; run without --reuse to ingest the dataset into it",
                    url=adapter.url,
                    operation="eval",
                    index=settings.index,
                )
            checked = preflight(settings, adapter, embedder.dimension if embedder is not None else None)
            if embedder is not None and not settings.search.allow_model_mismatch:
                refuse_other_model(adapter, settings.index, embedder)  # scores of another model's vectors mislead
            return Prepared(checked, None)
        manager = IndexManager(
            adapter, settings.index, parameters_from(settings, embedder.dimension if embedder else None)
        )
        shown, corpus = shown_path(folder), shown_path(folder / CORPUS_FILE)
        try:
            report = ingest(
                folder,
                engine=adapter,
                manager=manager,
                embedder=embedder,
                options=IngestOptions(source_format="beir", source=_source_label(folder)),
                progress=progress,
            )
        except EmptySourceRefused as exc:  # no index or drop helps: the corpus itself is empty
            raise SourceError(
                f"{corpus} gave no document to evaluate on; nothing was written ({settings.index} "
                "still holds the corpus ingested before: evaluate it as it is with --reuse)"
            ) from exc
        except MassDeleteRefused as exc:
            raise MassDeleteRefused(
                exc.found,
                f"Evaluate {shown} in an index of its own with --index NAME (one dataset at a time), or, if "
                f"{settings.index} should now hold this corpus, delete it first: esbridge index drop --index "
                f"{settings.index}",
            ) from exc
        except ForeignDocumentsRefused as exc:  # eval labels a corpus with its folder's name and has no --source
            raise ForeignDocumentsRefused(
                exc.found,
                f"If {settings.index} already holds this corpus, evaluate it as it is with --reuse; otherwise "
                f"evaluate {shown} in an index of its own with --index NAME",
            ) from exc
    finally:
        adapter.close()
    if report.chunks_indexed == 0 and report.unchanged == 0:
        raise SourceError(f"{corpus} gave no document to evaluate on{_examples(report.failed)}")
    return Prepared(settings, report)


def _source_label(folder: Path) -> str | None:
    """The folder's name as its source label, as ``esbridge ingest`` gives it (None), unless the name is not UTF-8:
    eval has no --source to name one, so undecodable bytes are written as ``\\xff``."""
    name = folder.resolve().name
    return None if is_text(name) else os.fsencode(name).decode("utf-8", "backslashreplace")


def ingest_warnings(folder: Path, ingested: IngestReport | None) -> list[str]:
    """What an evaluation must say about its ingest: corpus records it could not ingest, which no
    configuration can find."""
    if ingested is None or not ingested.failed:
        return []
    return [
        f"{len(ingested.failed)} corpus records of {shown_path(folder.resolve().name)} were not ingested"
        f"{_examples(ingested.failed)}; the figures are over the rest (the JSON's ingest.failed lists them)"
    ]


def absent_from_index(settings: Settings, split: str, judged: JudgedQueries) -> str | None:
    """With ``--reuse``: a warning naming the documents the split judges relevant that the index holds no chunk
    of, or None. An ingest that was interrupted leaves part of the corpus out, and ``--reuse`` would otherwise
    score what it left as if it were the dataset. Attached indices name their documents by their own field."""
    if settings.attached:
        return None
    relevant = sorted({doc for docs in judged.qrels.values() for doc, relevance in docs.items() if relevance > 0})
    adapter = connect(settings)
    try:
        held: set[str] = set()
        for start in range(0, len(relevant), DOC_ID_BATCH):
            query = {"terms": {"doc_id": relevant[start : start + DOC_ID_BATCH]}}
            held.update(
                str(hit.source.get("doc_id"))
                for hit in adapter.scan(settings.index, query, ["doc_id"], sort_field="chunk_id")
            )
    finally:
        adapter.close()
    absent = [doc for doc in relevant if doc not in held]
    if not absent:
        return None
    shown = ", ".join(repr(doc) for doc in absent[:3])
    return (
        f"index {settings.index} holds no chunk of {len(absent)} of the {len(relevant)} documents "
        f"qrels/{split}.tsv judges relevant (e.g. {shown}), so no configuration can find them: it may hold only "
        "part of this dataset (an ingest that did not finish?); run without --reuse to ingest what is missing"
    )


def other_corpus(settings: Settings, folder: Path, judged: JudgedQueries) -> str | None:
    """With ``--reuse``: a warning when the index's documents are not those of the folder's ``corpus.jsonl``
    (documents added or removed since it was ingested, or another corpus), or None. Documents the index holds
    and the file lacks compete in every ranking, and those it lacks cannot be found, so the figures are not the
    file's. Documents judged relevant that it lacks are left to ``absent_from_index``, which says they cap the
    scores. Compared by id only: a document changed in place is not noticed. Not for attached indices (their
    ids are their own) nor without a corpus file (one only needs queries and judgements)."""
    corpus = folder / CORPUS_FILE
    if settings.attached or not corpus.is_file():
        return None
    try:
        in_file, named = corpus_ids(corpus)
    except SourceError as exc:
        return f"index {settings.index} was not compared with {shown_path(corpus)}, which cannot be read: {exc}"
    adapter = connect(settings)
    try:
        hits = adapter.scan(settings.index, {"match_all": {}}, ["doc_id"], sort_field="chunk_id")
        held = {str(hit.source.get("doc_id")) for hit in hits}
    finally:
        adapter.close()
    relevant = {doc for docs in judged.qrels.values() for doc, relevance in docs.items() if relevance > 0}
    unjudged = in_file - relevant
    extra, lacking = sorted(held - named), sorted(unjudged - held)
    if not extra and not lacking:
        return None
    differences = []
    if extra:
        count = f"{len(extra)} document{'s' if len(extra) != 1 else ''}"
        differences.append(f"holds {count} the file does not have (e.g. {_named(extra)})")
    if lacking:
        total = f"{len(unjudged)} document{'s' if len(unjudged) != 1 else ''}"
        differences.append(f"lacks {len(lacking)} of its {total} not judged relevant (e.g. {_named(lacking)})")
    return (
        f"index {settings.index} does not hold the corpus of {shown_path(corpus)} as it is now: it "
        f"{' and '.join(differences)}; the figures are over what the index holds, not over this corpus (run "
        "without --reuse to bring the index in line with it)"
    )


def corpus_ids(corpus: Path) -> tuple[set[str], set[str]]:
    """The ids of a BEIR corpus file's records the ingest takes, and those of every line whose id can be read,
    records it refuses included (the index keeps what it held for them, and has nothing for them to lack)."""
    valid: set[str] = set()
    named: set[str] = set()
    for item in read_json_lines(corpus, ID_FIELD):
        if isinstance(item, Problem):
            named.update([item.doc_id] if item.doc_id else [])
            continue
        try:
            record = BeirRecord.model_validate(item[1])
        except ValidationError:
            named.update([doc] if (doc := known_id(item[1], ID_FIELD)) else [])
            continue
        valid.add(record.id)
        named.add(record.id)
    return valid, named


def _named(ids: Sequence[str]) -> str:
    return ", ".join(repr(doc) for doc in ids[:3])


def _examples(failed: Sequence[dict[str, str]]) -> str:
    shown = "; ".join(f"{failure['id']}: {failure['reason']}" for failure in failed[:3])
    return f" ({shown}{'; ...' if len(failed) > 3 else ''})" if failed else ""


# Capabilities.native_hybrid entries that fuse lexical and vector results on the server; `retrievers`
# alone (the Elasticsearch retriever syntax) or `hybrid_explain` do not.
FUSING_FEATURES = frozenset(
    {"rrf_retriever", "linear_retriever", "hybrid_query", "normalization_processor", "score_ranker_processor"}
)


def probe_native(settings: Settings) -> tuple[Capabilities, str | None]:
    """The engine's capabilities, and why it cannot fuse on the server (None when it can)."""
    adapter = connect(settings)
    try:
        capabilities = adapter.probe()
        return capabilities, native_unavailable(adapter, capabilities)
    finally:
        adapter.close()


def native_unavailable(adapter: Engine, capabilities: Capabilities | None = None) -> str | None:
    """Why the engine cannot fuse on the server, or None when it has a server-side fusion feature."""
    capabilities = capabilities or adapter.probe()
    if any(on for name, on in capabilities.native_hybrid.items() if name in FUSING_FEATURES):
        return None
    reason = "; ".join(note for note in capabilities.notes if "hybrid" in note or "retriever" in note)
    return reason or f"{capabilities.distribution} {capabilities.version} has no server-side hybrid fusion"


def run(
    settings: Settings,
    judged: JudgedQueries,
    configurations: Sequence[Configuration],
    embedder: Embedder | None,
    *,
    depth: Depth | None = None,
    progress: Callable[[int], None] = lambda n: None,
    rerankers: Rerankers | None = None,
) -> Session:
    kind = resolve_kind(settings)
    native_reason = None
    capabilities: Capabilities | None = None
    if any(configuration.native for configuration in configurations):
        capabilities, native_reason = probe_native(settings)

    async def go() -> Session:
        engine = connect_async(settings, kind=kind)
        try:
            await prepare(engine, settings.index)  # (a build of the index is no part of the run's time)
            started = time.perf_counter()
            outcomes = await run_configurations(
                engine,
                settings.index,
                embedder,
                configurations,
                judged.queries,
                depth=depth,
                num_candidates=settings.mapping.hnsw_ef_search,
                native_unavailable=native_reason,
                capabilities=capabilities,
                progress=progress,
                fields=settings.field_map,
                rerankers=rerankers,
            )
        finally:
            await engine.close()
        return Session(
            kind, settings.index, len(judged.queries), run_s=round(time.perf_counter() - started, 1), outcomes=outcomes
        )

    return asyncio.run(go())
