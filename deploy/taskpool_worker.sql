-- Deploy taskpool:taskpool_worker to pg

BEGIN;
SET client_min_messages = 'warning';

-- Roles are cluster-wide: another database on this server may have created it already.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'taskpool_worker') THEN
        CREATE ROLE taskpool_worker NOLOGIN;
    END IF;
END
$$;

COMMENT ON ROLE taskpool_worker IS
    'Workers: may execute the worker-side taskpool functions and nothing else. Grant it to a login role.';

GRANT USAGE ON SCHEMA public TO taskpool_worker;

COMMIT;
