"""The test kit of tests/, bench/ and faults/: one copy of the plumbing the three share.

- env: the server under test (server_url), another database on it (url_for), the libpq
  environment for tools run as subprocesses (libpq), the repository root;
- databases: the Sqitch plan deployed once into a template database, copied per test or run
  (built on pyworker.testing.database, the user-facing `taskpool` fixture's own code);
- waiting: wait_until, with a deadline and the caller's own failure;
- fleet: `pyworker` processes (workers, the scheduler) with their logs: start, stop gracefully,
  signal, kill (with the commands they run), restart, exit codes;
- recorder: the reconnecting connection a test handler records what it did through.

Not shipped in the wheel (pyproject.toml packages only pyworker*); pyworker never imports it.
"""
