"""Versioned indices behind an alias: ``<alias>-v1``, ``<alias>-v2``, ... with the alias on one of them.

Searches and writes always go through the alias. ``reindex`` builds the next version completely,
checks it, and only then moves the alias in one atomic ``_aliases`` request, so readers never see a
half-built index; if anything fails before the swap, the new version is deleted and the alias stays (a swap
whose answer was lost is looked for first: it may have been made, and deleting its target would drop the alias).
While it copies, the current version is write-blocked: a write that arrives then is refused, with a
reason that names the reindex, instead of landing where the copy has already passed and being lost
when the alias moves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import Any

from esbridge import errors
from esbridge.embeddings.identity import META_KEY, PENDING_KEY
from esbridge.engines.base import Engine, IndexInfo
from esbridge.engines.blocks import write_blocked
from esbridge.engines.capabilities import Capabilities
from esbridge.engines.vector_options import unavailable
from esbridge.mappings.copy import copy_documents
from esbridge.mappings.creation import create_once
from esbridge.mappings.diff import MappingDiff, diff_index
from esbridge.mappings.interrupted import (
    alias_on,
    describe_failure,
    kept_for_the_task,
    moved_words,
    undo_interrupted,
    version_of,
)
from esbridge.mappings.preflight import fields_left_out, refuse_a_red_source, refuse_another_dimension
from esbridge.mappings.schema import VECTOR_FIELD, IndexParameters, render_index


class MappingNeedsNewVersion(errors.EsbridgeError):
    """The wanted mapping differs in a way an existing index cannot take; a reindex is needed."""


def version_name(alias: str, version: int) -> str:
    return f"{alias}-v{version}"


@dataclass(frozen=True)
class AliasState:
    alias: str
    current: str | None
    versions: tuple[IndexInfo, ...]

    @property
    def latest_version(self) -> int:
        numbers = [version_of(self.alias, info.name) for info in self.versions]
        return max((n for n in numbers if n is not None), default=0)


@dataclass(frozen=True)
class ReindexOutcome:
    old: str
    new: str
    documents: int
    deleted_old: bool
    server_side: bool = True
    """False when the documents were copied through the client: the server has no ``_reindex``, or ``left_out``
    names fields the server-side copy would refuse."""
    left_out: tuple[str, ...] = ()
    """fields only the old version's mapping has (added by hand), which the new version does not take"""


class IndexManager:
    """Creates, inspects, migrates and drops the versioned indices behind one alias."""

    def __init__(self, engine: Engine, alias: str, params: IndexParameters) -> None:
        self.engine = engine
        self.alias = alias
        self._params = params

    @cached_property
    def _capabilities(self) -> Capabilities:
        return self.engine.probe()

    @cached_property
    def server_features(self) -> dict[str, bool]:
        """What the engine's build offers (``text_analysis``, ``reindex``), asked once per manager."""
        return dict(self._capabilities.features)

    @cached_property
    def params(self) -> IndexParameters:
        """The parameters, with ``auto`` analysis resolved by asking the engine what it has; a vector encoding
        the engine's version lacks is refused before anything is created."""
        if self._params.vector_encoding != "float":
            why = unavailable(self.engine.dialect, self._capabilities.version, self._params.vector_encoding)
            if why:
                raise errors.UnsupportedFeature(
                    f"{why} ([mapping] vector_encoding)", url=self.engine.url, operation="map vectors", index=self.alias
                )
            return replace(self._resolved_analysis(), engine_version=self._capabilities.version)
        return self._resolved_analysis()

    def _resolved_analysis(self) -> IndexParameters:
        if self._params.analysis != "auto":
            return self._params
        has_analysis = self.server_features.get("text_analysis", True)
        return replace(self._params, analysis="full" if has_analysis else "core")

    def wanted_body(self) -> dict[str, Any]:
        return render_index(self.engine.dialect, self.params)

    def body_carrying_model(self, source: str) -> dict[str, Any]:
        """The wanted body, with the model ``source`` records (and the one it is being re-embedded with): a copy
        holds the same vectors."""
        body = self.wanted_body()
        meta = self.engine.get_mapping(source).get("_meta") or {}
        carried = {key: meta[key] for key in (META_KEY, PENDING_KEY) if meta.get(key) is not None}
        if carried:
            body["mappings"]["_meta"] = {**body["mappings"].get("_meta", {}), **carried}
        return body

    def state(self) -> AliasState:
        versions = tuple(
            info for info in self.engine.list_indices(f"{self.alias}-v*") if version_of(self.alias, info.name)
        )
        targets = self.engine.alias_targets(self.alias)
        if len(targets) > 1:
            raise errors.AmbiguousAlias(f"alias {self.alias!r} points to several indices {targets}; fix it by hand")
        return AliasState(self.alias, targets[0] if targets else None, versions)

    def current(self) -> str:
        """The concrete index behind the alias; IndexNotFound when there is none."""
        state = self.state()
        if state.current is None:
            raise self._nothing_behind("resolve alias", "run `esbridge index create`")
        return state.current

    def _nothing_behind(self, operation: str, then: str) -> errors.IndexNotFound:
        """The error for an alias with no index behind it, or a name that is a concrete index and no alias."""
        concrete = self.engine.index_exists(self.alias)
        return errors.IndexNotFound(
            f"{self.alias} is an index, not an alias over versions ({self.alias}-v1, ...) as esbridge makes them"
            if concrete
            else f"no index behind this alias: {then}",
            url=self.engine.url,
            operation=operation,
            index=self.alias,
        )

    def create(self) -> str:
        """Create the next version and point the alias at it; refuse if the alias already has an index."""
        state = self.state()
        if state.current is not None:
            raise errors.IndexAlreadyExists(
                f"alias already points to {state.current}; use `esbridge index reindex` for a new version",
                url=self.engine.url,
                operation="create index",
                index=self.alias,
            )
        if self.engine.index_exists(self.alias):
            raise errors.IndexAlreadyExists(
                "a concrete index has the alias's name; rename the alias (--index) or drop that index",
                url=self.engine.url,
                operation="create index",
                index=self.alias,
            )
        name = version_name(self.alias, state.latest_version + 1)
        self._create_version(name, self.wanted_body())
        try:
            self.engine.update_aliases([{"add": {"index": name, "alias": self.alias, "is_write_index": True}}])
        except BaseException:
            self.engine.delete_index(name, missing_ok=True)
            raise
        return name

    def _create_version(self, name: str, body: dict[str, Any]) -> None:
        """Create a new version, once however many times the client library sends the request (``create_once``)."""
        create_once(self.engine, name, body)

    def ensure(self) -> str:
        """The current index, created first if the alias has none."""
        state = self.state()
        return state.current if state.current is not None else self.create()

    def diff(self) -> MappingDiff:
        return self._diff(self.current())

    def _diff(self, index: str) -> MappingDiff:
        wanted = self.wanted_body()
        return diff_index(
            self.engine.get_mapping(index),
            self.engine.get_index_settings(index),
            wanted["mappings"],
            wanted["settings"],
        )

    def apply(self) -> MappingDiff:
        """Add new fields to the live index in place; refuse changes that need a new version."""
        index = self.current()
        diff = self._diff(index)
        blocking = diff.needs_new_version
        if blocking:
            lines = "\n  ".join(change.describe() for change in blocking)
            vector = f"mappings.properties.{VECTOR_FIELD}."
            dimension = any(change.path in (f"{vector}dimension", f"{vector}dims") for change in blocking)
            remedy = (
                "a reindex copies vectors as they are, so it cannot change the dimension of those this index holds: "
                "ingest the sources into a new index (--index NAME) with the new model"
                if dimension and self.engine.count(index) > 0
                else "run `esbridge index reindex` to build a new version with the wanted mapping"
            )
            raise MappingNeedsNewVersion(
                f"the mapping of {self.alias!r} cannot be changed in place:\n  {lines}\n{remedy}"
            )
        if diff.additions:
            self.engine.put_mapping(index, diff.additions)
        return diff

    def reindex(self, *, delete_old: bool = False) -> ReindexOutcome:
        """Build the next version with the wanted mapping, copy every document, then swap the alias.

        The current version refuses writes from before the copy until the alias has moved (or the reindex
        failed); an index that was write-blocked already is left blocked.
        """
        state = self.state()
        if state.current is None:
            raise self._nothing_behind("reindex", "nothing to reindex (`esbridge index create` makes one)")
        old = state.current
        refuse_a_red_source(self.engine, old)
        refuse_another_dimension(self.engine, old, self.params.dimension)
        new = version_name(self.alias, state.latest_version + 1)
        left_out = fields_left_out(self.engine, old)
        server_side = self.server_features.get("reindex", True) and not left_out
        # A reindex killed before it could lift its block leaves it; the next one then finds it blocked.
        lift_block = not write_blocked(self.engine.get_index_settings(old))
        try:
            self._create_version(new, self.body_carrying_model(old))
        except KeyboardInterrupt as exc:
            raise errors.ReindexInterrupted(
                f"nothing was changed: {self.alias} still points to {old}; run `esbridge index reindex` again"
            ) from exc
        swapping = False
        try:
            self.engine.set_write_block(old, True)
            self.engine.refresh(old)  # writes that finished before the block must be visible to the copy
            copied = self.engine.reindex(old, new) if server_side else copy_documents(self.engine, old, new)
            self.engine.refresh(new)
            expected, found = self._count_copied(old, new)
            if found != expected:
                raise errors.EngineResponseError(
                    f"reindex copied {found} of {expected} documents; the alias was not moved",
                    url=self.engine.url,
                    operation="reindex",
                    index=new,
                )
            self._refuse_a_moved_alias(old, new)
            swapping = True
            self.engine.update_aliases(
                [
                    {"remove": {"index": old, "alias": self.alias}},
                    {"add": {"index": new, "alias": self.alias, "is_write_index": True}},
                ]
            )
        except BaseException as exc:
            # A swap whose answer was lost (Ctrl-C, a time-out) may have been made: deleting ``new`` would then take
            # the alias with it.
            moved = alias_on(self.engine, self.alias, new) if swapping else False
            if moved is not False:
                words = moved_words(self.alias, old, new, moved=moved, lift_block=lift_block)
                if isinstance(exc, KeyboardInterrupt):
                    raise errors.ReindexInterrupted(words) from exc
                if moved is None:
                    raise errors.EngineResponseError(
                        f"{describe_failure(exc)}; {words}", url=self.engine.url, operation="reindex", index=self.alias
                    ) from exc
            elif isinstance(exc, errors.ReindexTaskRunning):
                lift = lift_block and not self._copied_by_another(old, new)
                raise kept_for_the_task(self.engine, self.alias, old, new, exc, lift_block=lift) from exc
            elif isinstance(exc, KeyboardInterrupt):
                by_another = None if not lift_block else partial(self._copied_by_another, old, new)
                raise errors.ReindexInterrupted(
                    undo_interrupted(self.engine, self.alias, old, new, by_another)
                ) from exc
            else:
                self._abandon(old, new, lift_block=lift_block and not self._copied_by_another(old, new), cause=exc)
                raise
        try:
            if delete_old:
                self.engine.delete_index(old, missing_ok=True)  # a 404 to the client's retry of a late answer
            elif lift_block:
                self._allow_writes(
                    old,
                    situation=f"{self.alias} now points to {new}, where writes go",
                    remedy=f"{old} refuses writes until its setting index.blocks.write is set to false",
                )
        except KeyboardInterrupt as exc:
            raise errors.ReindexInterrupted(
                moved_words(self.alias, old, new, moved=True, lift_block=lift_block, deleting=delete_old)
            ) from exc
        return ReindexOutcome(
            old=old, new=new, documents=copied, deleted_old=delete_old, server_side=server_side, left_out=left_out
        )

    def _count_copied(self, old: str, new: str) -> tuple[int, int]:
        """Both counts; one that lacks shards (a node died during the copy) may still agree with the other."""
        try:
            return self.engine.count(old), self.engine.count(new)
        except errors.IndexUnavailable as exc:
            raise errors.IndexUnavailable(
                f"the copy cannot be checked, counting {exc.index}: {exc.reason}. {new} is deleted and the alias "
                f"stays on {old}; once every shard is active again, run `esbridge index reindex` again",
                url=self.engine.url,
                operation="reindex",
                index=self.alias,
            ) from exc

    def _copied_by_another(self, old: str, new: str) -> bool:
        """Whether a reindex started after this one is copying ``old`` now (a version after ``new`` exists, the
        alias is still on ``old``): it copies under this reindex's block, and writes let in would be lost."""
        try:
            state = self.state()
        except errors.EsbridgeError:
            return False
        return state.current == old and state.latest_version > (version_of(self.alias, new) or 0)

    def _refuse_a_moved_alias(self, old: str, new: str) -> None:
        """Another reindex, started while this one copied, may have moved the alias already; this copy then
        must not replace that one (the engines' own refusals name neither: two write indices, no such index)."""
        targets = self.engine.alias_targets(self.alias)
        if targets != [old]:
            where = ", ".join(targets) or "no index"
            raise errors.EngineResponseError(
                f"{self.alias} was moved to {where} while this reindex copied {old} (another `esbridge index "
                f"reindex` finished first); {new} is deleted and the alias stays on {where}",
                url=self.engine.url,
                operation="reindex",
                index=self.alias,
            )

    def _abandon(self, old: str, new: str, *, lift_block: bool, cause: BaseException) -> None:
        """Undo a reindex that failed before the alias moved: drop ``new`` and let ``old`` take writes again."""
        try:
            self.engine.delete_index(new, missing_ok=True)
        finally:
            if lift_block:
                self._allow_writes(
                    old,
                    situation=f"the reindex failed ({describe_failure(cause)})",
                    remedy=f"writes to {self.alias} are refused until `esbridge index reindex` is run again",
                )

    def _allow_writes(self, index: str, *, situation: str, remedy: str) -> None:
        """Lift the write block ``reindex`` put on ``index``; when that fails, say what it means."""
        try:
            self.engine.set_write_block(index, False)
        except errors.EsbridgeError as exc:
            raise errors.IndexWriteBlocked(
                f"{situation}, but the write block on {index} could not be lifted ({exc}); {remedy}",
                url=self.engine.url,
                operation="allow writes",
                index=index,
            ) from exc

    def drop(self, version: int | None = None) -> list[str]:
        """Delete one version (not the current one), or the alias and every version; return what was deleted."""
        state = self.state()
        if version is not None:
            name = version_name(self.alias, version)
            if name == state.current:
                raise errors.ConfigError(f"{name} is the current index of {self.alias!r}; drop the whole alias instead")
            if name not in {info.name for info in state.versions}:
                raise errors.IndexNotFound(
                    f"{self.alias!r} has no version {version}", url=self.engine.url, operation="drop", index=name
                )
            # Known to exist: a 404 answers the client library's second send of a delete whose answer was late.
            self.engine.delete_index(name, missing_ok=True)
            return [name]
        deleted = []
        for info in state.versions:
            self.engine.delete_index(info.name, missing_ok=True)
            deleted.append(info.name)
        return deleted
