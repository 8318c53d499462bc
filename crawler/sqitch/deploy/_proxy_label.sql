-- Deploy taskpool_crawler:_proxy_label to pg
-- requires: proxy_label_masks_userinfo

-- _proxy_label's home: its live body, unchanged from proxy_label_masks_userinfo.
-- Change _proxy_label here, with `sqitch rework _proxy_label`.

BEGIN;
SET client_min_messages = 'warning';

-- _proxy_label
-- A proxy URL with its credentials (user and password alike) masked: what views, messages and logs show.
CREATE OR REPLACE FUNCTION _proxy_label(url text)
RETURNS text
LANGUAGE sql
IMMUTABLE
STRICT
AS $$
    -- A provider's key may be the user name alone (http://KEY:@host, http://TOKEN@host): the
    -- whole userinfo goes, up to the last @ before the path.
    SELECT regexp_replace(_proxy_label.url, '^([A-Za-z][A-Za-z0-9+.-]*://)[^/]*@', '\1***@');
$$;

COMMIT;
