-- Deploy taskpool:_enqueue_specs_generic_plan to pg
-- requires: _enqueue_specs

BEGIN;
SET client_min_messages = 'warning';

-- _enqueue_specs, behind enqueue_task, enqueue_tasks and every follow-up, planned some of its
-- statements again on every call (pg_stat_statements: plans = calls for the final SELECT and
-- the id allocation), as PL/pgSQL does when a plan made for the call's values looks cheaper than
-- the generic one. The generic plans use the same indexes. Measured with pgbench, enqueue_task,
-- 8 clients, interleaved: 1,004 -> 1,224 and 906 -> 961 tasks/s.
-- A later CREATE OR REPLACE of _enqueue_specs must keep this clause (verify checks it).
ALTER FUNCTION _enqueue_specs(jsonb, text) SET plan_cache_mode = force_generic_plan;

COMMIT;
