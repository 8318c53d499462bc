-- Deploy taskpool:_check_platform to pg
-- requires: platform_governance
-- requires: dispensaries
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- _check_platform
-- Raises unless the platform is one taskpool knows: a row of platform_governance, or named by a store or a task.
CREATE FUNCTION _check_platform(platform text)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = public, pg_temp
AS $$
-- For disable_platform and enable_platform: a platform has no table of its own, and a typo must
-- not create a governance row of a platform nothing uses. The tasks are read last (no index on
-- their platform), and only when neither a governance row nor a store names it.
BEGIN
    IF _check_platform.platform IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'platform is required';
    END IF;
    IF EXISTS (SELECT FROM platform_governance g WHERE g.platform = _check_platform.platform)
       OR EXISTS (SELECT FROM dispensaries d WHERE d.platform = _check_platform.platform)
       OR EXISTS (SELECT FROM worker_tasks t WHERE t.platform = _check_platform.platform) THEN
        RETURN;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = '22023',
        MESSAGE = format('unknown platform %L: no store, task or platform_governance row names it',
                         _check_platform.platform),
        HINT = coalesce('Known platforms: ' || (SELECT string_agg(k.platform, ', ' ORDER BY k.platform)
                                                FROM (SELECT g.platform FROM platform_governance g
                                                      UNION SELECT d.platform FROM dispensaries d
                                                      WHERE d.platform IS NOT NULL) AS k) || '.',
                        'No store or platform_governance row names a platform yet.');
END;
$$;

REVOKE ALL ON FUNCTION _check_platform(text) FROM PUBLIC;

COMMIT;
