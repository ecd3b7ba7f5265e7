"""The `kafkaspec` command-line tool."""
