"""pyworker: the thin Python worker of taskpool.

It claims tasks through the SQL functions that the Sqitch plan deploys, runs the role's handler,
heartbeats while it runs and records the result; the queue's logic stays in PL/pgSQL.
"""

# The one statement of the package's version: pyproject.toml reads it (dynamic = ["version"]).
__version__ = "0.6.0"
