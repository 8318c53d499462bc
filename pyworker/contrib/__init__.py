"""Optional extras, each behind a pip extra or an entry point: the dashboard, external commands
as handlers, tracing. The core reaches them only through the hooks it defines
(tests/test_import_graph.py)."""
