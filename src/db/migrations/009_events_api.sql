-- Events API (SPEC §12): a commit-safe order for cursor walks, and indexes for its filters.
-- Event ids (and created_at) are taken when the row is inserted, but become visible when their transaction
-- commits, which may be out of order. The API lists only events of transactions older than every
-- transaction still running (xid < the snapshot's xmin), in (xid, id) order: any event that becomes
-- visible later has a larger xid than every event already listed, so a cursor walk never skips one.
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX events_xid ON events (xid, id);
CREATE INDEX events_type_xid ON events (event_type, xid, id);
CREATE INDEX events_resource_xid ON events (resource_uuid, xid, id);
