-- Deploy taskpool:set_retention_policy to pg
-- requires: retention_policies

BEGIN;
SET client_min_messages = 'warning';

-- set_retention_policy
-- Changes a retention policy: how long it keeps, whether it runs, its batch size, the task statuses it prunes; omitted ones keep their value.
CREATE FUNCTION set_retention_policy(
    name       text,
    keep       interval DEFAULT NULL,
    enabled    boolean  DEFAULT NULL,
    batch_size integer  DEFAULT NULL,
    statuses   text[]   DEFAULT NULL)
RETURNS retention_policies
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT keep FROM set_retention_policy('completed_tasks', keep := '3 days');
--   SELECT enabled FROM set_retention_policy('silent_workers', enabled := false);
--   SELECT statuses FROM set_retention_policy('failed_tasks', statuses := ARRAY['failed']);
-- Every value is checked first, each refusal naming the value (22023), and nothing changes then.
DECLARE
    v_policy retention_policies;
    v_known  text;
BEGIN
    IF set_retention_policy.name IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'the policy''s name is required';
    END IF;
    SELECT * INTO v_policy FROM retention_policies p WHERE p.name = set_retention_policy.name FOR UPDATE;
    IF NOT FOUND THEN
        SELECT string_agg(p.name, ', ' ORDER BY p.name) INTO v_known FROM retention_policies p;
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown retention policy %L', left(set_retention_policy.name, 100)),
            HINT = format('The policies: %s.', coalesce(v_known, 'none'));
    END IF;
    IF set_retention_policy.keep <= interval '0' OR set_retention_policy.keep > interval '100 years' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('keep must be a positive interval of at most 100 years, not %s', set_retention_policy.keep);
    END IF;
    IF set_retention_policy.batch_size NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('batch_size must be from 1 to 100000, not %s', set_retention_policy.batch_size);
    END IF;
    IF set_retention_policy.statuses IS NOT NULL THEN
        IF v_policy.statuses IS NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('retention policy %s does not prune tasks: it takes no statuses', v_policy.name);
        END IF;
        IF cardinality(set_retention_policy.statuses) = 0
           OR NOT set_retention_policy.statuses <@ ARRAY['completed', 'failed', 'cancelled']
           OR array_position(set_retention_policy.statuses, NULL) IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('statuses must be some of completed, failed and cancelled, not %s',
                                 set_retention_policy.statuses),
                HINT = 'Only finished tasks are pruned.';
        END IF;
    END IF;

    UPDATE retention_policies p
    SET keep = coalesce(set_retention_policy.keep, p.keep),
        enabled = coalesce(set_retention_policy.enabled, p.enabled),
        batch_size = coalesce(set_retention_policy.batch_size, p.batch_size),
        statuses = coalesce(set_retention_policy.statuses, p.statuses)
    WHERE p.name = v_policy.name
    RETURNING * INTO v_policy;
    RETURN v_policy;
END;
$$;

COMMENT ON FUNCTION set_retention_policy(text, interval, boolean, integer, text[]) IS $$Changes a retention policy: how long it keeps, whether it runs, its batch size, the task statuses it prunes; omitted ones keep their value.
Example:
  SELECT keep FROM set_retention_policy('completed_tasks', keep := '3 days');$$;

REVOKE ALL ON FUNCTION set_retention_policy(text, interval, boolean, integer, text[]) FROM PUBLIC;

COMMIT;
