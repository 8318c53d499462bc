"""The failover suite (issue 30): the fleet on a real Patroni pair, through failovers (`make faults-ha`).

Each scenario starts its own pair (testkit/patroni.py: etcd, two PostgreSQL 15 nodes under
Patroni, HAProxy on Patroni's `/primary`), deploys the plan into it, and runs 2 worker processes
× concurrency 8 on it (the fault suite's harness, faults/harness.py) draining thousands of tasks
while a producer enqueues alongside; then injects one failover. What is acknowledged is recorded
outside the database, where no failover reaches it: the producer keeps each acknowledged
enqueue's id and key, the workers' logs say which completions were acknowledged, and the handler
(faults/ha/handlers.py) writes each execution to a file of its worker's. The checker
(faults/ha/checker.py) compares those with what the new primary holds; the report is one table
(faults/report.py), written to results/ as the fault suite's is.

Modules: handlers, checker, scenarios (the failovers and how one is run), __main__ (the command).
"""
