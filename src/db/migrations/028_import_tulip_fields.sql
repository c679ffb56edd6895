-- Typed import staging (migration 018) for the customer's Tulip fields (SPEC §16): a staged line carries them as
-- columns too. `fields` bits (src/imports/fields.ts): 128 prefix, 256 suffix, 512 excludeFromCampaigns, 1024 image,
-- 2048 attributes, 4096 disabled (which sets the customer's status: true deactivates, false re-activates one
-- deactivated without a merge). Lines staged before this carry none of them.
ALTER TABLE import_rows
  ADD COLUMN prefix                 text,
  ADD COLUMN suffix                 text,
  ADD COLUMN exclude_from_campaigns boolean,
  ADD COLUMN image                  text,
  ADD COLUMN attributes             jsonb,
  ADD COLUMN disabled               boolean;
