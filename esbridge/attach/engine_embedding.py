"""Whether an engine can embed query text itself, from its probed capabilities: a pure function.

OpenSearch embeds with a model deployed by ML Commons and searched with the ``neural`` query of the
neural-search plugin; Elasticsearch with an inference endpoint (the ``x-pack-inference`` module: the
``semantic`` query on ``semantic_text`` fields) or a trained model (``x-pack-ml``: kNN's
``query_vector_builder``). Whether the named model is deployed is learnt from the first search: a failure
then turns kNN off for that search with the engine's reason as a warning.
"""

from __future__ import annotations

from esbridge.config.fields import FieldMap
from esbridge.engines.capabilities import NEURAL_SEARCH_PLUGIN, Capabilities, parse_version

ML_PLUGIN = "opensearch-ml"
INFERENCE_MODULE = "x-pack-inference"
ML_MODULE = "x-pack-ml"

NEURAL_FILTER_SINCE = "2.12.0"
"""neural-search's ``neural`` query takes a ``filter`` from 2.12 (OpenSearch's neural query documentation)."""
SEMANTIC_QUERY_SINCE = "8.15.0"
"""Elasticsearch's ``semantic`` query and ``semantic_text`` field are generally available from 8.15."""


def engine_embedding_problem(capabilities: Capabilities, fields: FieldMap) -> str | None:
    """Why the engine cannot embed this index's queries, or None when it can."""
    plugins = capabilities.plugins
    if capabilities.distribution == "opensearch":
        missing = [name for name in (NEURAL_SEARCH_PLUGIN, ML_PLUGIN) if name not in plugins]
        if missing:
            return f"the engine cannot embed queries: plugin {', '.join(missing)} absent"
        neural = plugins[NEURAL_SEARCH_PLUGIN]
        if parse_version(neural) < parse_version(NEURAL_FILTER_SINCE):
            return f"neural-search {neural} has no filter in neural queries (needs {NEURAL_FILTER_SINCE})"
        return None
    if capabilities.distribution == "elasticsearch":
        module = INFERENCE_MODULE if fields.semantic_text else ML_MODULE
        if plugins and module not in plugins:
            return f"the engine cannot embed queries: module {module} absent"
        if fields.semantic_text and parse_version(capabilities.version) < parse_version(SEMANTIC_QUERY_SINCE):
            return f"Elasticsearch {capabilities.version} has no semantic query (needs {SEMANTIC_QUERY_SINCE})"
        return None
    return f"the {capabilities.distribution} engine does not embed queries"
