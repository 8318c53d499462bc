-- Deploy taskpool:v_xmin_horizon to pg
-- requires: v_xmin_horizon@v0.5.0

BEGIN;
SET client_min_messages = 'warning';

-- v_xmin_horizon
-- Health: what holds back the xmin horizon (a long transaction, a prepared one), oldest first.
-- A session is named by its pid, user, application and state, never by its SQL: the view runs
-- with its owner's right to read every session's query text, which may hold a password (ALTER
-- ROLE ... PASSWORD) or another application's data, and whoever may read the view (the
-- dashboard, with no log-in by default) must not see it. (CREATE OR REPLACE cannot drop a
-- column; taskpool_health() and taskpool_metrics() are PL/pgSQL, so nothing depends on it.)
DROP VIEW v_xmin_horizon;

CREATE VIEW v_xmin_horizon AS
-- Dead task rows cannot be vacuumed while a snapshot older than them lives: every update of the
-- pool (each claim, heartbeat and completion) leaves one, so a transaction left open for minutes
-- slows every claim. The first row names the culprit: end it (pg_terminate_backend(pid)).
SELECT 'session'::text AS holder,
       a.pid,
       a.usename::text AS user_name,
       a.application_name,
       a.client_addr::text AS client_addr,
       a.state,
       a.xact_start,
       clock_timestamp() - a.xact_start AS transaction_age,
       age(coalesce(a.backend_xmin, a.backend_xid)) AS xmin_age
FROM pg_stat_activity a
WHERE a.datname = current_database()
  AND coalesce(a.backend_xmin, a.backend_xid) IS NOT NULL
  AND a.pid <> pg_backend_pid()
UNION ALL
SELECT 'prepared transaction', NULL, p.owner::text, p.gid, NULL, 'prepared', p.prepared,
       clock_timestamp() - p.prepared, age(p.transaction)
FROM pg_prepared_xacts p
WHERE p.database = current_database()
ORDER BY xmin_age DESC NULLS LAST;

COMMENT ON VIEW v_xmin_horizon IS
    'Sessions and prepared transactions of this database holding back vacuum, oldest snapshot first: each session by its pid, user, application and state, never its query text.';

COMMIT;
