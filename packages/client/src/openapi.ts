// Generated from the 2026-11 OpenAPI document by scripts/client-types.ts (npm run build); do not edit.
export interface paths {
    "/api/2026-11/crm/customers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List customers (cursor pagination; filters externalId, email, status, updatedSince)
         * @description Cursor pagination (`limit` 1–250, default 50; `cursor`). Filters `externalId`, `email`, `q`, `status` (default `active`; `disabled`, `all`), `updatedSince`. A cursor walk visits each record exactly once even while records are added. In id order; with `updatedSince`, in order of last change (then id), so a customer changed again during the walk comes again at its end, as it now is.
         */
        get: operations["customersList"];
        put?: never;
        /**
         * Create a customer (409 when the externalId exists)
         * @description Creates a customer and emits `customerCreate`. `externalId` is optional, as in Tulip (the customer is then found by its uuid, and may be given one later by PUT or PATCH; imports and bulk items name customers by it); a duplicate `externalId` answers 409 `Conflict`. Read-only fields (`uuid`, `status`, `mergedInto`, timestamps) are refused as unknown fields.
         */
        post: operations["customersCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a customer by uuid or externalId (merged-away customers show status and mergedInto)
         * @description A disabled (merged-away) customer is returned with `status: disabled` and `mergedInto` naming the final surviving primary.
         */
        get: operations["customersGet"];
        /**
         * Replace a customer, or create it (201) when the externalId is unknown
         * @description Full replace: fields the body omits are emptied (`externalId` comes from the path if the body omits it). An unknown `externalId` creates the customer (201). A customer merged away answers 403 `CustomerDisabled` (one deactivated with `disabled: true` takes the write; `disabled: false` re-activates it).
         */
        put: operations["customersPut"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Update some fields of a customer
         * @description Changes only the fields the body carries (`null` clears a field); an address naming a current one by `uuid` (else `externalId`) patches it, the others given are the new list. A customer merged away answers 403 `CustomerDisabled` (one deactivated with `disabled: true` takes the write). A no-op writes nothing and emits no event.
         */
        patch: operations["customersPatch"];
        trace?: never;
    };
    "/api/2026-11/crm/customerAttributes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List customer attributes (cursor pagination)
         * @description List customer attributes (cursor pagination)
         */
        get: operations["customerAttributesList"];
        put?: never;
        /**
         * Create a customer attribute (409 when the externalId exists)
         * @description Create a customer attribute (409 when the externalId exists)
         */
        post: operations["customerAttributesCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customerAttributes/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a customer attribute by uuid or externalId
         * @description Get a customer attribute by uuid or externalId
         */
        get: operations["customerAttributesGet"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/bulk": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * Tulip's bulk update of 1–100 customers by externalId (1,000 in Tulip's 2025-08 and 2025-12), one result per item: an item for an existing customer replaces it (from 2026-11 it is a patch), an unknown one is created
         * @description Tulip's `PUT …/bulk` (docs.tulip.com "Single vs. Bulk Endpoints"): the same upsert as `POST …/bulk`, item for item; an unknown `externalId` is created.
         */
        put: operations["customersBulkPut"];
        /**
         * Create or update 1–100 customers by externalId, one result per item: until 2025-04 an item for an existing customer replaces it; in Tulip's 2025-08 and 2025-12 (1,000 items) POST creates only (409 for an existing one); from 2026-11 an item is a patch
         * @description A JSON array of 1–100 customers (up to 1,000, in a body of up to 10 MiB, in Tulip's 2025-08 and 2025-12), upserted by `externalId`; one result per item (`201` created, `200` updated, `400`, `403` for a disabled customer, `409`) and one bad item does not stop the others. Until 2025-04 an existing customer is replaced by the item; from 2026-11 the item is a patch (fields it omits are kept). In Tulip's 2025-08 and 2025-12 it creates only, as docs.tulip.com "Single vs. Bulk Endpoints" says: an item whose `externalId` exists (or repeats an earlier item's) is that item's `409 Conflict` and changes nothing; `PUT …/bulk` upserts.
         */
        post: operations["customersBulk"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export every matching customer as NDJSON (application/x-ndjson, one Customer per line) from one consistent snapshot; gzip when accepted
         * @description Export every matching customer as NDJSON (application/x-ndjson, one Customer per line) from one consistent snapshot; gzip when accepted
         */
        get: operations["customersExport"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/associates": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List associates (cursor pagination)
         * @description List associates (cursor pagination)
         */
        get: operations["associatesList"];
        put?: never;
        /**
         * Create an associate (409 when the externalId exists)
         * @description Create an associate (409 when the externalId exists)
         */
        post: operations["associatesCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/associates/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an associate by uuid or externalId
         * @description Get an associate by uuid or externalId
         */
        get: operations["associatesGet"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/orders": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a customer's order records (cursor pagination)
         * @description List a customer's order records (cursor pagination)
         */
        get: operations["customersOrdersList"];
        put?: never;
        /**
         * Add a order to a customer
         * @description Add a order to a customer
         */
        post: operations["customersOrdersCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/followUps": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a customer's follow-up records (cursor pagination)
         * @description List a customer's follow-up records (cursor pagination)
         */
        get: operations["customersFollowUpsList"];
        put?: never;
        /**
         * Add a follow-up to a customer
         * @description Add a follow-up to a customer
         */
        post: operations["customersFollowUpsCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/notes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a customer's note records (cursor pagination)
         * @description List a customer's note records (cursor pagination)
         */
        get: operations["customersNotesList"];
        put?: never;
        /**
         * Add a note to a customer
         * @description Add a note to a customer
         */
        post: operations["customersNotesCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a customer's message records (cursor pagination)
         * @description List a customer's message records (cursor pagination)
         */
        get: operations["customersMessagesList"];
        put?: never;
        /**
         * Add a message to a customer
         * @description Add a message to a customer
         */
        post: operations["customersMessagesCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/preferences": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a customer's preference records (cursor pagination)
         * @description List a customer's preference records (cursor pagination)
         */
        get: operations["customersPreferencesList"];
        put?: never;
        /**
         * Add a preference to a customer
         * @description Add a preference to a customer
         */
        post: operations["customersPreferencesCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/productShares": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a customer's product share records (cursor pagination)
         * @description List a customer's product share records (cursor pagination)
         */
        get: operations["customersProductSharesList"];
        put?: never;
        /**
         * Add a product share to a customer
         * @description Add a product share to a customer
         */
        post: operations["customersProductSharesCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/associates": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a customer's customer–associate association records (cursor pagination)
         * @description List a customer's customer–associate association records (cursor pagination)
         */
        get: operations["customersAssociatesList"];
        put?: never;
        /**
         * Add a customer–associate association to a customer (409 when the pair exists)
         * @description Add a customer–associate association to a customer (409 when the pair exists)
         */
        post: operations["customersAssociatesCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customerNotes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Add a note to the customer its `customer` field names (emits customerNoteCreate)
         * @description Creates a note (Tulip's shape: `customer`, `comments`, `type`, `isPrivate`, `externalId`, …) for the customer `customer` names (uuid or externalId); emits `customerNoteCreate`. A taken `externalId` answers 409.
         */
        post: operations["customerNotesCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customerNotes/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a customer note by uuid or externalId
         * @description A note by its uuid or its externalId (a uuid match wins).
         */
        get: operations["customerNotesGet"];
        /**
         * Replace a customer note, by uuid or externalId (emits customerNoteUpdate when it changes)
         * @description Full replace of a note, by uuid or externalId (an omitted `externalId` keeps the current one; `customer`, if given, must be the note's customer); emits `customerNoteUpdate` when something changed.
         */
        put: operations["customerNotesPut"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/merge": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Merge secondary customers into the primary (each by uuid or externalId); ?dryRun=true previews the counts
         * @description Merges the secondaries into the primary (each named by uuid or externalId, a uuid match winning) in one transaction: their orders, follow-ups, notes, messages, preferences and product shares move to the primary, associations move without duplicates, secondaries become `disabled` with `mergedInto`. Validation first (400, then 404 per unknown id, then 403 `CustomerDisabled`), nothing changed on failure. `?dryRun=true` computes the same counts and changes nothing. An `Idempotency-Key` header replays the first answer for 24 h.
         */
        post: operations["customersMerge"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/merges": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Merge history of a customer (as primary or as secondary), oldest first
         * @description Merge records where the customer is primary or secondary, oldest first, paginated.
         */
        get: operations["customersMerges"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/merges/{mergeUuid}/undo": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Undo a merge within BULB_UNMERGE_WINDOW_DAYS: secondaries active again, journaled rows moved back; ?dryRun=true previews
         * @description Undo a merge within BULB_UNMERGE_WINDOW_DAYS: secondaries active again, journaled rows moved back; ?dryRun=true previews
         */
        post: operations["mergesUndo"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/customers/{id}/duplicates": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Active customers likely to be the same person as this one, best first, with a score and its reasons
         * @description Active customers likely to be the same person as this one, best first, with a score and its reasons
         */
        get: operations["customersDuplicates"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/duplicates": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Candidate duplicate pairs across all active customers, best first (minScore, default 0.8)
         * @description Candidate duplicate pairs across all active customers, best first (minScore, default 0.8)
         */
        get: operations["duplicatesList"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/apiKeys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List active API keys
         * @description Active API keys, without their secret.
         */
        get: operations["apiKeysList"];
        put?: never;
        /**
         * Create an API key (the key is shown only in this answer)
         * @description Answers 201 with `key`, shown in this answer only (stored as a hash).
         */
        post: operations["apiKeysCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/apiKeys/{uuid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an API key
         * @description Revokes the key at once; 204.
         */
        delete: operations["apiKeysRevoke"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/authClients": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List active OAuth clients
         * @description Active OAuth clients, without their secret.
         */
        get: operations["authClientsList"];
        put?: never;
        /**
         * Create an OAuth client (the secret is shown only in this answer)
         * @description Answers 201 with `clientSecret`, shown in this answer only. Exchange it at POST /auth/oauth2/token.
         */
        post: operations["authClientsCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/authClients/{uuid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an OAuth client and its tokens
         * @description Revokes the client and every access token it obtained; 204.
         */
        delete: operations["authClientsRevoke"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/eventTypes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the event types a subscription can listen for (2026-11: the event catalog, with the schema of each body)
         * @description The event types a subscription can listen for. From 2026-11 each comes with the JSON Schema of the body delivered for it and an example (the event catalog; the document's `webhooks` section shows the same); earlier versions answer `eventType`, `resourceType` and `description` per type.
         */
        get: operations["webhooksEventTypes"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/subscriptions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List webhook subscriptions
         * @description List webhook subscriptions
         */
        get: operations["webhooksSubscriptionsList"];
        put?: never;
        /**
         * Create a subscription; the answer shows its signingSecret
         * @description Answers 201 including `signingSecret` (`whsec_` + base64 of 32 random bytes). The URL must be http(s), at most 2048 characters, and (unless BULB_WEBHOOK_ALLOW_PRIVATE) must not resolve to a loopback, private, link-local, CGNAT, multicast or unspecified address.
         */
        post: operations["webhooksSubscriptionsCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/subscriptions/{uuid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a subscription (credentials are never returned)
         * @description Get a subscription (credentials are never returned)
         */
        get: operations["webhooksSubscriptionsGet"];
        put?: never;
        post?: never;
        /**
         * Delete a subscription; its pending deliveries are cancelled
         * @description Soft delete: pending deliveries are cancelled, logs stay; 204.
         */
        delete: operations["webhooksSubscriptionsDelete"];
        options?: never;
        head?: never;
        /**
         * Change a subscription (activate/deactivate with isActive)
         * @description Change a subscription (activate/deactivate with isActive)
         */
        patch: operations["webhooksSubscriptionsPatch"];
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/subscriptions/{uuid}/secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Reveal the signing secret
         * @description Reveal the signing secret
         */
        get: operations["webhooksSubscriptionsSecret"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/subscriptions/{uuid}/rotateSecret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Make a new signing secret; the previous one keeps signing for 24 h (409 while ten sign already)
         * @description Makes a new signing secret; every rotated-out secret keeps signing for 24 h after its rotation (`webhook-signature` carries one signature per valid secret).
         */
        post: operations["webhooksSubscriptionsRotateSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/subscriptions/{uuid}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a webhookTest event to this subscription now
         * @description Sends a `webhookTest` event to this subscription now (409 when the subscription is inactive).
         */
        post: operations["webhooksSubscriptionsTest"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/subscriptions/{uuid}/recover": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Re-queue every failed delivery of this subscription created since a time
         * @description Re-queues every failed delivery of the subscription created since `since`.
         */
        post: operations["webhooksSubscriptionsRecover"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List deliveries, newest first (filter by status, subscription, eventType)
         * @description List deliveries, newest first (filter by status, subscription, eventType). With an eventType of 2,000 events or more, or a subscription and a status, a page looks at 5,000 deliveries at most (the subscription's or the status's when given) and keeps those that match every filter: it may hold fewer than `limit` deliveries, none even, and still have a `nextCursor`; follow it until `nextCursor` is null.
         */
        get: operations["webhooksDeliveriesList"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/deliveries/{uuid}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Attempt a delivery now
         * @description Attempts the delivery now, once; a cancelled delivery (deleted subscription) answers 409.
         */
        post: operations["webhooksDeliveriesRetry"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Attempts and successes per hour over the last hours, per subscription and overall (the console chart)
         * @description Attempts and successes per hour over the last hours, per subscription and overall (the console chart)
         */
        get: operations["webhooksStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/logs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Delivery attempts, the last written first (an attempt is written when it ends); filters subscription, eventType, outcome, since, until
         * @description One row per attempt, newest first, with request headers (credentials redacted), request body and the first 4 KiB of the response. With an eventType of 2,000 events or more, an outcome, since or until, a page looks at 5,000 attempts at most (the subscription's when one is given; with since or until, of the days they fall in) and keeps those that match every filter: it may hold fewer than `limit` attempts, none even, and still have a `nextCursor`; follow it until `nextCursor` is null.
         */
        get: operations["webhooksLogs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/subscriptions/{uuid}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replay a window of events to this subscription: one new delivery per event of its types, sent after its live deliveries (Idempotency-Key honoured)
         * @description Replay a window of events to this subscription: one new delivery per event of its types, sent after its live deliveries (Idempotency-Key honoured)
         */
        post: operations["webhooksReplaysStart"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/subscriptions/{uuid}/replays": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A subscription's replays, newest first
         * @description A subscription's replays, newest first
         */
        get: operations["webhooksReplaysList"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/replays/{uuid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A replay with its progress (status, eventsQueued)
         * @description A replay with its progress (status, eventsQueued)
         */
        get: operations["webhooksReplaysGet"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/webhooks/replays/{uuid}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a replay: no more deliveries are queued; those queued already stay
         * @description Cancel a replay: no more deliveries are queued; those queued already stay
         */
        post: operations["webhooksReplaysCancel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List events, oldest first (filters eventType, since, until, resourceUuid; cursor pagination)
         * @description List events, oldest first (filters eventType, since, until, resourceUuid; cursor pagination)
         */
        get: operations["eventsList"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/events/{uuid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get one event by uuid
         * @description Get one event by uuid
         */
        get: operations["eventsGet"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/imports": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List imports, newest first
         * @description List imports, newest first
         */
        get: operations["importsList"];
        put?: never;
        /**
         * Import customers from an NDJSON (application/x-ndjson), CSV (text/csv) or Tulip TGEN (text/csv, format=tgen) file sent as the body, up to 2 GiB; answers 202 once received
         * @description Import customers from an NDJSON (application/x-ndjson), CSV (text/csv) or Tulip TGEN (text/csv, format=tgen) file sent as the body, up to 2 GiB; answers 202 once received
         */
        post: operations["importsCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/imports/{uuid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * An import with its progress (rowsDone, rowsPerSecond, estimatedSecondsLeft)
         * @description An import with its progress (rowsDone, rowsPerSecond, estimatedSecondsLeft)
         */
        get: operations["importsGet"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/imports/{uuid}/errors": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The lines that failed, as NDJSON: {"line","errors":[…]} per line, in line order
         * @description The lines that failed, as NDJSON: {"line","errors":[…]} per line, in line order
         */
        get: operations["importsErrors"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/crm/imports/{uuid}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel an import; chunks already applied stay
         * @description Cancel an import; chunks already applied stay
         */
        post: operations["importsCancel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/2026-11/integrations/auditLog": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The audit log: administrative and destructive acts, newest first (append-only)
         * @description The audit log: administrative and destructive acts, newest first (append-only)
         */
        get: operations["auditLogList"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/auth/oauth2/token": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Obtain an access token (OAuth 2.0 client credentials)
         * @description RFC 6749 §4.4. The client id and secret come by HTTP Basic (`Authorization: Basic base64(id:secret)`) or as the form fields `client_id`/`client_secret`, not both. Answers a Bearer token valid for one hour. Errors per RFC 6749 §5.2, with the SPEC error list beside them.
         */
        post: operations["oauth2Token"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export interface webhooks {
    customerCreate: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * customerCreate (Customer)
         * @description A customer was created (POST, PUT of an unknown externalId, bulk upsert, import). Sent as a signed POST to every subscription listening for customerCreate (`Authorization` as the subscription's authMethod says). Delivered at least once: dedupe on `uuid`.
         */
        post: operations["customerCreateEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    customerUpdate: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * customerUpdate (Customer)
         * @description A customer changed (PATCH, PUT, bulk upsert, import, or its data moved by a merge or an undo). Sent as a signed POST to every subscription listening for customerUpdate (`Authorization` as the subscription's authMethod says). Delivered at least once: dedupe on `uuid`.
         */
        post: operations["customerUpdateEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    customerMerge: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * customerMerge (Customer)
         * @description Secondary customers were merged into this primary customer; each secondary gets a customerUpdate. Sent as a signed POST to every subscription listening for customerMerge (`Authorization` as the subscription's authMethod says). Delivered at least once: dedupe on `uuid`.
         */
        post: operations["customerMergeEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    customerUnmerge: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * customerUnmerge (Customer)
         * @description A merge into this primary customer was undone (POST /crm/merges/{uuid}/undo); each restored customer gets a customerUpdate. Sent as a signed POST to every subscription listening for customerUnmerge (`Authorization` as the subscription's authMethod says). Delivered at least once: dedupe on `uuid`.
         */
        post: operations["customerUnmergeEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    customerNoteCreate: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * customerNoteCreate (CustomerNote)
         * @description A note was added to a customer. Sent as a signed POST to every subscription listening for customerNoteCreate (`Authorization` as the subscription's authMethod says). Delivered at least once: dedupe on `uuid`.
         */
        post: operations["customerNoteCreateEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    customerNoteUpdate: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * customerNoteUpdate (CustomerNote)
         * @description A customer note was replaced (PUT) and something changed. Sent as a signed POST to every subscription listening for customerNoteUpdate (`Authorization` as the subscription's authMethod says). Delivered at least once: dedupe on `uuid`.
         */
        post: operations["customerNoteUpdateEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    webhookTest: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * webhookTest (WebhookSubscription)
         * @description A test event sent on request (POST …/subscriptions/{uuid}/test), only to that subscription. Sent as a signed POST to every subscription listening for webhookTest (`Authorization` as the subscription's authMethod says). Delivered at least once: dedupe on `uuid`.
         */
        post: operations["webhookTestEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    webhookDeliveryFailed: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * webhookDeliveryFailed (WebhookDelivery)
         * @description A delivery to another subscription exhausted its retry schedule and is failed (never sent to the subscription it is about; a failed delivery of this type emits nothing). Sent as a signed POST to every subscription listening for webhookDeliveryFailed (`Authorization` as the subscription's authMethod says). Delivered at least once: dedupe on `uuid`.
         */
        post: operations["webhookDeliveryFailedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    webhookSubscriptionDisabled: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * webhookSubscriptionDisabled (WebhookSubscription)
         * @description Another subscription was disabled automatically: its attempts kept failing for BULB_WEBHOOK_DISABLE_AFTER_HOURS, or its endpoint answered 410 Gone (never sent to the subscription it is about). Sent as a signed POST to every subscription listening for webhookSubscriptionDisabled (`Authorization` as the subscription's authMethod says). Delivered at least once: dedupe on `uuid`.
         */
        post: operations["webhookSubscriptionDisabledEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export interface components {
    schemas: {
        /** Address */
        Address: {
            /**
             * Format: uuid
             * @description the address's own id, assigned by Bulb; send it back to keep it
             */
            uuid?: string;
            externalId?: string | null;
            address1?: string | null;
            address2?: string | null;
            city?: string | null;
            countryCode?: string | null;
            zoneCode?: string | null;
            postCode?: string | null;
            firstName?: string | null;
            lastName?: string | null;
            phone?: string | null;
            emailAddress?: string | null;
            type?: string | null;
            disabled?: boolean;
            isPrimary?: boolean;
        };
        /**
         * ApiKey
         * @description An API key, without its secret
         */
        ApiKey: {
            uuid: string;
            name: string;
            prefix: string;
            scopes: components["schemas"]["Scope"][];
            /** Format: date-time */
            createdAt: string;
            lastUsedAt: string | null;
        };
        /** ApiKeyCreated */
        ApiKeyCreated: {
            uuid: string;
            name: string;
            prefix: string;
            scopes: components["schemas"]["Scope"][];
            /** Format: date-time */
            createdAt: string;
            lastUsedAt: string | null;
            /** @description the secret, shown only in this answer */
            key: string;
        };
        /**
         * ApiKeyPage
         * @description One page of a list
         */
        ApiKeyPage: {
            data: components["schemas"]["ApiKey"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * Associate
         * @description A store employee
         */
        Associate: {
            /** Format: uuid */
            uuid: string;
            externalId: string;
            firstName: string | null;
            lastName: string | null;
            email: string | null;
            storeId: string | null;
            /** Format: date-time */
            createdAt: string;
        };
        /** AssociateCreate */
        AssociateCreate: {
            /** @description the integrator's identifier, unique */
            externalId: string;
            firstName?: string | null;
            lastName?: string | null;
            email?: string | null;
            storeId?: string | null;
        };
        /**
         * AssociatePage
         * @description One page of a list
         */
        AssociatePage: {
            data: components["schemas"]["Associate"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /** Association */
        Association: {
            /** Format: uuid */
            uuid: string;
            /** Format: uuid */
            customerUuid: string;
            /** Format: date-time */
            createdAt: string;
            associateUuid: string;
            role: string | null;
        };
        /** AssociationCreate */
        AssociationCreate: {
            /** Format: uuid */
            associateUuid: string;
            role?: string | null;
        };
        /**
         * AssociationPage
         * @description One page of a list
         */
        AssociationPage: {
            data: components["schemas"]["Association"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * Attempt
         * @description One delivery attempt of the log
         */
        Attempt: {
            uuid: string;
            deliveryUuid: string;
            eventUuid: string;
            subscriptionUuid: string;
            eventType: string;
            url: string;
            attemptNumber: number;
            /** Format: date-time */
            startedAt: string;
            durationMs: number;
            statusCode: number | null;
            errorCode: components["schemas"]["AttemptErrorCode"] | null;
            /** @enum {string} */
            outcome: "success" | "failure";
            nextAttemptAt: string | null;
            requestHeaders: {
                [key: string]: string;
            };
            requestBody: string;
            responseBody: string | null;
        };
        /**
         * AttemptErrorCode
         * @enum {string}
         */
        AttemptErrorCode: "TIMEOUT" | "CONNECTION" | "DNS" | "TLS" | "HTTP_STATUS" | "BLOCKED_ADDRESS" | "SECRET_UNREADABLE" | "OAUTH_TOKEN_FAILED" | "BROKER_UNREACHABLE" | "BROKER_REFUSED" | "BROKER_TIMEOUT" | "NO_ROUTE";
        /**
         * AttemptPage
         * @description One page of a list
         */
        AttemptPage: {
            data: components["schemas"]["Attempt"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /** AttributeValue */
        AttributeValue: {
            /** @description externalId of a customer attribute (POST /crm/customerAttributes) */
            attributeExternalId: string;
            /** @description the value (attributes are of type string) */
            value: string;
            languageExternalId?: string | null;
        };
        /** AuditEntry */
        AuditEntry: {
            /** Format: uuid */
            uuid: string;
            /**
             * Format: date-time
             * @description when the act happened
             */
            createdAt: string;
            /** @enum {string} */
            action: "apiKey.created" | "apiKey.revoked" | "authClient.created" | "authClient.revoked" | "subscription.created" | "subscription.changed" | "subscription.deleted" | "subscription.disabled" | "subscription.secretRevealed" | "subscription.secretRotated" | "merge.created" | "merge.undone" | "import.started" | "import.cancelled" | "replay.started" | "replay.cancelled";
            actor: {
                /** @enum {string} */
                type: "apiKey" | "authClient" | "system";
                /** @description the API key or auth client; null for system */
                uuid: string | null;
                /** @description its name when the act happened */
                name: string | null;
            };
            target: {
                /** @description ApiKey, AuthClient, WebhookSubscription, Customer, Merge, Import */
                type: string;
                /** @description the target uuid */
                id: string | null;
            };
            /** @description of the request (null for system acts) */
            ipAddress: string | null;
            /** @description what else identifies the act (never a secret) */
            details: {
                [key: string]: unknown;
            };
        };
        /**
         * AuditEntryPage
         * @description One page of a list
         */
        AuditEntryPage: {
            data: components["schemas"]["AuditEntry"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * AuthClient
         * @description An OAuth 2.0 client, without its secret
         */
        AuthClient: {
            uuid: string;
            name: string;
            clientId: string;
            scopes: components["schemas"]["Scope"][];
            /** Format: date-time */
            createdAt: string;
        };
        /** AuthClientCreated */
        AuthClientCreated: {
            uuid: string;
            name: string;
            clientId: string;
            scopes: components["schemas"]["Scope"][];
            /** Format: date-time */
            createdAt: string;
            /** @description the secret, shown only in this answer */
            clientSecret: string;
        };
        /**
         * AuthClientPage
         * @description One page of a list
         */
        AuthClientPage: {
            data: components["schemas"]["AuthClient"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * AuthMethod
         * @enum {string}
         */
        AuthMethod: "NONE" | "BASIC" | "BEARER" | "OAUTH2_CLIENT_CREDENTIALS";
        /** BulkItemResult */
        BulkItemResult: {
            /** @description position of the item in the request */
            index: number;
            /** @description 403: the customer is disabled (CustomerDisabled) */
            status: 200 | 201 | 400 | 403 | 409;
            customer?: components["schemas"]["Customer"];
            errors?: components["schemas"]["ErrorEntry"][];
        };
        /**
         * BulkResult
         * @description One result per item, in order
         */
        BulkResult: {
            results: components["schemas"]["BulkItemResult"][];
        };
        /**
         * CredentialCreate
         * @description A name and the scopes (read ⊂ write ⊂ admin)
         */
        CredentialCreate: {
            name: string;
            scopes: components["schemas"]["Scope"][];
        };
        /**
         * Customer
         * @description A customer record (SPEC §4). `mergedInto` names the final surviving primary of a merged-away customer.
         * @example {
         *       "uuid": "0b0f6a8e-5d0c-4a43-9e3a-2f5d7c1e9a10",
         *       "id": 2155,
         *       "externalId": "ext-2155",
         *       "status": "active",
         *       "disabled": false,
         *       "prefix": "Ms",
         *       "firstName": "Ada",
         *       "lastName": "Lovelace",
         *       "suffix": null,
         *       "emails": [
         *         {
         *           "email": "ada@example.org",
         *           "type": "home",
         *           "isPrimary": true
         *         }
         *       ],
         *       "phones": [],
         *       "addresses": [],
         *       "socialProfiles": [],
         *       "loyaltyTier": "gold",
         *       "excludeFromCampaigns": false,
         *       "image": null,
         *       "attributes": [],
         *       "mergedInto": null,
         *       "createdAt": "2026-11-02T10:00:00.000Z",
         *       "updatedAt": "2026-11-02T10:00:00.000Z"
         *     }
         */
        Customer: {
            /** Format: uuid */
            uuid: string;
            /** @description Tulip's numeric id: stable, assigned at creation */
            id: number;
            /** @description the integrator's identifier; null until one is given */
            externalId: string | null;
            /** @enum {string} */
            status: "active" | "disabled";
            /** @description true exactly when status is not active (merged away, or deactivated with disabled: true) */
            disabled: boolean;
            prefix: string | null;
            firstName: string | null;
            lastName: string | null;
            suffix: string | null;
            emails: components["schemas"]["Email"][];
            phones: components["schemas"]["Phone"][];
            addresses: components["schemas"]["CustomerAddress"][];
            socialProfiles: components["schemas"]["SocialProfile"][];
            loyaltyTier: string | null;
            excludeFromCampaigns: boolean;
            image: string | null;
            attributes: {
                attributeExternalId: string;
                value: string;
                languageExternalId: string | null;
            }[];
            mergedInto: components["schemas"]["CustomerRef"] | null;
            /** Format: date-time */
            createdAt: string;
            /** Format: date-time */
            updatedAt: string;
        };
        /**
         * CustomerAddress
         * @description A customer's address with Tulip's names (SPEC §16)
         */
        CustomerAddress: {
            /** Format: uuid */
            uuid: string;
            externalId: string | null;
            address1: string | null;
            address2: string | null;
            city: string | null;
            countryCode: string | null;
            zoneCode: string | null;
            postCode: string | null;
            firstName: string | null;
            lastName: string | null;
            phone: string | null;
            emailAddress: string | null;
            type: string | null;
            disabled: boolean;
            isPrimary: boolean;
        };
        /**
         * CustomerAttribute
         * @description A custom attribute customers can carry a value of
         */
        CustomerAttribute: {
            /** Format: uuid */
            uuid: string;
            externalId: string;
            /** @enum {string} */
            type: "string";
            description: string | null;
            /** Format: date-time */
            createdAt: string;
        };
        /** CustomerAttributeCreate */
        CustomerAttributeCreate: {
            /** @description the key customers name in attributes[].attributeExternalId; unique */
            externalId: string;
            /**
             * @description type of the attribute's values (Tulip documents string)
             * @default string
             * @enum {string}
             */
            type: "string";
            description?: string | null;
        };
        /**
         * CustomerAttributePage
         * @description One page of a list
         */
        CustomerAttributePage: {
            data: components["schemas"]["CustomerAttribute"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * CustomerBulkItem
         * @description externalId is the key; from 2026-11 an item for an existing customer is a patch (null clears a field), until 2025-04 it replaces the record
         */
        CustomerBulkItem: {
            /** @description the integrator's identifier, unique */
            externalId: string;
            firstName?: string | null;
            lastName?: string | null;
            prefix?: string | null;
            suffix?: string | null;
            emails?: components["schemas"]["Email"][] | null;
            phones?: components["schemas"]["Phone"][] | null;
            addresses?: components["schemas"]["Address"][] | null;
            socialProfiles?: components["schemas"]["SocialProfile"][] | null;
            loyaltyTier?: string | null;
            /** @description null: false */
            excludeFromCampaigns?: boolean | null;
            image?: string | null;
            attributes?: components["schemas"]["AttributeValue"][] | null;
            /** @description true deactivates the customer (no merge); false re-activates one deactivated that way; omitted: unchanged */
            disabled?: boolean;
        };
        /**
         * CustomerCreate
         * @description A new customer
         */
        CustomerCreate: {
            /** @description the integrator's identifier, unique; null or omitted: none (find the customer by its uuid) */
            externalId?: string | null;
            firstName?: string | null;
            lastName?: string | null;
            prefix?: string | null;
            suffix?: string | null;
            emails?: components["schemas"]["Email"][] | null;
            phones?: components["schemas"]["Phone"][] | null;
            addresses?: components["schemas"]["Address"][] | null;
            socialProfiles?: components["schemas"]["SocialProfile"][] | null;
            loyaltyTier?: string | null;
            /** @description null: false */
            excludeFromCampaigns?: boolean | null;
            image?: string | null;
            attributes?: components["schemas"]["AttributeValue"][] | null;
            /** @description true deactivates the customer (no merge); false re-activates one deactivated that way; omitted: unchanged */
            disabled?: boolean;
        };
        /**
         * CustomerCreateEvent
         * @description The body of a customerCreate delivery. A customer was created (POST, PUT of an unknown externalId, bulk upsert, import).
         */
        CustomerCreateEvent: {
            /**
             * Format: uuid
             * @description the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header
             */
            uuid: string;
            /**
             * Format: uuid
             * @description the subscription this delivery is for
             */
            subscription: string;
            /**
             * Format: date-time
             * @description when the event occurred (RFC 3339, UTC with Z)
             */
            createdAt: string;
            /** @constant */
            eventType: "customerCreate";
            /** @constant */
            resourceType: "Customer";
            resource: {
                /**
                 * Format: uuid
                 * @description the new customer
                 */
                uuid: string;
                /** @description the resource's externalId, null when it has none */
                externalId: string | null;
            };
            /** @description what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API */
            source: string;
        };
        /**
         * CustomerMergeEvent
         * @description The body of a customerMerge delivery. Secondary customers were merged into this primary customer; each secondary gets a customerUpdate.
         */
        CustomerMergeEvent: {
            /**
             * Format: uuid
             * @description the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header
             */
            uuid: string;
            /**
             * Format: uuid
             * @description the subscription this delivery is for
             */
            subscription: string;
            /**
             * Format: date-time
             * @description when the event occurred (RFC 3339, UTC with Z)
             */
            createdAt: string;
            /** @constant */
            eventType: "customerMerge";
            /** @constant */
            resourceType: "Customer";
            resource: {
                /**
                 * Format: uuid
                 * @description the primary (surviving) customer
                 */
                uuid: string;
                /** @description the resource's externalId, null when it has none */
                externalId: string | null;
            };
            /** @description what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API */
            source: string;
        };
        /** CustomerNoteCreate */
        CustomerNoteCreate: {
            /** @description the customer of the note: uuid or externalId */
            customer: string;
            externalId?: string | null;
            /**
             * @description the kind of note (Tulip: CUSTOMER_OPTIN_LOG, …)
             * @enum {string}
             */
            type: "CUSTOMER_NOTE" | "CUSTOMER_PHONE_LOG" | "CUSTOMER_OPTIN_LOG" | "CUSTOMER_VIDEO_LOG" | "CUSTOMER_SOCIAL_LOG";
            /** @description the text of the note */
            comments: string;
            employee?: string | null;
            store?: string | null;
            /** @default false */
            isPrivate: boolean;
            /** @default false */
            isDeleted: boolean;
            wishListId?: number | null;
        };
        /**
         * CustomerNoteCreateEvent
         * @description The body of a customerNoteCreate delivery. A note was added to a customer.
         */
        CustomerNoteCreateEvent: {
            /**
             * Format: uuid
             * @description the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header
             */
            uuid: string;
            /**
             * Format: uuid
             * @description the subscription this delivery is for
             */
            subscription: string;
            /**
             * Format: date-time
             * @description when the event occurred (RFC 3339, UTC with Z)
             */
            createdAt: string;
            /** @constant */
            eventType: "customerNoteCreate";
            /** @constant */
            resourceType: "CustomerNote";
            resource: {
                /**
                 * Format: uuid
                 * @description the new note
                 */
                uuid: string;
                /** @description the resource's externalId, null when it has none */
                externalId: string | null;
            };
            /** @description what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API */
            source: string;
        };
        /**
         * CustomerNoteUpdateEvent
         * @description The body of a customerNoteUpdate delivery. A customer note was replaced (PUT) and something changed.
         */
        CustomerNoteUpdateEvent: {
            /**
             * Format: uuid
             * @description the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header
             */
            uuid: string;
            /**
             * Format: uuid
             * @description the subscription this delivery is for
             */
            subscription: string;
            /**
             * Format: date-time
             * @description when the event occurred (RFC 3339, UTC with Z)
             */
            createdAt: string;
            /** @constant */
            eventType: "customerNoteUpdate";
            /** @constant */
            resourceType: "CustomerNote";
            resource: {
                /**
                 * Format: uuid
                 * @description the note
                 */
                uuid: string;
                /** @description the resource's externalId, null when it has none */
                externalId: string | null;
            };
            /** @description what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API */
            source: string;
        };
        /**
         * CustomerPage
         * @description One page of a list
         */
        CustomerPage: {
            data: components["schemas"]["Customer"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * CustomerPatch
         * @description Only the fields sent change; null clears a field
         */
        CustomerPatch: {
            /** @description the integrator's identifier, unique */
            externalId?: string;
            firstName?: string | null;
            lastName?: string | null;
            prefix?: string | null;
            suffix?: string | null;
            emails?: components["schemas"]["Email"][] | null;
            phones?: components["schemas"]["Phone"][] | null;
            addresses?: components["schemas"]["Address"][] | null;
            socialProfiles?: components["schemas"]["SocialProfile"][] | null;
            loyaltyTier?: string | null;
            /** @description null: false */
            excludeFromCampaigns?: boolean | null;
            image?: string | null;
            attributes?: components["schemas"]["AttributeValue"][] | null;
            /** @description true deactivates the customer (no merge); false re-activates one deactivated that way; omitted: unchanged */
            disabled?: boolean;
        };
        /**
         * CustomerRef
         * @description A customer named by uuid and externalId (null: it has none)
         */
        CustomerRef: {
            uuid: string;
            externalId: string | null;
        };
        /**
         * CustomerReplace
         * @description Full replace: omitted fields are emptied (null empties too)
         */
        CustomerReplace: {
            /** @description the integrator's identifier, unique */
            externalId?: string;
            firstName?: string | null;
            lastName?: string | null;
            prefix?: string | null;
            suffix?: string | null;
            emails?: components["schemas"]["Email"][] | null;
            phones?: components["schemas"]["Phone"][] | null;
            addresses?: components["schemas"]["Address"][] | null;
            socialProfiles?: components["schemas"]["SocialProfile"][] | null;
            loyaltyTier?: string | null;
            /** @description null: false */
            excludeFromCampaigns?: boolean | null;
            image?: string | null;
            attributes?: components["schemas"]["AttributeValue"][] | null;
            /** @description true deactivates the customer (no merge); false re-activates one deactivated that way; omitted: unchanged */
            disabled?: boolean;
        };
        /**
         * CustomerUnmergeEvent
         * @description The body of a customerUnmerge delivery. A merge into this primary customer was undone (POST /crm/merges/{uuid}/undo); each restored customer gets a customerUpdate.
         */
        CustomerUnmergeEvent: {
            /**
             * Format: uuid
             * @description the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header
             */
            uuid: string;
            /**
             * Format: uuid
             * @description the subscription this delivery is for
             */
            subscription: string;
            /**
             * Format: date-time
             * @description when the event occurred (RFC 3339, UTC with Z)
             */
            createdAt: string;
            /** @constant */
            eventType: "customerUnmerge";
            /** @constant */
            resourceType: "Customer";
            resource: {
                /**
                 * Format: uuid
                 * @description the primary customer of the undone merge
                 */
                uuid: string;
                /** @description the resource's externalId, null when it has none */
                externalId: string | null;
            };
            /** @description what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API */
            source: string;
        };
        /**
         * CustomerUpdateEvent
         * @description The body of a customerUpdate delivery. A customer changed (PATCH, PUT, bulk upsert, import, or its data moved by a merge or an undo).
         */
        CustomerUpdateEvent: {
            /**
             * Format: uuid
             * @description the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header
             */
            uuid: string;
            /**
             * Format: uuid
             * @description the subscription this delivery is for
             */
            subscription: string;
            /**
             * Format: date-time
             * @description when the event occurred (RFC 3339, UTC with Z)
             */
            createdAt: string;
            /** @constant */
            eventType: "customerUpdate";
            /** @constant */
            resourceType: "Customer";
            resource: {
                /**
                 * Format: uuid
                 * @description the changed customer
                 */
                uuid: string;
                /** @description the resource's externalId, null when it has none */
                externalId: string | null;
            };
            /** @description what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API */
            source: string;
        };
        /**
         * Delivery
         * @description One event to one subscription
         */
        Delivery: {
            uuid: string;
            eventUuid: string;
            subscriptionUuid: string;
            eventType: string;
            status: components["schemas"]["DeliveryStatus"];
            attemptCount: number;
            nextAttemptAt: string | null;
            /** Format: date-time */
            createdAt: string;
            deliveredAt: string | null;
        };
        /**
         * DeliveryPage
         * @description One page of a list
         */
        DeliveryPage: {
            data: components["schemas"]["Delivery"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * DeliveryStatus
         * @enum {string}
         */
        DeliveryStatus: "pending" | "delivered" | "failed" | "cancelled";
        /** Email */
        Email: {
            /** Format: email */
            email: string;
            type?: string | null;
            isPrimary?: boolean;
        };
        /**
         * Error
         * @description The error body of every 4xx/5xx answer (SPEC §3)
         */
        Error: {
            /** @description one entry per problem (e.g. one per invalid field) */
            errors: components["schemas"]["ErrorEntry"][];
        };
        /**
         * ErrorEntry
         * @description one problem
         */
        ErrorEntry: {
            /** @description what went wrong, in English */
            message: string;
            /** @description InvalidParameterError, InvalidJson, Unauthorized, Forbidden, NotFound, UnsupportedApiVersion, EndpointNotInVersion, MethodNotAllowed, RequestTimeout, Conflict, CustomerDisabled, MergeNotUndoable, PayloadTooLarge, UnsupportedMediaType, RateLimited, InternalError, ServiceUnavailable; in a bulk item's errors also invalidResourceMissingRequiredFields */
            errorCode: string;
            /** @description the field or detail concerned (may be empty) */
            moreInfo: string;
        };
        /** EventCatalog */
        EventCatalog: {
            data: components["schemas"]["EventCatalogEntry"][];
        };
        /** EventCatalogEntry */
        EventCatalogEntry: {
            /** @description the event type, as subscriptions name it */
            name: string;
            /** @description the resourceType of its bodies */
            resourceType: string;
            description: string;
            /** @description JSON Schema (2020-12) of the body delivered for this type */
            schema: {
                [key: string]: unknown;
            };
            /** @description an example body */
            example: {
                [key: string]: unknown;
            };
        };
        /**
         * EventType
         * @enum {string}
         */
        EventType: "customerCreate" | "customerUpdate" | "customerMerge" | "customerUnmerge" | "customerNoteCreate" | "customerNoteUpdate" | "webhookTest" | "webhookDeliveryFailed" | "webhookSubscriptionDisabled";
        /** FollowUp */
        FollowUp: {
            /** Format: uuid */
            uuid: string;
            /** Format: uuid */
            customerUuid: string;
            /** Format: date-time */
            createdAt: string;
            associateUuid: string | null;
            /** Format: date-time */
            dueAt: string;
            subject: string;
            /** @enum {string} */
            status: "open" | "done";
        };
        /** FollowUpCreate */
        FollowUpCreate: {
            associateUuid?: string | null;
            /** Format: date-time */
            dueAt: string;
            subject: string;
            /**
             * @default open
             * @enum {string}
             */
            status: "open" | "done";
        };
        /**
         * FollowUpPage
         * @description One page of a list
         */
        FollowUpPage: {
            data: components["schemas"]["FollowUp"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /** LineItem */
        LineItem: {
            sku: string;
            name?: string | null;
            quantity: number;
            /** @description decimal number as a string, e.g. "129.90" */
            price: string;
        };
        /**
         * MergeRecord
         * @description One merge of the history
         */
        MergeRecord: {
            /** Format: uuid */
            uuid: string;
            primary: components["schemas"]["CustomerRef"];
            secondaries: components["schemas"]["CustomerRef"][];
            moved: components["schemas"]["MovedCounts"];
            duplicateAssociatesRemoved: number;
            /** @description the API key or auth client that asked */
            tokenUuid: string | null;
            source: string;
            /** Format: date-time */
            createdAt: string;
            /** @description when the merge was undone (2026-11); null if it stands */
            undoneAt: string | null;
        };
        /**
         * MergeRecordPage
         * @description One page of a list
         */
        MergeRecordPage: {
            data: components["schemas"]["MergeRecord"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /** MergeRequest */
        MergeRequest: {
            /** @description the secondary customers, each by uuid or externalId (a uuid match wins); 1–100, no duplicates, not the primary */
            mergeWithCustomerIds: string[];
        };
        /**
         * MergeResult
         * @description The outcome of a merge (or of a dry run)
         */
        MergeResult: {
            /** @description the merge record; null for a dry run or when nothing was left to merge */
            mergeUuid: string | null;
            primary: components["schemas"]["Customer"];
            /** @description externalIds of the secondaries, all merged into the primary after this call */
            mergedCustomerIds: string[];
            moved: components["schemas"]["MovedCounts"];
            duplicateAssociatesRemoved: number;
            dryRun: boolean;
        };
        /** Message */
        Message: {
            /** Format: uuid */
            uuid: string;
            /** Format: uuid */
            customerUuid: string;
            /** Format: date-time */
            createdAt: string;
            channel: string;
            direction: string;
            body: string;
            /** Format: date-time */
            sentAt: string;
        };
        /** MessageCreate */
        MessageCreate: {
            /** @enum {string} */
            channel: "sms" | "email" | "whatsapp" | "other";
            /** @enum {string} */
            direction: "inbound" | "outbound";
            body: string;
            /** Format: date-time */
            sentAt?: string;
        };
        /**
         * MessagePage
         * @description One page of a list
         */
        MessagePage: {
            data: components["schemas"]["Message"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * MovedCounts
         * @description rows moved to the primary, per kind
         */
        MovedCounts: {
            orders: number;
            followUps: number;
            notes: number;
            messages: number;
            preferences: number;
            productShares: number;
            associates: number;
        };
        /**
         * MutualTls
         * @description the private key is write-only, never returned
         */
        MutualTls: {
            clientCertificate: string;
            caCertificate: string | null;
        };
        /** MutualTlsWrite */
        MutualTlsWrite: {
            /** @description PEM; the client certificate (chain) presented to the receiver or broker */
            clientCertificate: string;
            /** @description PEM; write-only: its unencrypted private key; omitted on a change: the stored one is kept */
            clientKey?: string;
            caCertificate?: string | null;
        };
        /** Note */
        Note: {
            /** Format: uuid */
            uuid: string;
            externalId: string | null;
            /**
             * Format: uuid
             * @description uuid of the customer
             */
            customer: string;
            /** @enum {string} */
            type: "CUSTOMER_NOTE" | "CUSTOMER_PHONE_LOG" | "CUSTOMER_OPTIN_LOG" | "CUSTOMER_VIDEO_LOG" | "CUSTOMER_SOCIAL_LOG";
            comments: string;
            employee: string | null;
            store: string | null;
            isPrivate: boolean;
            isDeleted: boolean;
            wishListId: number | null;
            /** Format: date-time */
            createdAt: string;
            /** Format: date-time */
            updatedAt: string;
        };
        /**
         * NoteCreate
         * @description under a customer, `customer` may be left out (if given, it must name that customer)
         */
        NoteCreate: {
            /** @description the customer of the note: uuid or externalId */
            customer?: string;
            externalId?: string | null;
            /**
             * @description the kind of note (Tulip: CUSTOMER_OPTIN_LOG, …)
             * @enum {string}
             */
            type: "CUSTOMER_NOTE" | "CUSTOMER_PHONE_LOG" | "CUSTOMER_OPTIN_LOG" | "CUSTOMER_VIDEO_LOG" | "CUSTOMER_SOCIAL_LOG";
            /** @description the text of the note */
            comments: string;
            employee?: string | null;
            store?: string | null;
            /** @default false */
            isPrivate: boolean;
            /** @default false */
            isDeleted: boolean;
            wishListId?: number | null;
        };
        /**
         * NotePage
         * @description One page of a list
         */
        NotePage: {
            data: components["schemas"]["Note"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * NoteReplace
         * @description full replace of a note (an omitted externalId keeps the current one); a note stays with its customer
         */
        NoteReplace: {
            /** @description the customer of the note: uuid or externalId */
            customer?: string;
            externalId?: string | null;
            /**
             * @description the kind of note (Tulip: CUSTOMER_OPTIN_LOG, …)
             * @enum {string}
             */
            type: "CUSTOMER_NOTE" | "CUSTOMER_PHONE_LOG" | "CUSTOMER_OPTIN_LOG" | "CUSTOMER_VIDEO_LOG" | "CUSTOMER_SOCIAL_LOG";
            /** @description the text of the note */
            comments: string;
            employee?: string | null;
            store?: string | null;
            /** @default false */
            isPrivate: boolean;
            /** @default false */
            isDeleted: boolean;
            wishListId?: number | null;
        };
        /**
         * OAuth2ClientCredentials
         * @description the client secret is write-only, never returned
         */
        OAuth2ClientCredentials: {
            tokenUrl: string;
            clientId: string;
            scope: string | null;
            audience: string | null;
        };
        /** OAuth2ClientCredentialsWrite */
        OAuth2ClientCredentialsWrite: {
            /** @description https URL of the token endpoint (RFC 6749 §4.4; http only with BULB_WEBHOOK_ALLOW_PRIVATE) */
            tokenUrl: string;
            /** @description sent with the client secret by HTTP Basic */
            clientId: string;
            /** @description write-only; required when OAuth2 is first set, omitted on a change: the stored one is kept; visible ASCII only (no spaces, CR/LF or non-ASCII) */
            clientSecret?: string;
            scope?: string | null;
            audience?: string | null;
        };
        /** OAuthError */
        OAuthError: {
            /** @description RFC 6749 §5.2 code: invalid_request, invalid_client, invalid_scope, unsupported_grant_type… */
            error: string;
            error_description: string;
            /** @description the SPEC §3 error list, beside the RFC fields */
            errors: {
                message: string;
                errorCode: string;
                moreInfo: string;
            }[];
        };
        /** Order */
        Order: {
            /** Format: uuid */
            uuid: string;
            /** Format: uuid */
            customerUuid: string;
            /** Format: date-time */
            createdAt: string;
            externalId: string;
            /** Format: date-time */
            orderedAt: string;
            currency: string;
            total: string;
            lineItems: components["schemas"]["LineItem"][];
        };
        /** OrderCreate */
        OrderCreate: {
            externalId: string;
            /** Format: date-time */
            orderedAt: string;
            currency: string;
            /** @description decimal number as a string, e.g. "129.90" */
            total: string;
            lineItems?: components["schemas"]["LineItem"][];
        };
        /**
         * OrderPage
         * @description One page of a list
         */
        OrderPage: {
            data: components["schemas"]["Order"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /** Phone */
        Phone: {
            number: string;
            type?: string | null;
            isPrimary?: boolean;
        };
        /** Preference */
        Preference: {
            /** Format: uuid */
            uuid: string;
            /** Format: uuid */
            customerUuid: string;
            /** Format: date-time */
            createdAt: string;
            category: string;
            value: string;
        };
        /** PreferenceCreate */
        PreferenceCreate: {
            category: string;
            value: string;
        };
        /**
         * PreferencePage
         * @description One page of a list
         */
        PreferencePage: {
            data: components["schemas"]["Preference"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /** ProductShare */
        ProductShare: {
            /** Format: uuid */
            uuid: string;
            /** Format: uuid */
            customerUuid: string;
            /** Format: date-time */
            createdAt: string;
            sku: string;
            associateUuid: string | null;
            /** Format: date-time */
            sharedAt: string;
            message: string | null;
        };
        /** ProductShareCreate */
        ProductShareCreate: {
            sku: string;
            associateUuid?: string | null;
            /** Format: date-time */
            sharedAt?: string;
            message?: string | null;
        };
        /**
         * ProductSharePage
         * @description One page of a list
         */
        ProductSharePage: {
            data: components["schemas"]["ProductShare"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /** RecoverRequest */
        RecoverRequest: {
            /** Format: date-time */
            since: string;
        };
        /** RecoverResult */
        RecoverResult: {
            requeued: number;
        };
        /** ReplayRequest */
        ReplayRequest: {
            /**
             * Format: date-time
             * @description events created at or after this time (no older than BULB_EVENT_RETENTION_DAYS)
             */
            since: string;
            /**
             * Format: date-time
             * @description events created before this time (default: now); after since
             */
            until?: string;
            /** @description only these types (each one the subscription listens to); default: every type it listens to that the events API holds */
            eventTypes?: components["schemas"]["EventType"][];
        };
        /**
         * Scope
         * @description read (GET), write (read + CRM changes), admin (everything)
         * @enum {string}
         */
        Scope: "read" | "write" | "admin";
        /** SigningSecret */
        SigningSecret: {
            signingSecret: string;
            /** @description while set, the previous secret still signs too */
            previousSecretExpiresAt: string | null;
        };
        /** SocialProfile */
        SocialProfile: {
            network: string;
            handle: string;
        };
        /**
         * Subscription
         * @description A webhook subscription (credentials are write-only, never returned)
         */
        Subscription: {
            /** Format: uuid */
            uuid: string;
            url: string;
            eventTypes: string[];
            isActive: boolean;
            authMethod: components["schemas"]["AuthMethod"];
            webhookVersion: string;
            maxInFlight: number;
            /** @description the delays in seconds this subscription's retries follow (its own, or the service's) */
            retrySchedule: number[];
            /** @description percent of each retry delay drawn at random either way */
            retryJitter: number;
            /** @description attempts per second across every worker (null: no cap) */
            maxPerSecond: number | null;
            oauth2: components["schemas"]["OAuth2ClientCredentials"] | null;
            tls: components["schemas"]["MutualTls"] | null;
            health: components["schemas"]["SubscriptionHealth"];
            /** Format: date-time */
            createdAt: string;
            /** Format: date-time */
            updatedAt: string;
        };
        /** SubscriptionCreate */
        SubscriptionCreate: {
            /** @description http(s) URL, or a broker destination: amqp(s)://user:pass@host/vhost?exchange=…&routingKey=… or nats://user:pass@host?subject=… (docs/destinations.md; the password is sealed and shown as ***); at most 2048 characters */
            url: string;
            /** @description 1–20 distinct event types; the first is what versions before 2026-11 show */
            eventTypes: components["schemas"]["EventType"][];
            isActive?: boolean;
            authMethod?: components["schemas"]["AuthMethod"];
            bearerToken?: string | null;
            basicUsername?: string | null;
            basicPassword?: string | null;
            /**
             * @description sent as X-Webhook-Version
             * @enum {string}
             */
            webhookVersion?: "2022-04" | "2022-08" | "2025-04" | "2025-08" | "2025-12" | "2026-11";
            /** @description most concurrent attempts to this endpoint (default 16); failures lower the live ceiling, successes restore it */
            maxInFlight?: number;
            /** @description null: the service's schedule (BULB_WEBHOOK_RETRY_SCHEDULE) */
            retrySchedule?: number[] | null;
            /** @description percent: each retry delay d is drawn from [d·(1−j/100), d·(1+j/100)] (default 0) */
            retryJitter?: number;
            /** @description most attempts per second to this endpoint across every worker (null: no cap) */
            maxPerSecond?: number | null;
            /** @description authMethod OAUTH2_CLIENT_CREDENTIALS: where and how Bulb gets its bearer token */
            oauth2?: components["schemas"]["OAuth2ClientCredentialsWrite"] | null;
            /** @description mutual TLS: the client certificate presented to the receiver (any authMethod) or the broker (amqps, nats); refused on a plain http or amqp url; null removes it */
            tls?: components["schemas"]["MutualTlsWrite"] | null;
        };
        /** SubscriptionCreated */
        SubscriptionCreated: {
            /** Format: uuid */
            uuid: string;
            url: string;
            eventTypes: string[];
            isActive: boolean;
            authMethod: components["schemas"]["AuthMethod"];
            webhookVersion: string;
            maxInFlight: number;
            /** @description the delays in seconds this subscription's retries follow (its own, or the service's) */
            retrySchedule: number[];
            /** @description percent of each retry delay drawn at random either way */
            retryJitter: number;
            /** @description attempts per second across every worker (null: no cap) */
            maxPerSecond: number | null;
            oauth2: components["schemas"]["OAuth2ClientCredentials"] | null;
            tls: components["schemas"]["MutualTls"] | null;
            health: components["schemas"]["SubscriptionHealth"];
            /** Format: date-time */
            createdAt: string;
            /** Format: date-time */
            updatedAt: string;
            signingSecret: string;
        };
        /**
         * SubscriptionHealth
         * @description endpoint health (SPEC §11)
         */
        SubscriptionHealth: {
            /** @enum {string} */
            state: "healthy" | "failing" | "disabled";
            /** @description failed attempts since the last success */
            consecutiveFailures: number;
            lastSuccessAt: string | null;
            /** @description first failure after the last success */
            failingSince: string | null;
            /** @description why Bulb disabled the subscription automatically */
            disabledReason: string | null;
        };
        /**
         * SubscriptionPage
         * @description One page of a list
         */
        SubscriptionPage: {
            data: components["schemas"]["Subscription"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /** SubscriptionPatch */
        SubscriptionPatch: {
            /** @description http(s) URL, or a broker destination: amqp(s)://user:pass@host/vhost?exchange=…&routingKey=… or nats://user:pass@host?subject=… (docs/destinations.md; the password is sealed and shown as ***); at most 2048 characters */
            url?: string;
            /** @description 1–20 distinct event types; the first is what versions before 2026-11 show */
            eventTypes?: components["schemas"]["EventType"][];
            isActive?: boolean;
            authMethod?: components["schemas"]["AuthMethod"];
            bearerToken?: string | null;
            basicUsername?: string | null;
            basicPassword?: string | null;
            /**
             * @description sent as X-Webhook-Version
             * @enum {string}
             */
            webhookVersion?: "2022-04" | "2022-08" | "2025-04" | "2025-08" | "2025-12" | "2026-11";
            /** @description most concurrent attempts to this endpoint (default 16); failures lower the live ceiling, successes restore it */
            maxInFlight?: number;
            /** @description null: the service's schedule (BULB_WEBHOOK_RETRY_SCHEDULE) */
            retrySchedule?: number[] | null;
            /** @description percent: each retry delay d is drawn from [d·(1−j/100), d·(1+j/100)] (default 0) */
            retryJitter?: number;
            /** @description most attempts per second to this endpoint across every worker (null: no cap) */
            maxPerSecond?: number | null;
            /** @description authMethod OAUTH2_CLIENT_CREDENTIALS: where and how Bulb gets its bearer token */
            oauth2?: components["schemas"]["OAuth2ClientCredentialsWrite"] | null;
            /** @description mutual TLS: the client certificate presented to the receiver (any authMethod) or the broker (amqps, nats); refused on a plain http or amqp url; null removes it */
            tls?: components["schemas"]["MutualTlsWrite"] | null;
        };
        /** TestResult */
        TestResult: {
            eventUuid: string;
            deliveryUuid: string;
        };
        /** TokenRequest */
        TokenRequest: {
            /** @constant */
            grant_type: "client_credentials";
            /** @description unless sent by HTTP Basic */
            client_id?: string;
            /** @description unless sent by HTTP Basic */
            client_secret?: string;
            /** @description space-separated subset of the client's scopes (read, write, admin); default: all of them */
            scope?: string;
        };
        /**
         * TokenResponse
         * @example {
         *       "access_token": "bulb_at_3q2-7wEXAMPLE",
         *       "token_type": "Bearer",
         *       "expires_in": 3600,
         *       "scope": "read write"
         *     }
         */
        TokenResponse: {
            /** @description bulb_at_…; send as Authorization: Bearer */
            access_token: string;
            /** @constant */
            token_type: "Bearer";
            /** @description seconds (one hour) */
            expires_in: number;
            scope: string;
        };
        /**
         * WebhookDeliveryFailedEvent
         * @description The body of a webhookDeliveryFailed delivery. A delivery to another subscription exhausted its retry schedule and is failed (never sent to the subscription it is about; a failed delivery of this type emits nothing).
         */
        WebhookDeliveryFailedEvent: {
            /**
             * Format: uuid
             * @description the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header
             */
            uuid: string;
            /**
             * Format: uuid
             * @description the subscription this delivery is for
             */
            subscription: string;
            /**
             * Format: date-time
             * @description when the event occurred (RFC 3339, UTC with Z)
             */
            createdAt: string;
            /** @constant */
            eventType: "webhookDeliveryFailed";
            /** @constant */
            resourceType: "WebhookDelivery";
            resource: {
                /**
                 * Format: uuid
                 * @description the failed delivery
                 */
                uuid: string;
                /** @description always null for this resource type */
                externalId: null;
            };
            /** @description what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API */
            source: string;
        };
        /** WebhookReplay */
        WebhookReplay: {
            /** Format: uuid */
            uuid: string;
            /** Format: uuid */
            subscriptionUuid: string;
            /**
             * @description queued, running (deliveries being queued in chunks), then completed, cancelled or failed
             * @enum {string}
             */
            status: "queued" | "running" | "completed" | "cancelled" | "failed";
            /** Format: date-time */
            since: string;
            /** Format: date-time */
            until: string;
            eventTypes: string[];
            /** @description deliveries queued so far (one per event of the window) */
            eventsQueued: number;
            /** Format: date-time */
            createdAt: string;
            startedAt: string | null;
            finishedAt: string | null;
            /** @description why a replay failed */
            error: string | null;
        };
        /**
         * WebhookReplayPage
         * @description One page of a list
         */
        WebhookReplayPage: {
            data: components["schemas"]["WebhookReplay"][];
            /** @description pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * WebhookSubscriptionDisabledEvent
         * @description The body of a webhookSubscriptionDisabled delivery. Another subscription was disabled automatically: its attempts kept failing for BULB_WEBHOOK_DISABLE_AFTER_HOURS, or its endpoint answered 410 Gone (never sent to the subscription it is about).
         */
        WebhookSubscriptionDisabledEvent: {
            /**
             * Format: uuid
             * @description the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header
             */
            uuid: string;
            /**
             * Format: uuid
             * @description the subscription this delivery is for
             */
            subscription: string;
            /**
             * Format: date-time
             * @description when the event occurred (RFC 3339, UTC with Z)
             */
            createdAt: string;
            /** @constant */
            eventType: "webhookSubscriptionDisabled";
            /** @constant */
            resourceType: "WebhookSubscription";
            resource: {
                /**
                 * Format: uuid
                 * @description the disabled subscription
                 */
                uuid: string;
                /** @description always null for this resource type */
                externalId: null;
            };
            /** @description what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API */
            source: string;
        };
        /**
         * WebhookTestEvent
         * @description The body of a webhookTest delivery. A test event sent on request (POST …/subscriptions/{uuid}/test), only to that subscription.
         */
        WebhookTestEvent: {
            /**
             * Format: uuid
             * @description the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header
             */
            uuid: string;
            /**
             * Format: uuid
             * @description the subscription this delivery is for
             */
            subscription: string;
            /**
             * Format: date-time
             * @description when the event occurred (RFC 3339, UTC with Z)
             */
            createdAt: string;
            /** @constant */
            eventType: "webhookTest";
            /** @constant */
            resourceType: "WebhookSubscription";
            resource: {
                /**
                 * Format: uuid
                 * @description the subscription tested
                 */
                uuid: string;
                /** @description always null for this resource type */
                externalId: null;
            };
            /** @description what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API */
            source: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    customersList: {
        parameters: {
            query?: {
                /** @description limit */
                limit?: number;
                /** @description cursor */
                cursor?: string;
                /** @description the integrator's identifier, unique */
                externalId?: string;
                /** @description email */
                email?: string;
                /** @description search: part of the name, an email or the externalId (case-insensitive; not only spaces). A term without three letters or digits in a row, or one whose every word many customers share the letters of (an email domain, a common name), is looked for in 10,000 customers per page: such a page may hold fewer than limit customers, none even, and still have a nextCursor */
                q?: string;
                /** @description status */
                status?: "active" | "disabled" | "all";
                /** @description updatedSince */
                updatedSince?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CustomerCreate"];
            };
        };
        responses: {
            /** @description A customer record (SPEC §4). `mergedInto` names the final surviving primary of a merged-away customer. */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersGet: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A customer record (SPEC §4). `mergedInto` names the final surviving primary of a merged-away customer. */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersPut: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CustomerReplace"];
            };
        };
        responses: {
            /** @description A customer record (SPEC §4). `mergedInto` names the final surviving primary of a merged-away customer. */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description A customer record (SPEC §4). `mergedInto` names the final surviving primary of a merged-away customer. */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersPatch: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CustomerPatch"];
            };
        };
        responses: {
            /** @description A customer record (SPEC §4). `mergedInto` names the final surviving primary of a merged-away customer. */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customerAttributesList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerAttributePage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customerAttributesCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CustomerAttributeCreate"];
            };
        };
        responses: {
            /** @description A custom attribute customers can carry a value of */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerAttribute"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customerAttributesGet: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description attribute uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A custom attribute customers can carry a value of */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerAttribute"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersBulkPut: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CustomerBulkItem"][];
            };
        };
        responses: {
            /** @description One result per item, in order */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkResult"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersBulk: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CustomerBulkItem"][];
            };
        };
        responses: {
            /** @description One result per item, in order */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkResult"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersExport: {
        parameters: {
            query?: {
                /** @description which customers (default active) */
                status?: "active" | "disabled" | "all";
                /** @description customers updated at or after this time */
                updatedSince?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description NDJSON: one Customer (the Customer schema) per line */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/x-ndjson": string;
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    associatesList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AssociatePage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    associatesCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AssociateCreate"];
            };
        };
        responses: {
            /** @description A store employee */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Associate"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    associatesGet: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description associate uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A store employee */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Associate"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersOrdersList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrderPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersOrdersCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["OrderCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Order"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersFollowUpsList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FollowUpPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersFollowUpsCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FollowUpCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FollowUp"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersNotesList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotePage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersNotesCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NoteCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Note"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersMessagesList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MessagePage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersMessagesCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["MessageCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Message"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersPreferencesList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreferencePage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersPreferencesCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PreferenceCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Preference"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersProductSharesList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProductSharePage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersProductSharesCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ProductShareCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProductShare"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersAssociatesList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AssociationPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersAssociatesCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AssociationCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Association"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customerNotesCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CustomerNoteCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Note"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customerNotesGet: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the note: uuid or externalId (a uuid match wins) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Note"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customerNotesPut: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the note: uuid or externalId (a uuid match wins) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NoteReplace"];
            };
        };
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Note"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersMerge: {
        parameters: {
            query?: {
                /** @description compute the counts, change nothing */
                dryRun?: boolean;
            };
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the primary customer: its uuid or its externalId (a uuid match wins) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["MergeRequest"];
            };
        };
        responses: {
            /** @description The outcome of a merge (or of a dry run) */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MergeResult"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersMerges: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MergeRecordPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    mergesUndo: {
        parameters: {
            query?: {
                /** @description compute what would move back, change nothing */
                dryRun?: boolean;
            };
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description uuid of the merge (mergeUuid of its MergeResult) */
                mergeUuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        mergeUuid: string;
                        /** @description true once undone; false for a dry run */
                        undone: boolean;
                        primary: components["schemas"]["Customer"];
                        /** @description externalIds of the secondaries, active again */
                        restoredCustomerIds: string[];
                        movedBack: components["schemas"]["MovedCounts"];
                        /** @description associations the merge removed as duplicates, re-created */
                        associationsRestored: number;
                        dryRun: boolean;
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customersDuplicates: {
        parameters: {
            query?: {
                /** @description how many, best first */
                limit?: number;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description customer uuid or externalId */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: {
                            customer: components["schemas"]["Customer"];
                            /** @description 0..1, higher is likelier the same person */
                            score: number;
                            reasons: {
                                /** @enum {string} */
                                field: "email" | "phone" | "name" | "address";
                                /** @description what matched, e.g. "same phone +12015550123" */
                                detail: string;
                            }[];
                        }[];
                        /** @description customers changed but not yet folded into the pairs by the background refresher (the answer is the pairs as they stand); counted up to 10000: 10000 means at least as many */
                        pendingCustomers: number;
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    duplicatesList: {
        parameters: {
            query?: {
                /** @description lowest score listed (default 0.8; pairs below 0.5 are not kept) */
                minScore?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
                /** @description page size, 1–250 */
                limit?: number;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: {
                            customers: components["schemas"]["Customer"][];
                            /** @description 0..1, higher is likelier the same person */
                            score: number;
                            reasons: {
                                /** @enum {string} */
                                field: "email" | "phone" | "name" | "address";
                                /** @description what matched, e.g. "same phone +12015550123" */
                                detail: string;
                            }[];
                        }[];
                        nextCursor: string | null;
                        /** @description customers changed but not yet folded into the pairs by the background refresher (the answer is the pairs as they stand); counted up to 10000: 10000 means at least as many */
                        pendingCustomers: number;
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    apiKeysList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    apiKeysCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CredentialCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyCreated"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    apiKeysRevoke: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no body */
            204: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    authClientsList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthClientPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    authClientsCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CredentialCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthClientCreated"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    authClientsRevoke: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no body */
            204: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksEventTypes: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventCatalog"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksSubscriptionsList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
                /** @description eventType */
                eventType?: components["schemas"]["EventType"];
                /** @description isActive */
                isActive?: boolean;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksSubscriptionsCreate: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SubscriptionCreate"];
            };
        };
        responses: {
            /** @description Success */
            201: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionCreated"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksSubscriptionsGet: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A webhook subscription (credentials are write-only, never returned) */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksSubscriptionsDelete: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no body */
            204: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksSubscriptionsPatch: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SubscriptionPatch"];
            };
        };
        responses: {
            /** @description A webhook subscription (credentials are write-only, never returned) */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksSubscriptionsSecret: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SigningSecret"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksSubscriptionsRotateSecret: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SigningSecret"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksSubscriptionsTest: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            202: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TestResult"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksSubscriptionsRecover: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RecoverRequest"];
            };
        };
        responses: {
            /** @description Success */
            202: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RecoverResult"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksDeliveriesList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
                /** @description status */
                status?: components["schemas"]["DeliveryStatus"];
                /** @description subscription */
                subscription?: string;
                /** @description eventType */
                eventType?: components["schemas"]["EventType"];
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveryPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksDeliveriesRetry: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One event to one subscription */
            202: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Delivery"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksStats: {
        parameters: {
            query?: {
                /** @description hours to look back (1–168) */
                hours?: number;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        hours: number;
                        /** Format: date-time */
                        since: string;
                        overall: {
                            /**
                             * Format: date-time
                             * @description start of the hour (UTC)
                             */
                            hour: string;
                            attempts: number;
                            successes: number;
                        }[];
                        subscriptions: {
                            /** Format: uuid */
                            subscriptionUuid: string;
                            buckets: {
                                /**
                                 * Format: date-time
                                 * @description start of the hour (UTC)
                                 */
                                hour: string;
                                attempts: number;
                                successes: number;
                            }[];
                        }[];
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksLogs: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
                /** @description subscription */
                subscription?: string;
                /** @description eventType */
                eventType?: components["schemas"]["EventType"];
                /** @description outcome */
                outcome?: "success" | "failure";
                /** @description attempts started at or after this time */
                since?: string;
                /** @description attempts started before this time (exclusive) */
                until?: string;
                /** @description only the attempts of this delivery */
                delivery?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AttemptPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksReplaysStart: {
        parameters: {
            query?: never;
            header?: {
                /** @description the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409 */
                "Idempotency-Key"?: string;
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReplayRequest"];
            };
        };
        responses: {
            /** @description Success */
            202: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    /** @description true when this answer is the replay of an earlier one to the same Idempotency-Key */
                    "Idempotent-Replayed"?: "true";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookReplay"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksReplaysList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookReplayPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksReplaysGet: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookReplay"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    webhooksReplaysCancel: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookReplay"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    eventsList: {
        parameters: {
            query?: {
                /** @description one event type or several, comma-separated: customerCreate, customerUpdate, customerMerge, customerUnmerge, customerNoteCreate, customerNoteUpdate */
                eventType?: string;
                /** @description events created at or after this time */
                since?: string;
                /** @description events created before this time */
                until?: string;
                /** @description events of this resource only; a page reads at most 5000 of its events, so with eventType or since/until it may hold fewer than limit, or none, and still give a nextCursor to go on from */
                resourceUuid?: string;
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: {
                            /** Format: uuid */
                            uuid: string;
                            /** Format: date-time */
                            createdAt: string;
                            eventType: string;
                            resourceType: string;
                            resource: {
                                /** Format: uuid */
                                uuid: string;
                                externalId: string | null;
                            };
                            source: string;
                        }[];
                        /** @description pass as `cursor` for the next page; null on the last page */
                        nextCursor: string | null;
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    eventsGet: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description event uuid */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        uuid: string;
                        /** Format: date-time */
                        createdAt: string;
                        eventType: string;
                        resourceType: string;
                        resource: {
                            /** Format: uuid */
                            uuid: string;
                            externalId: string | null;
                        };
                        source: string;
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    importsList: {
        parameters: {
            query?: {
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: {
                            /** Format: uuid */
                            uuid: string;
                            /** @enum {string} */
                            status: "receiving" | "queued" | "running" | "completed" | "failed" | "cancelled";
                            /** @enum {string} */
                            format: "ndjson" | "csv" | "tgen";
                            /** @description format tgen: the TGEN file read, "<kind> <importType> <apiVersion>" (e.g. "customers partialupdate 2025-08"), from its name, or read from its header as a fullupdate; null for other formats */
                            tgenFile: string | null;
                            /** @description whether the import emits customerCreate/customerUpdate events (events=true) */
                            events: boolean;
                            /** @description data lines received (blank lines not counted) */
                            rowsReceived: number;
                            /** @description lines processed so far, failed ones included */
                            rowsDone: number;
                            created: number;
                            updated: number;
                            unchanged: number;
                            /** @description lines refused (see …/errors) */
                            failed: number;
                            /** Format: date-time */
                            createdAt: string;
                            startedAt: string | null;
                            finishedAt: string | null;
                            /** @description rows processed per second since the work started */
                            rowsPerSecond: number;
                            /** @description at the current rate; null while unknown */
                            estimatedSecondsLeft: number | null;
                            /** @description why a failed import failed */
                            error: string | null;
                        }[];
                        /** @description pass as `cursor` for the next page; null on the last page */
                        nextCursor: string | null;
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    importsCreate: {
        parameters: {
            query?: {
                /** @description default: from the Content-Type (tgen when a name is given); tgen: a Tulip TGEN CSV file, sent as text/csv */
                format?: "ndjson" | "csv" | "tgen";
                /** @description format tgen: the TGEN file's name (TGEN_customers_partialupdate_2025-08_x.csv), which gives its kind, import type and API version */
                name?: string;
                /** @description false: write no events (first loads) */
                events?: boolean;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/x-ndjson": string;
                "text/csv": string;
            };
        };
        responses: {
            /** @description Success */
            202: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        uuid: string;
                        /** @enum {string} */
                        status: "receiving" | "queued" | "running" | "completed" | "failed" | "cancelled";
                        /** @enum {string} */
                        format: "ndjson" | "csv" | "tgen";
                        /** @description format tgen: the TGEN file read, "<kind> <importType> <apiVersion>" (e.g. "customers partialupdate 2025-08"), from its name, or read from its header as a fullupdate; null for other formats */
                        tgenFile: string | null;
                        /** @description whether the import emits customerCreate/customerUpdate events (events=true) */
                        events: boolean;
                        /** @description data lines received (blank lines not counted) */
                        rowsReceived: number;
                        /** @description lines processed so far, failed ones included */
                        rowsDone: number;
                        created: number;
                        updated: number;
                        unchanged: number;
                        /** @description lines refused (see …/errors) */
                        failed: number;
                        /** Format: date-time */
                        createdAt: string;
                        startedAt: string | null;
                        finishedAt: string | null;
                        /** @description rows processed per second since the work started */
                        rowsPerSecond: number;
                        /** @description at the current rate; null while unknown */
                        estimatedSecondsLeft: number | null;
                        /** @description why a failed import failed */
                        error: string | null;
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Error */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request failed",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "see the API reference at /docs (GET /api/versions lists the versions)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    importsGet: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        uuid: string;
                        /** @enum {string} */
                        status: "receiving" | "queued" | "running" | "completed" | "failed" | "cancelled";
                        /** @enum {string} */
                        format: "ndjson" | "csv" | "tgen";
                        /** @description format tgen: the TGEN file read, "<kind> <importType> <apiVersion>" (e.g. "customers partialupdate 2025-08"), from its name, or read from its header as a fullupdate; null for other formats */
                        tgenFile: string | null;
                        /** @description whether the import emits customerCreate/customerUpdate events (events=true) */
                        events: boolean;
                        /** @description data lines received (blank lines not counted) */
                        rowsReceived: number;
                        /** @description lines processed so far, failed ones included */
                        rowsDone: number;
                        created: number;
                        updated: number;
                        unchanged: number;
                        /** @description lines refused (see …/errors) */
                        failed: number;
                        /** Format: date-time */
                        createdAt: string;
                        startedAt: string | null;
                        finishedAt: string | null;
                        /** @description rows processed per second since the work started */
                        rowsPerSecond: number;
                        /** @description at the current rate; null while unknown */
                        estimatedSecondsLeft: number | null;
                        /** @description why a failed import failed */
                        error: string | null;
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    importsErrors: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one error per line */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/x-ndjson": string;
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    importsCancel: {
        parameters: {
            query?: never;
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path: {
                /** @description the uuid of the resource */
                uuid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        uuid: string;
                        /** @enum {string} */
                        status: "receiving" | "queued" | "running" | "completed" | "failed" | "cancelled";
                        /** @enum {string} */
                        format: "ndjson" | "csv" | "tgen";
                        /** @description format tgen: the TGEN file read, "<kind> <importType> <apiVersion>" (e.g. "customers partialupdate 2025-08"), from its name, or read from its header as a fullupdate; null for other formats */
                        tgenFile: string | null;
                        /** @description whether the import emits customerCreate/customerUpdate events (events=true) */
                        events: boolean;
                        /** @description data lines received (blank lines not counted) */
                        rowsReceived: number;
                        /** @description lines processed so far, failed ones included */
                        rowsDone: number;
                        created: number;
                        updated: number;
                        unchanged: number;
                        /** @description lines refused (see …/errors) */
                        failed: number;
                        /** Format: date-time */
                        createdAt: string;
                        startedAt: string | null;
                        finishedAt: string | null;
                        /** @description rows processed per second since the work started */
                        rowsPerSecond: number;
                        /** @description at the current rate; null while unknown */
                        estimatedSecondsLeft: number | null;
                        /** @description why a failed import failed */
                        error: string | null;
                    };
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "customer \"ext-404\" not found",
                     *           "errorCode": "NotFound",
                     *           "moreInfo": "id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "a record with this identifier already exists",
                     *           "errorCode": "Conflict",
                     *           "moreInfo": "externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 1 MiB",
                     *           "errorCode": "PayloadTooLarge",
                     *           "moreInfo": "send a smaller body (the message gives this route's limit), or split the request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "request body must be application/json",
                     *           "errorCode": "UnsupportedMediaType",
                     *           "moreInfo": "send Content-Type: application/json"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    auditLogList: {
        parameters: {
            query?: {
                /** @description one action */
                action?: "apiKey.created" | "apiKey.revoked" | "authClient.created" | "authClient.revoked" | "subscription.created" | "subscription.changed" | "subscription.deleted" | "subscription.disabled" | "subscription.secretRevealed" | "subscription.secretRotated" | "merge.created" | "merge.undone" | "import.started" | "import.cancelled" | "replay.started" | "replay.cancelled";
                /** @description an API key or auth client uuid, its name, or "system" */
                actor?: string;
                /** @description acts at or after this time */
                since?: string;
                /** @description page size, 1–250 */
                limit?: number;
                /** @description opaque cursor from a previous nextCursor */
                cursor?: string;
            };
            header?: {
                /** @description the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used) */
                "X-Request-Id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of a list */
            200: {
                headers: {
                    /** @description the version that served the request */
                    "X-Api-Version"?: string;
                    /** @description the id of this request in the logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuditEntryPage"];
                };
            };
            /** @description Invalid input */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "\"externalId\" must NOT have fewer than 1 characters",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "body.externalId"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or expired token */
            401: {
                headers: {
                    /** @description Bearer realm="bulb" */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "an Authorization: Bearer token is required",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "send \"Authorization: Bearer <API key>\"; an admin key makes keys with POST /api/{version}/integrations/apiKeys"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token lacks the scope (Forbidden), or the resource's state refuses the request (CustomerDisabled: the customer is disabled) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "this route needs the \"write\" scope",
                     *           "errorCode": "Forbidden",
                     *           "moreInfo": "token scopes: read"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "too many requests for this token",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "retry after 1 s"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    oauth2Token: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "grant_type": "client_credentials",
                 *       "client_id": "bulb_client_EXAMPLE",
                 *       "client_secret": "bulb_cs_EXAMPLE"
                 *     }
                 */
                "application/x-www-form-urlencoded": components["schemas"]["TokenRequest"];
                /**
                 * @example {
                 *       "grant_type": "client_credentials",
                 *       "client_id": "bulb_client_EXAMPLE",
                 *       "client_secret": "bulb_cs_EXAMPLE"
                 *     }
                 */
                "application/json": components["schemas"]["TokenRequest"];
            };
        };
        responses: {
            /** @description An access token */
            200: {
                headers: {
                    /** @description no-store */
                    "Cache-Control"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenResponse"];
                };
            };
            /** @description Bad request (invalid_request, unsupported_grant_type, invalid_scope); a request that is not parseable HTTP gets the SPEC error list alone */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "error": "unsupported_grant_type",
                     *       "error_description": "only client_credentials is supported",
                     *       "errors": [
                     *         {
                     *           "message": "only client_credentials is supported",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "unsupported_grant_type"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["OAuthError"] | components["schemas"]["Error"];
                };
            };
            /** @description Client authentication failed (invalid_client) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "error": "invalid_client",
                     *       "error_description": "client authentication failed",
                     *       "errors": [
                     *         {
                     *           "message": "client authentication failed",
                     *           "errorCode": "Unauthorized",
                     *           "moreInfo": "invalid_client"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description Body over 64 KiB (invalid_request) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "error": "invalid_request",
                     *       "error_description": "request body exceeds 64 KiB",
                     *       "errors": [
                     *         {
                     *           "message": "request body exceeds 64 KiB",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "invalid_request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description Body is neither a form nor JSON (invalid_request) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "error": "invalid_request",
                     *       "error_description": "unsupported Content-Type",
                     *       "errors": [
                     *         {
                     *           "message": "unsupported Content-Type",
                     *           "errorCode": "InvalidParameterError",
                     *           "moreInfo": "invalid_request"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description Too many failed client authentications from this address, or too many tokens issued to this client (temporarily_unavailable): retry after Retry-After */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "error": "temporarily_unavailable",
                     *       "error_description": "too many tokens issued to this client: reuse a token until it expires (expires_in); retry after 1 s",
                     *       "errors": [
                     *         {
                     *           "message": "too many tokens issued to this client: reuse a token until it expires (expires_in); retry after 1 s",
                     *           "errorCode": "RateLimited",
                     *           "moreInfo": "temporarily_unavailable"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description Internal error (no internals are disclosed) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "internal error",
                     *           "errorCode": "InternalError",
                     *           "moreInfo": "the server logged it under this answer's X-Request-Id"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk) */
            503: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "errors": [
                     *         {
                     *           "message": "the database is unavailable (restarting or failing over); retry shortly",
                     *           "errorCode": "ServiceUnavailable",
                     *           "moreInfo": "retry shortly (after the seconds of the Retry-After header, when the answer has one)"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    customerCreateEvent: {
        parameters: {
            query?: never;
            header: {
                /**
                 * @description lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation
                 * @example 5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6
                 */
                "X-Tulip-Hmac-256": string;
                /**
                 * @description Standard Webhooks: the event uuid (dedupe on it)
                 * @example 03a4eabd-2551-41d9-9828-e105b1eb5cf5
                 */
                "webhook-id": string;
                /**
                 * @description Standard Webhooks: unix seconds of the attempt
                 * @example 1793713530
                 */
                "webhook-timestamp": string;
                /**
                 * @description Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated
                 * @example v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
                 */
                "webhook-signature": string;
                /**
                 * @description the subscription's webhookVersion
                 * @example 2022-08
                 */
                "X-Webhook-Version": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "uuid": "03a4eabd-2551-41d9-9828-e105b1eb5cf5",
                 *       "subscription": "1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b",
                 *       "createdAt": "2026-11-02T13:45:30.123Z",
                 *       "eventType": "customerCreate",
                 *       "resourceType": "Customer",
                 *       "resource": {
                 *         "uuid": "03b4eabd-2551-41d9-9828-e105b1eb5cf5",
                 *         "externalId": "c-2154"
                 *       },
                 *       "source": "TULIP_APP"
                 *     }
                 */
                "application/json": components["schemas"]["CustomerCreateEvent"];
            };
        };
        responses: {
            /** @description Any 2xx within 20 s acknowledges the delivery (the body is ignored) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated) */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    customerUpdateEvent: {
        parameters: {
            query?: never;
            header: {
                /**
                 * @description lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation
                 * @example 5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6
                 */
                "X-Tulip-Hmac-256": string;
                /**
                 * @description Standard Webhooks: the event uuid (dedupe on it)
                 * @example 03a4eabd-2551-41d9-9828-e105b1eb5cf5
                 */
                "webhook-id": string;
                /**
                 * @description Standard Webhooks: unix seconds of the attempt
                 * @example 1793713530
                 */
                "webhook-timestamp": string;
                /**
                 * @description Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated
                 * @example v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
                 */
                "webhook-signature": string;
                /**
                 * @description the subscription's webhookVersion
                 * @example 2022-08
                 */
                "X-Webhook-Version": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "uuid": "03a4eb1e-2551-41d9-9828-e105b1eb5cf5",
                 *       "subscription": "1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b",
                 *       "createdAt": "2026-11-02T13:45:30.123Z",
                 *       "eventType": "customerUpdate",
                 *       "resourceType": "Customer",
                 *       "resource": {
                 *         "uuid": "03b4eb1e-2551-41d9-9828-e105b1eb5cf5",
                 *         "externalId": "c-2154"
                 *       },
                 *       "source": "TULIP_APP"
                 *     }
                 */
                "application/json": components["schemas"]["CustomerUpdateEvent"];
            };
        };
        responses: {
            /** @description Any 2xx within 20 s acknowledges the delivery (the body is ignored) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated) */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    customerMergeEvent: {
        parameters: {
            query?: never;
            header: {
                /**
                 * @description lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation
                 * @example 5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6
                 */
                "X-Tulip-Hmac-256": string;
                /**
                 * @description Standard Webhooks: the event uuid (dedupe on it)
                 * @example 03a4eabd-2551-41d9-9828-e105b1eb5cf5
                 */
                "webhook-id": string;
                /**
                 * @description Standard Webhooks: unix seconds of the attempt
                 * @example 1793713530
                 */
                "webhook-timestamp": string;
                /**
                 * @description Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated
                 * @example v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
                 */
                "webhook-signature": string;
                /**
                 * @description the subscription's webhookVersion
                 * @example 2022-08
                 */
                "X-Webhook-Version": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "uuid": "03a4eb7f-2551-41d9-9828-e105b1eb5cf5",
                 *       "subscription": "1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b",
                 *       "createdAt": "2026-11-02T13:45:30.123Z",
                 *       "eventType": "customerMerge",
                 *       "resourceType": "Customer",
                 *       "resource": {
                 *         "uuid": "03b4eb7f-2551-41d9-9828-e105b1eb5cf5",
                 *         "externalId": "c-2154"
                 *       },
                 *       "source": "TULIP_APP"
                 *     }
                 */
                "application/json": components["schemas"]["CustomerMergeEvent"];
            };
        };
        responses: {
            /** @description Any 2xx within 20 s acknowledges the delivery (the body is ignored) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated) */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    customerUnmergeEvent: {
        parameters: {
            query?: never;
            header: {
                /**
                 * @description lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation
                 * @example 5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6
                 */
                "X-Tulip-Hmac-256": string;
                /**
                 * @description Standard Webhooks: the event uuid (dedupe on it)
                 * @example 03a4eabd-2551-41d9-9828-e105b1eb5cf5
                 */
                "webhook-id": string;
                /**
                 * @description Standard Webhooks: unix seconds of the attempt
                 * @example 1793713530
                 */
                "webhook-timestamp": string;
                /**
                 * @description Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated
                 * @example v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
                 */
                "webhook-signature": string;
                /**
                 * @description the subscription's webhookVersion
                 * @example 2022-08
                 */
                "X-Webhook-Version": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "uuid": "03a4ebe0-2551-41d9-9828-e105b1eb5cf5",
                 *       "subscription": "1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b",
                 *       "createdAt": "2026-11-02T13:45:30.123Z",
                 *       "eventType": "customerUnmerge",
                 *       "resourceType": "Customer",
                 *       "resource": {
                 *         "uuid": "03b4ebe0-2551-41d9-9828-e105b1eb5cf5",
                 *         "externalId": "c-2154"
                 *       },
                 *       "source": "TULIP_APP"
                 *     }
                 */
                "application/json": components["schemas"]["CustomerUnmergeEvent"];
            };
        };
        responses: {
            /** @description Any 2xx within 20 s acknowledges the delivery (the body is ignored) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated) */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    customerNoteCreateEvent: {
        parameters: {
            query?: never;
            header: {
                /**
                 * @description lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation
                 * @example 5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6
                 */
                "X-Tulip-Hmac-256": string;
                /**
                 * @description Standard Webhooks: the event uuid (dedupe on it)
                 * @example 03a4eabd-2551-41d9-9828-e105b1eb5cf5
                 */
                "webhook-id": string;
                /**
                 * @description Standard Webhooks: unix seconds of the attempt
                 * @example 1793713530
                 */
                "webhook-timestamp": string;
                /**
                 * @description Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated
                 * @example v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
                 */
                "webhook-signature": string;
                /**
                 * @description the subscription's webhookVersion
                 * @example 2022-08
                 */
                "X-Webhook-Version": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "uuid": "03a4ec41-2551-41d9-9828-e105b1eb5cf5",
                 *       "subscription": "1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b",
                 *       "createdAt": "2026-11-02T13:45:30.123Z",
                 *       "eventType": "customerNoteCreate",
                 *       "resourceType": "CustomerNote",
                 *       "resource": {
                 *         "uuid": "03b4ec41-2551-41d9-9828-e105b1eb5cf5",
                 *         "externalId": "note-77"
                 *       },
                 *       "source": "TULIP_APP"
                 *     }
                 */
                "application/json": components["schemas"]["CustomerNoteCreateEvent"];
            };
        };
        responses: {
            /** @description Any 2xx within 20 s acknowledges the delivery (the body is ignored) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated) */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    customerNoteUpdateEvent: {
        parameters: {
            query?: never;
            header: {
                /**
                 * @description lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation
                 * @example 5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6
                 */
                "X-Tulip-Hmac-256": string;
                /**
                 * @description Standard Webhooks: the event uuid (dedupe on it)
                 * @example 03a4eabd-2551-41d9-9828-e105b1eb5cf5
                 */
                "webhook-id": string;
                /**
                 * @description Standard Webhooks: unix seconds of the attempt
                 * @example 1793713530
                 */
                "webhook-timestamp": string;
                /**
                 * @description Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated
                 * @example v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
                 */
                "webhook-signature": string;
                /**
                 * @description the subscription's webhookVersion
                 * @example 2022-08
                 */
                "X-Webhook-Version": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "uuid": "03a4eca2-2551-41d9-9828-e105b1eb5cf5",
                 *       "subscription": "1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b",
                 *       "createdAt": "2026-11-02T13:45:30.123Z",
                 *       "eventType": "customerNoteUpdate",
                 *       "resourceType": "CustomerNote",
                 *       "resource": {
                 *         "uuid": "03b4eca2-2551-41d9-9828-e105b1eb5cf5",
                 *         "externalId": null
                 *       },
                 *       "source": "TULIP_APP"
                 *     }
                 */
                "application/json": components["schemas"]["CustomerNoteUpdateEvent"];
            };
        };
        responses: {
            /** @description Any 2xx within 20 s acknowledges the delivery (the body is ignored) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated) */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    webhookTestEvent: {
        parameters: {
            query?: never;
            header: {
                /**
                 * @description lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation
                 * @example 5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6
                 */
                "X-Tulip-Hmac-256": string;
                /**
                 * @description Standard Webhooks: the event uuid (dedupe on it)
                 * @example 03a4eabd-2551-41d9-9828-e105b1eb5cf5
                 */
                "webhook-id": string;
                /**
                 * @description Standard Webhooks: unix seconds of the attempt
                 * @example 1793713530
                 */
                "webhook-timestamp": string;
                /**
                 * @description Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated
                 * @example v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
                 */
                "webhook-signature": string;
                /**
                 * @description the subscription's webhookVersion
                 * @example 2022-08
                 */
                "X-Webhook-Version": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "uuid": "03a4ed03-2551-41d9-9828-e105b1eb5cf5",
                 *       "subscription": "1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b",
                 *       "createdAt": "2026-11-02T13:45:30.123Z",
                 *       "eventType": "webhookTest",
                 *       "resourceType": "WebhookSubscription",
                 *       "resource": {
                 *         "uuid": "03b4ed03-2551-41d9-9828-e105b1eb5cf5",
                 *         "externalId": null
                 *       },
                 *       "source": "TULIP_APP"
                 *     }
                 */
                "application/json": components["schemas"]["WebhookTestEvent"];
            };
        };
        responses: {
            /** @description Any 2xx within 20 s acknowledges the delivery (the body is ignored) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated) */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    webhookDeliveryFailedEvent: {
        parameters: {
            query?: never;
            header: {
                /**
                 * @description lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation
                 * @example 5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6
                 */
                "X-Tulip-Hmac-256": string;
                /**
                 * @description Standard Webhooks: the event uuid (dedupe on it)
                 * @example 03a4eabd-2551-41d9-9828-e105b1eb5cf5
                 */
                "webhook-id": string;
                /**
                 * @description Standard Webhooks: unix seconds of the attempt
                 * @example 1793713530
                 */
                "webhook-timestamp": string;
                /**
                 * @description Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated
                 * @example v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
                 */
                "webhook-signature": string;
                /**
                 * @description the subscription's webhookVersion
                 * @example 2022-08
                 */
                "X-Webhook-Version": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "uuid": "03a4ed64-2551-41d9-9828-e105b1eb5cf5",
                 *       "subscription": "1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b",
                 *       "createdAt": "2026-11-02T13:45:30.123Z",
                 *       "eventType": "webhookDeliveryFailed",
                 *       "resourceType": "WebhookDelivery",
                 *       "resource": {
                 *         "uuid": "03b4ed64-2551-41d9-9828-e105b1eb5cf5",
                 *         "externalId": null
                 *       },
                 *       "source": "TULIP_API"
                 *     }
                 */
                "application/json": components["schemas"]["WebhookDeliveryFailedEvent"];
            };
        };
        responses: {
            /** @description Any 2xx within 20 s acknowledges the delivery (the body is ignored) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated) */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    webhookSubscriptionDisabledEvent: {
        parameters: {
            query?: never;
            header: {
                /**
                 * @description lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation
                 * @example 5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6
                 */
                "X-Tulip-Hmac-256": string;
                /**
                 * @description Standard Webhooks: the event uuid (dedupe on it)
                 * @example 03a4eabd-2551-41d9-9828-e105b1eb5cf5
                 */
                "webhook-id": string;
                /**
                 * @description Standard Webhooks: unix seconds of the attempt
                 * @example 1793713530
                 */
                "webhook-timestamp": string;
                /**
                 * @description Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated
                 * @example v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=
                 */
                "webhook-signature": string;
                /**
                 * @description the subscription's webhookVersion
                 * @example 2022-08
                 */
                "X-Webhook-Version": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "uuid": "03a4edc5-2551-41d9-9828-e105b1eb5cf5",
                 *       "subscription": "1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b",
                 *       "createdAt": "2026-11-02T13:45:30.123Z",
                 *       "eventType": "webhookSubscriptionDisabled",
                 *       "resourceType": "WebhookSubscription",
                 *       "resource": {
                 *         "uuid": "03b4edc5-2551-41d9-9828-e105b1eb5cf5",
                 *         "externalId": null
                 *       },
                 *       "source": "TULIP_API"
                 *     }
                 */
                "application/json": components["schemas"]["WebhookSubscriptionDisabledEvent"];
            };
        };
        responses: {
            /** @description Any 2xx within 20 s acknowledges the delivery (the body is ignored) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated) */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}
