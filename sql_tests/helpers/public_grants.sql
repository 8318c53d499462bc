-- tests.public_grants: what PUBLIC (every role of the server, present and future) may use in
-- the project's schemas: functions it may execute (a function made without REVOKE ... FROM
-- PUBLIC, ACL NULL, counts), relations with a privilege granted to PUBLIC. Objects of an
-- extension (pgTAP, pg_cron) are the extension's, and the sqitch and tests schemas are not the
-- project's. Loaded into both pgTAP databases (core alone; core and crawler).
CREATE SCHEMA IF NOT EXISTS tests;

CREATE OR REPLACE FUNCTION tests.public_grants()
RETURNS TABLE (kind text, object text, privileges text)
LANGUAGE sql
STABLE
AS $$
    WITH project_schemas AS (
        SELECT n.oid
        FROM pg_namespace n
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'sqitch', 'tests')
          AND n.nspname NOT LIKE 'pg\_%'
          AND NOT EXISTS (SELECT FROM pg_depend d
                          WHERE d.classid = 'pg_namespace'::regclass AND d.objid = n.oid AND d.deptype = 'e')
    )
    SELECT 'function', p.oid::regprocedure::text, 'EXECUTE'
    FROM pg_proc p
    WHERE p.pronamespace IN (SELECT oid FROM project_schemas)
      AND NOT EXISTS (SELECT FROM pg_depend d
                      WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
      AND EXISTS (SELECT FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                  WHERE a.grantee = 0)
    UNION ALL
    SELECT 'relation', c.oid::regclass::text,
           (SELECT string_agg(a.privilege_type, ', ' ORDER BY a.privilege_type)
            FROM aclexplode(coalesce(c.relacl, acldefault(CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END::"char",
                                                          c.relowner))) a
            WHERE a.grantee = 0)
    FROM pg_class c
    WHERE c.relnamespace IN (SELECT oid FROM project_schemas)
      AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
      AND NOT EXISTS (SELECT FROM pg_depend d
                      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
      AND EXISTS (SELECT FROM aclexplode(coalesce(c.relacl, acldefault(CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END::"char",
                                                                       c.relowner))) a
                  WHERE a.grantee = 0)
    ORDER BY 1, 2;
$$;
