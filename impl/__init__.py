"""impl: arrives with its own issue (see ARCHITECTURE.md)."""
