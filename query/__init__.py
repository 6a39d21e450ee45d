"""The DuckDB memory store: schema, ingest, the lexical and semantic arms, and recall()."""
