"""The index schema, its rendering per engine, and versioned index lifecycle."""
