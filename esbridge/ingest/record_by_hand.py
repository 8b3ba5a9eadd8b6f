"""``esbridge index record-model``: record the configured model in every index behind a name, and in the index
template a data stream's or an alias's rollovers take their mapping from.

A name may stand for several indices: an alias with an old version added back, an alias rolled over by ILM or
ISM, a data stream after a rollover. The search checks each of them (``esbridge.query.model_check``), so each
must record the model: every one that records none, or (once the operator agreed) another model, gets it in its
mapping ``_meta``, the rest of ``_meta`` kept. Nothing is recorded when one of them maps vectors of another
dimension than the model makes, or when they record different models among themselves: the model cannot have
made all of their vectors. A data stream's next backing index, and the index an alias is rolled over to, take
their ``_meta`` from an index template, not from the older indices; the template is changed only when asked
(``in_template``), else the operator is told what a rollover would bring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from esbridge import errors
from esbridge.attach.guard import mapped_dimension
from esbridge.embeddings.identity import PENDING_KEY, ModelIdentity, recorded_identity, with_identity
from esbridge.engines.base import Engine, IndexTemplates
from esbridge.ingest.model_record import record_model


@dataclass(frozen=True)
class RecordPlan:
    """What recording a model by hand changes in the indices behind a name."""

    already: tuple[str, ...] = ()
    """the indices that record the model already"""
    unrecorded: tuple[str, ...] = ()
    replaced: tuple[tuple[str, ModelIdentity], ...] = ()
    """the indices that record another model, with it: recorded only once the operator agreed"""

    @property
    def to_record(self) -> list[str]:
        return sorted([*self.unrecorded, *(index for index, _ in self.replaced)])


def plan_record(
    name: str, mappings: Mapping[str, Mapping[str, Any]], identity: ModelIdentity, vector: str | None
) -> RecordPlan:
    """Which of the indices behind ``name`` (their mappings by index name) to record ``identity`` in; an error
    naming each index when ``identity`` cannot have made all of their vectors."""
    if not mappings:
        raise errors.ConfigError(f"no index matches {name!r}; nothing was changed")
    indices = sorted(mappings)
    dimensions = {index: _dimension(mappings[index], vector, index, len(indices)) for index in indices}
    wrong = {index: dimension for index, dimension in dimensions.items() if dimension not in (None, identity.dimension)}
    if wrong and len(indices) == 1:
        raise errors.ConfigError(
            f"the model {identity.name} makes {identity.dimension}-dimensional vectors but index {name} maps "
            f"{wrong[indices[0]]}: it cannot have made them; nothing was changed"
        )
    if wrong:
        held = "; ".join(f"{index}: {_dimensions(dimension)}" for index, dimension in dimensions.items())
        raise errors.ConfigError(
            f"the model {identity.name} makes {identity.dimension}-dimensional vectors but not every index behind "
            f"{name!r} maps that dimension ({held}): it cannot have made all of their vectors; nothing was changed"
        )
    records = {index: recorded_identity(mappings[index], index) for index in indices}
    others = [(index, model) for index, model in records.items() if model is not None and model != identity]
    if any(model != others[0][1] for _, model in others):
        held = "; ".join(f"{index}: {_record(model)}" for index, model in records.items())
        raise errors.ConfigError(
            f"the indices behind {name!r} record different models ({held}): one model cannot have made all of "
            "their vectors. Record a model in one index by its own name (--index INDEX) where its record is wrong, "
            "or re-embed the indices whose vectors another model made; nothing was changed"
        )
    return RecordPlan(
        already=tuple(index for index, model in records.items() if model == identity),
        unrecorded=tuple(index for index, model in records.items() if model is None),
        replaced=tuple(others),
    )


def _dimension(mapping: Mapping[str, Any], vector: str | None, index: str, among: int) -> int | None:
    if vector is None:
        return None
    try:
        return mapped_dimension(mapping, vector)
    except errors.ConfigError as exc:
        if among == 1:
            raise
        raise errors.ConfigError(f"index {index}: {exc}; nothing was changed") from exc


def _dimensions(dimension: int | None) -> str:
    return "no vector field mapped" if dimension is None else f"{dimension}-dimensional vectors"


def _record(model: ModelIdentity | None) -> str:
    return "no model recorded" if model is None else model.describe()


@dataclass
class Recorded:
    """What ``record_by_hand`` did (``done``) and what the operator should know (``warnings``)."""

    done: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Rollover:
    """The index template the next index behind a name is made from, and how messages call that index."""

    template: str
    takes: str
    carries: str


def _rollover(templates: IndexTemplates, name: str, in_template: bool, outcome: Recorded) -> _Rollover | None:
    """The template a rollover of data stream or alias ``name`` makes its next index from; an error, with
    ``in_template``, when there is none to record in; a warning without it when the next index will not carry
    the record and no template can take it."""
    stream = templates.data_stream_template(name)
    if stream is not None:
        return _Rollover(
            stream, f"data stream {name}'s next backing index", f"the next backing indices of data stream {name}"
        )
    try:
        found = templates.alias_template(name)
    except errors.EngineError as exc:
        if in_template:
            raise
        outcome.warnings.append(
            f"the index template the next rollover of {name} would make its index from was not looked for ({exc}): "
            "if one does, that index records no model until it is recorded there too"
        )
        return None
    if found is None:
        if in_template:
            raise errors.ConfigError(
                f"--in-template: {name} is neither a data stream nor an alias whose write index a rollover names "
                "(<prefix>-<digits>), so no index template makes its next index; nothing was changed"
            )
        return None
    if found.template is None:
        if in_template:
            raise errors.ConfigError(f"--in-template: {found.refusal}; nothing was changed")
        if found.matched:
            outcome.warnings.append(
                f"the next rollover of alias {name} makes {found.next_index} without the record: {found.refusal}"
            )
        return None
    return _Rollover(
        found.template,
        f"alias {name}'s next index ({found.next_index})",
        f"the indices alias {name} is rolled over to ({found.next_index} next)",
    )


def record_by_hand(
    engine: Engine,
    name: str,
    identity: ModelIdentity,
    vector: str | None,
    *,
    in_template: bool,
    confirm: Callable[[str], None],
) -> Recorded:
    """Record ``identity`` in every index behind ``name`` (see the module docstring); ``confirm`` raises when the
    operator does not agree to replace another model's record."""
    plan = plan_record(name, engine.get_mappings(name), identity, vector)
    outcome = Recorded()
    templates = engine if isinstance(engine, IndexTemplates) else None
    rollover = _rollover(templates, name, in_template, outcome) if templates is not None else None
    template_record = None
    if templates is not None and rollover is not None:
        template_record = recorded_identity(templates.resolved_template_mappings(rollover.template), rollover.template)
    replacing = [f"{index} records {model.describe()}" for index, model in plan.replaced]
    if in_template and rollover is not None and template_record is not None and template_record != identity:
        replacing.append(f"index template {rollover.template} records {template_record.describe()}")
    if replacing:
        which = "it" if len(replacing) == 1 else "them"
        confirm(
            f"{'; '.join(replacing)}; replace {which} with {identity.describe()} without re-embedding "
            "(only right if that record is wrong)?"
        )
    if templates is not None and rollover is not None and template_record != identity:
        if in_template:  # first: a rollover from now on carries the record
            record_in_template(templates, rollover.template, identity)
            outcome.done.append(
                f"index template {rollover.template} now records {identity.name}: {rollover.carries} carry it"
            )
        else:
            held = "no model" if template_record is None else template_record.describe()
            outcome.warnings.append(
                f"{rollover.takes} takes its mapping _meta from index template {rollover.template}, which records "
                f"{held}: the search refuses {name} after its next rollover until that index records {identity.name}. "
                "--in-template records it in the template too (its mapping _meta, nothing else changed)"
            )
    for index in plan.to_record:
        record_model(engine, index, identity)
    outcome.done.append(_summary(name, plan, identity))
    return outcome


def _summary(name: str, plan: RecordPlan, identity: ModelIdentity) -> str:
    recorded = plan.to_record
    if not recorded:
        return f"{name} already records {identity.describe()}"
    if not plan.already and len(recorded) == 1:
        return f"{name} now records {identity.describe()}"
    already = f"; {', '.join(plan.already)} already did" if plan.already else ""
    return f"{', '.join(recorded)} behind {name} now record {identity.describe()}{already}"


def record_in_template(engine: IndexTemplates, template: str, identity: ModelIdentity) -> None:
    """Record ``identity`` in index template ``template``'s own mapping ``_meta``, the rest of it kept; an error
    when an index the template makes would still record another model."""
    body = engine.get_index_template(template)
    inner = dict(body.get("template") or {})
    mappings = dict(inner.get("mappings") or {})
    meta = {key: value for key, value in (mappings.get("_meta") or {}).items() if key != PENDING_KEY}
    body["template"] = {**inner, "mappings": {**mappings, "_meta": with_identity(meta, identity)}}
    engine.put_index_template(template, body)
    made = recorded_identity(engine.resolved_template_mappings(template), template)
    if made != identity:
        raise errors.ConfigError(
            f"index template {template} now records {identity.name} in its mapping _meta, but an index it makes "
            f"would record {_record(made)}: the engine merges into it the record of a component template it is "
            f"composed of ({', '.join(body.get('composed_of') or [])}); record the model there too, or remove it there"
        )
