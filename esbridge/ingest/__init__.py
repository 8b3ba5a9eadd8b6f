"""Reading sources (Markdown vaults, JSONL, BEIR) into documents, chunks and problems."""
