"""The operator's room: the `pyworker` command line by noun, its output, the schema installer,
pg_cron, the scheduler loop and the supervisor. It may import the core and the client; the core
never imports it (tests/test_import_graph.py)."""
