-- Replay a window of events to a subscription (issue 26 item 2): one row per replay, worked by replay workers in
-- committed chunks (one INSERT … SELECT FROM events per chunk). last_event_id is the cursor: every event with an
-- id up to it has been considered, and its chunk committed together with it, so a worker that dies resumes
-- after the last committed chunk (no event queued twice). end_event_id bounds the walk: the newest event id
-- when the replay was accepted (events after it are the live deliveries' business).
-- Replayed deliveries are pending rows whose next_attempt_at is NULL: the claim takes them only after the
-- lane's due live rows (webhook_deliveries_due sorts NULLs last, so both are ranges of the same index).
CREATE TABLE webhook_replays (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid            uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  subscription_id bigint NOT NULL REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
  event_types     text[] NOT NULL,
  since_at        timestamptz NOT NULL,
  until_at        timestamptz NOT NULL,
  status          text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'cancelled', 'failed')),
  last_event_id   bigint NOT NULL DEFAULT 0,
  end_event_id    bigint NOT NULL,
  events_queued   bigint NOT NULL DEFAULT 0,
  error           text,
  lock_token      uuid,
  locked_until    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  started_at      timestamptz,
  finished_at     timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX webhook_replays_sub ON webhook_replays (subscription_id, id);
CREATE INDEX webhook_replays_todo ON webhook_replays (id) WHERE status IN ('queued', 'running');
