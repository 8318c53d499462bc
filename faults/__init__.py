"""The fault and abuse suite: the real system under injected faults (issue 7).

`python -m faults` (or `make faults`) runs every scenario in its full form; `--quick` runs the
short form that `make test` runs through tests/test_faults.py. Each scenario gets a fresh copy of
a deployed database, real `pyworker` processes (handlers: faults.handlers, which record every
execution through their own connection), the scheduler's tick, and faults injected from outside
(signals, pg_terminate_backend, a PostgreSQL restart, the database clock). A checker reads what
happened from the database and the worker logs; the report is one table (results/).

Modules: harness (a scenario's world, on the test kit testkit/), handlers (the recording handlers),
checker (the invariants), report (the table), scenarios/ (one module per family of faults).
"""
