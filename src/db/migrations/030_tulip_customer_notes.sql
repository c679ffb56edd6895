-- Customer notes in Tulip's shape (SPEC §16; https://docs.tulip.com/tgen/customernotes): `comments` (was
-- Bulb's `body`), Tulip's type values (CUSTOMER_OPTIN_LOG is the documented one; the other four categories the
-- merge page names, notes, phone, video and social, follow its pattern), and Tulip's `externalId`, `store`,
-- `isPrivate`, `isDeleted`, `wishListId`. Every stored note keeps its text and its category: nothing is lost.
ALTER TABLE notes RENAME COLUMN body TO comments;
ALTER TABLE notes DROP CONSTRAINT notes_type_check;
UPDATE notes SET type = CASE type
  WHEN 'note' THEN 'CUSTOMER_NOTE'
  WHEN 'phone' THEN 'CUSTOMER_PHONE_LOG'
  WHEN 'optIn' THEN 'CUSTOMER_OPTIN_LOG'
  WHEN 'video' THEN 'CUSTOMER_VIDEO_LOG'
  WHEN 'social' THEN 'CUSTOMER_SOCIAL_LOG'
  ELSE type END;
ALTER TABLE notes
  ADD CONSTRAINT notes_type_check
    CHECK (type IN ('CUSTOMER_NOTE', 'CUSTOMER_PHONE_LOG', 'CUSTOMER_OPTIN_LOG', 'CUSTOMER_VIDEO_LOG', 'CUSTOMER_SOCIAL_LOG')),
  ADD COLUMN external_id  text,
  ADD COLUMN store        text,
  ADD COLUMN is_private   boolean NOT NULL DEFAULT false,
  ADD COLUMN is_deleted   boolean NOT NULL DEFAULT false,
  ADD COLUMN wish_list_id bigint;
-- A note is found by uuid or by its integrator's externalId (GET/PUT /crm/customerNotes/{id}).
CREATE UNIQUE INDEX notes_external_id ON notes (external_id) WHERE external_id IS NOT NULL;
