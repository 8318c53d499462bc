-- Deploy taskpool:_task_spec_problem to pg
-- requires: task_spec
-- requires: _task_headers_problem

BEGIN;
SET client_min_messages = 'warning';

-- _task_spec_problem
-- What is wrong with a typed task spec, as the problem _raise_task_spec_problem words; NULL when
-- it may be enqueued. The first failing check, in a fixed order.
-- payload_bytes is the payload's JSON text in bytes (the caller turns it into text once); role
-- the spec's task_roles row (all NULL when there is none); store_found whether its
-- dispensary_id names a store. A SQL function of one expression, so that the planner inlines it
-- into _enqueue's statements and enqueue_task's, and drops the checks of fields given as
-- constant NULLs (each check passes a NULL field).
-- What a worker can load (pyworker: Python's json, which refuses integers of more than 4300
-- digits and recurses once per level): nesting up to 100 levels, numbers of up to 1000 digits
-- before the decimal point. The walks only run on payloads long enough to break a bound: nesting
-- deeper than 100 takes more than 200 characters of JSON, a number of 1001 digits more than 1000.
CREATE FUNCTION _task_spec_problem(spec task_spec, payload_bytes integer, role task_roles, store_found boolean)
RETURNS text
LANGUAGE sql
STABLE
AS $$
    SELECT CASE
        WHEN (spec).role IS NULL THEN 'no_role'
        WHEN (role).role IS NULL THEN 'unknown_role'
        WHEN jsonb_typeof((spec).payload) NOT IN ('object', 'null') THEN 'payload_not_object'
        WHEN payload_bytes > (role).max_payload_bytes THEN 'payload_too_large'
        WHEN payload_bytes > 200
             AND jsonb_path_exists((spec).payload, 'strict $.**{100} ? (@.type() == "object" || @.type() == "array")')
             THEN 'payload_too_deep'
        WHEN payload_bytes > 1000
             AND jsonb_path_exists((spec).payload, 'strict $.** ? (@ >= $limit || @ <= -$limit)',
                                   jsonb_build_object('limit', '1e1000'::numeric))
             THEN 'payload_number_too_big'
        WHEN (spec).dispensary_id IS NOT NULL AND NOT store_found THEN 'unknown_dispensary'
        WHEN (role).requires_store AND (spec).dispensary_id IS NULL THEN 'dispensary_required'
        WHEN (spec).priority NOT BETWEEN -100 AND 100 THEN 'priority_out_of_range'
        WHEN (spec).max_retries NOT BETWEEN 0 AND 1000 THEN 'max_retries_out_of_range'
        -- Only times of our era: infinities and years past 9999 schedule nothing sane.
        WHEN (spec).scheduled_for NOT BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'
             THEN 'scheduled_for_invalid'
        WHEN length((spec).dedupe_key) NOT BETWEEN 1 AND 255 THEN 'dedupe_key_invalid'
        WHEN length((spec).platform) NOT BETWEEN 1 AND 100 THEN 'platform_invalid'
        WHEN (spec).headers IS NOT NULL AND _task_headers_problem((spec).headers) IS NOT NULL THEN 'headers_invalid'
        -- In seconds (more than 0, at most a year of 365.25 days), not by interval comparison,
        -- which counts a year as 360 days.
        WHEN NOT (extract(epoch FROM (spec).backoff_base) > 0 AND extract(epoch FROM (spec).backoff_base) <= 31557600)
             THEN 'backoff_base_invalid'
        WHEN NOT (extract(epoch FROM (spec).backoff_cap) > 0 AND extract(epoch FROM (spec).backoff_cap) <= 31557600)
             THEN 'backoff_cap_invalid'
        WHEN extract(epoch FROM (spec).backoff_cap) < extract(epoch FROM (spec).backoff_base) THEN 'backoff_cap_below_base'
        -- Last, behind one test, so that a spec without them pays for that test alone.
        WHEN (spec).dedupe_window IS NOT NULL OR (spec).dedupe_by_content THEN
            CASE
            WHEN (spec).dedupe_by_content AND (spec).dedupe_key IS NOT NULL THEN 'dedupe_key_and_content'
            -- 1 second to 366 days
            WHEN extract(epoch FROM (spec).dedupe_window) NOT BETWEEN 1 AND 31622400 THEN 'dedupe_window_out_of_range'
            WHEN (spec).dedupe_window IS NOT NULL AND (spec).dedupe_key IS NULL
                 AND NOT coalesce((spec).dedupe_by_content, false) THEN 'dedupe_window_without_key'
            END
    END
$$;

REVOKE ALL ON FUNCTION _task_spec_problem(task_spec, integer, task_roles, boolean) FROM PUBLIC;

COMMIT;
