"""The text analysis esbridge's mapping asks of an engine, and the ``_analyze`` probes that check a build has it.

The definitions are the same for both engines: their analysis modules (OpenSearch's ``analysis-common``,
Elasticsearch's ``analysis-common``) accept them alike. They live here rather than beside the field
schema (``esbridge.mappings.schema``, which uses them) so that an engine adapter can probe for them
without depending on the mappings layer above it.
"""

from __future__ import annotations

from esbridge.engines.base import JSON

ENGLISH = "english"
"""The analyzer of the text fields: English stemming and stop words, from the analysis module."""

LANGUAGE_ANALYZERS = (ENGLISH,)
"""Analyzers the mapping names without defining them: they come with the analysis module."""


def analysis() -> JSON:
    """Analyzers shared by both engines (their analysis modules accept the same definitions)."""
    return {
        "analyzer": {
            # `getUserName`, `user_name` and `os.path.join` are kept whole and split into their parts.
            "esbridge_code": {
                "type": "custom",
                "tokenizer": "esbridge_code_tokens",
                "filter": ["esbridge_identifier_parts", "lowercase"],
            },
            "esbridge_path": {"type": "custom", "tokenizer": "esbridge_path_tokens", "filter": ["lowercase"]},
        },
        "tokenizer": {
            "esbridge_code_tokens": {"type": "pattern", "pattern": "[^\\w.$]+"},
            "esbridge_path_tokens": {"type": "pattern", "pattern": "[/\\\\._\\-\\s]+"},
        },
        "filter": {
            "esbridge_identifier_parts": {
                "type": "word_delimiter_graph",
                "preserve_original": True,
                "split_on_case_change": True,
                "split_on_numerics": False,
                "stem_english_possessive": False,
            }
        },
    }


def analysis_probes() -> list[JSON]:
    """``_analyze`` bodies that, between them, use every analysis component the full mapping names.

    A server that answers all of them can create the full mapping, whichever module or plugin provides
    the components; one that rejects any needs ``core`` analysis. (A unit test checks that the mapping
    names no analyzer besides these, its own definitions and the built-in ones.)
    """
    shared = analysis()
    bodies: list[JSON] = [{"analyzer": name, "text": "probe"} for name in sorted(LANGUAGE_ANALYZERS)]
    for _, definition in sorted(shared["analyzer"].items()):
        bodies.append(
            {
                "tokenizer": shared["tokenizer"].get(definition["tokenizer"], definition["tokenizer"]),
                "filter": [shared["filter"].get(step, step) for step in definition["filter"]],
                "text": "probe",
            }
        )
    return bodies
