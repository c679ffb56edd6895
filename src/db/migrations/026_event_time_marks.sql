-- The events API's since/until (SPEC §12) as a range of the (xid, id) order it lists in. Events are listed by the
-- transaction that wrote them (xid, migration 009), and since/until filter on created_at, which no index in that
-- order holds: a page for `since=yesterday` walked every older event (of the listed types) first, ~140–300 ms at
-- 2,000,000 events, growing with the retention. Every process writes a mark a minute (src/events/time-marks.ts):
-- the time, the oldest transaction then running and the mark's own transaction id. An event created at or after a mark
-- has an xid ≥ its oldest_xid (its transaction was running then, or began later); an event created before a mark has an
-- xid < its mark_xid. So a since/until turns into a start and an end for the index walk (src/events/store.ts).
CREATE TABLE event_time_marks (
  at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  oldest_xid xid8 NOT NULL, -- the oldest transaction then running in this database (the events list's horizon)
  mark_xid   xid8 NOT NULL  -- the mark's own transaction id: every id given before it is smaller
);
CREATE INDEX event_time_marks_at ON event_time_marks (at);
