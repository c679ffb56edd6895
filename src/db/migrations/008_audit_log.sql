-- Audit log (SPEC §15): one row per administrative or destructive act. Append-only: the API has no route
-- to change or remove a row, and these triggers refuse UPDATE, DELETE and TRUNCATE from anyone.

CREATE TABLE audit_log (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  actor_type  text NOT NULL CHECK (actor_type IN ('apiKey', 'authClient', 'system')),
  actor_uuid  uuid,            -- the API key or auth client; NULL for system
  actor_name  text,            -- its name when the act happened
  action      text NOT NULL,   -- e.g. apiKey.created, subscription.secretRevealed (src/audit/actions.ts)
  target_type text NOT NULL,   -- ApiKey, AuthClient, WebhookSubscription, Customer, Merge, Import
  target_id   text,            -- the target's uuid
  ip_address  text,            -- of the request; NULL for system acts
  details     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_actor ON audit_log (actor_uuid, id);
CREATE INDEX audit_log_created ON audit_log (created_at);

CREATE FUNCTION audit_log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_refuse_change();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change();
