"""spark_checks: arrives with its own issue (see ARCHITECTURE.md)."""
