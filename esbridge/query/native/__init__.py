"""Server-side (native) hybrid search: translating fusion settings, building native request bodies,
and managing OpenSearch search pipelines."""
