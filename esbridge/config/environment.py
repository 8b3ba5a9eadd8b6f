"""``ESBRIDGE_*`` environment variables that no setting reads.

pydantic-settings passes a variable to the settings only when it names a top-level setting
(``ESBRIDGE_URL``) or lies under a section (``ESBRIDGE_PIPELINE__...``, where the section refuses unknown
keys itself) or a table (``ESBRIDGE_ROUTING__<category>``, ``ESBRIDGE_FIELDS__<index>__...``); any other
``ESBRIDGE_*`` variable is dropped without a word, so a typo such as ``ESBRIDGE_TOP_N_MAX`` looks like a
setting that had no effect. These are named, with the nearest known name; so is the nearest known setting
to one a section refuses.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TypeGuard, get_args, get_origin

from pydantic import BaseModel

from esbridge.errors import SettingsWarning

PREFIX = "ESBRIDGE_"
NESTED = "__"

OTHER_READERS = frozenset(
    {
        "ESBRIDGE_CHECK_ENGINES",
        "ESBRIDGE_ELASTIC_PASSWORD",
        "ESBRIDGE_ENGINES",
        "ESBRIDGE_ENGINES_DIR",
        "ESBRIDGE_ENGINES_FRESH",
        "ESBRIDGE_ENGINES_TIMEOUT",
        "ESBRIDGE_MAVEN_ARGS",
        "ESBRIDGE_MAVEN_REPO",
        "ESBRIDGE_NEURAL_PORT",
    }
)
"""Variables of scripts/, .ci/run and docker/compose.yaml, which no setting reads and which are not typos."""
OTHER_READER_PREFIXES = ("ESBRIDGE_TEST_", "ESBRIDGE_OPENSEARCH_", "ESBRIDGE_ELASTICSEARCH_")
"""The test suite's engine URLs and scripts/engines' per-engine variables."""


def setting_variables(model: type[BaseModel], prefix: str = PREFIX) -> Iterator[str]:
    """The variable of every setting and section: ESBRIDGE_URL, ESBRIDGE_PIPELINE, ESBRIDGE_PIPELINE__TOP_N_MAX, ..."""
    for name, field in model.model_fields.items():
        variable = prefix + name.upper()
        yield variable
        if _is_section(field.annotation):
            yield from setting_variables(field.annotation, variable + NESTED)


def unknown_variables(
    environ: Mapping[str, str], model: type[BaseModel], also_read: Collection[str] = ()
) -> dict[str, str | None]:
    """Each ``ESBRIDGE_*`` variable of ``environ`` that nothing reads -> the nearest known variable, if any.

    ``also_read``: variables esbridge reads besides the model's (the config file, short names).
    """
    reached = {PREFIX + name.upper() for name in model.model_fields}
    sections = tuple(  # sections and tables ([routing], [fields.<index>]): pydantic-settings reads any key under them
        PREFIX + name.upper() + NESTED
        for name, field in model.model_fields.items()
        if _is_section(field.annotation) or get_origin(field.annotation) is dict
    )
    known = {*setting_variables(model), *also_read}
    unknown: dict[str, str | None] = {}
    for variable in environ:
        name = variable.upper()  # pydantic-settings matches names case-insensitively
        if not name.startswith(PREFIX) or name in reached or name.startswith(sections) or name in known:
            continue
        if name in OTHER_READERS or name.startswith(OTHER_READER_PREFIXES):
            continue
        unknown[variable] = _nearest(name, known)
    return unknown


def warn_unknown_variables(environ: Mapping[str, str], model: type[BaseModel], also_read: Collection[str] = ()) -> None:
    for variable, nearest in sorted(unknown_variables(environ, model, also_read).items()):
        hint = f"; did you mean {nearest}?" if nearest else ""
        warnings.warn(
            f"environment variable {variable} is not a setting and is ignored{hint}", SettingsWarning, stacklevel=3
        )


def nearest_setting(model: type[BaseModel], keys: Sequence[str]) -> str | None:
    """The known setting nearest to the unknown one at ``keys``, e.g. pipeline.top_n_maxx -> pipeline.top_n_max."""
    section: type[BaseModel] = model
    within_table = False
    for key in keys[:-1]:
        if within_table:  # the key of a table of sections (``fields.<index>``): any name is known
            within_table = False
            continue
        field = section.model_fields.get(key)
        annotation = field.annotation if field is not None else None
        if get_origin(annotation) is dict and _is_section(value := get_args(annotation)[1]):
            section, within_table = value, True
            continue
        if not _is_section(annotation):
            return None
        section = annotation
    close = difflib.get_close_matches(keys[-1], list(section.model_fields), n=1) if keys else []
    return ".".join([*keys[:-1], close[0]]) if close else None


def _nearest(name: str, known: Collection[str]) -> str | None:
    # Compared without the shared prefix, which would make every pair look alike.
    suffixes = {variable.removeprefix(PREFIX): variable for variable in known}
    close = difflib.get_close_matches(name.removeprefix(PREFIX), list(suffixes), n=1)
    return suffixes[close[0]] if close else None


def _is_section(annotation: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
