-- Revert taskpool:taskpool_worker from pg

BEGIN;

REVOKE USAGE ON SCHEMA public FROM taskpool_worker;

-- Drop the role only when no database on the server still grants it anything.
DO $$
BEGIN
    IF NOT EXISTS (
        SELECT FROM pg_catalog.pg_shdepend d
        JOIN pg_catalog.pg_roles r ON r.oid = d.refobjid
        WHERE d.refclassid = 'pg_catalog.pg_authid'::regclass
          AND r.rolname = 'taskpool_worker'
    ) THEN
        DROP ROLE IF EXISTS taskpool_worker;
    END IF;
END
$$;

COMMIT;
