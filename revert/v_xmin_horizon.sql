-- Revert taskpool:v_xmin_horizon from pg

-- Back to the view of v0.5.0, with each session's last_query.

BEGIN;
SET client_min_messages = 'warning';

DROP VIEW v_xmin_horizon;

CREATE VIEW v_xmin_horizon AS
SELECT 'session'::text AS holder,
       a.pid,
       a.usename::text AS user_name,
       a.application_name,
       a.client_addr::text AS client_addr,
       a.state,
       a.xact_start,
       clock_timestamp() - a.xact_start AS transaction_age,
       age(coalesce(a.backend_xmin, a.backend_xid)) AS xmin_age,
       a.query AS last_query
FROM pg_stat_activity a
WHERE a.datname = current_database()
  AND coalesce(a.backend_xmin, a.backend_xid) IS NOT NULL
  AND a.pid <> pg_backend_pid()
UNION ALL
SELECT 'prepared transaction', NULL, p.owner::text, p.gid, NULL, 'prepared', p.prepared,
       clock_timestamp() - p.prepared, age(p.transaction), NULL
FROM pg_prepared_xacts p
WHERE p.database = current_database()
ORDER BY xmin_age DESC NULLS LAST;

COMMENT ON VIEW v_xmin_horizon IS
    'Sessions and prepared transactions of this database holding back vacuum, oldest snapshot first.';

COMMIT;
