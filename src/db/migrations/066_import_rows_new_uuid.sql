-- The uuid a TGEN customers record gives for a customer Bulb does not have yet: the customer it creates takes it
-- (docs.tulip.com/tgen/customers: "If the UUID of the Customer Resource exists in the system, or no UUID is provided
-- and an External ID exists, then an update is performed. Otherwise, the resource is created."), so a retailer moving
-- from Tulip keeps the uuids its systems hold. NULL: the customer gets a uuid of Bulb's (src/imports/store.ts,
-- applyChunk). Adding a nullable column without a default is catalog data only.
ALTER TABLE import_rows ADD COLUMN new_uuid uuid;
