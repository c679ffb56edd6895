// Merge shapes on the wire (SPEC §6): the 2025-04 request and MergeResult, the legacy {"ids":[…]}
// bodies, and a merge record of the history.
import { Type, type Static } from '@sinclair/typebox';
import { Customer, CustomerRef, ExternalId } from '../customers/schema.ts';
import { PageQuery } from '../../http/pagination.ts';

const closed = { additionalProperties: false } as const;
const ids = (item: any, description: string) => Type.Array(item, { minItems: 1, maxItems: 100, description });

export const MergeBody = Type.Object(
  { mergeWithCustomerIds: ids(ExternalId, 'the secondary customers, each by uuid or externalId (a uuid match wins); 1–100, no duplicates, not the primary') },
  { ...closed, title: 'MergeRequest' },
);
export const MergeQuery = Type.Object({ dryRun: Type.Optional(Type.Boolean({ default: false, description: 'compute the counts, change nothing' })) }, closed);
export const ExternalIdParams = Type.Object({ id: ExternalId });
export const PrimaryParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255, description: 'the primary customer: its uuid or its externalId (a uuid match wins)' }) });
// Tulip's legacy merge names customers by Tulip id (https://docs.tulip.com/integrating/customer-merge:
// PUT …/v2/crm/customers/2154/merge {"ids":[2155,2156,2157]}): Bulb's numeric customer `id`; uuids work too.
// A positive id of at most 18 significant digits, leading zeros ignored ("0" and "00" named nobody and were a 404, not
// the 400 the docs give; a probe, 2026-11-29).
export const TULIP_ID_PATTERN = '^0*[1-9][0-9]{0,17}$';
const UUID_PATTERN = '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
export const TulipIdOrUuid = Type.Union([
  Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "the customer's numeric id (a larger one as a numeric string: JSON numbers past 2^53 lose digits)" }),
  Type.String({ pattern: TULIP_ID_PATTERN, description: "the customer's numeric id, as text" }),
  Type.String({ pattern: UUID_PATTERN, description: "the customer's uuid" }),
]);
export const LegacyIdParams = Type.Object({ id: Type.String({ pattern: `${TULIP_ID_PATTERN}|${UUID_PATTERN}`, description: "the primary customer's numeric id or uuid" }) });
export const LegacyIdBody = Type.Object({ ids: ids(TulipIdOrUuid, 'the secondary customers: numeric ids (JSON numbers or numeric strings) or uuids') }, { ...closed, title: 'LegacyMergeById' });
export const LegacyExternalIdBody = Type.Object({ ids: ids(ExternalId, 'externalIds of the secondary customers') }, { ...closed, title: 'LegacyMergeByExternalId' });

/**
 * A merge body as its route validates it (the strict one above is the documented body): the list and its bounds,
 * each item checked by checkRequest with the duplicates and the primary, so one answer lists every problem (SPEC §6;
 * an empty id beside a repeated one had hidden the repeat).
 */
export const listBody = (field: string) => Type.Object({ [field]: Type.Array(Type.Unknown(), { minItems: 1, maxItems: 100 }) }, closed);

export const MOVED_KEYS = ['orders', 'followUps', 'notes', 'messages', 'preferences', 'productShares', 'associates'] as const;
export type Moved = Record<(typeof MOVED_KEYS)[number], number>;
const MovedSchema = Type.Object(Object.fromEntries(MOVED_KEYS.map((k) => [k, Type.Integer()])) as Record<(typeof MOVED_KEYS)[number], ReturnType<typeof Type.Integer>>, { title: 'MovedCounts', description: 'rows moved to the primary, per kind' });

export const MergeResult = Type.Object({
  mergeUuid: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'the merge record; null for a dry run or when nothing was left to merge' }),
  primary: Customer,
  mergedCustomerIds: Type.Array(Type.String(), { description: 'externalIds of the secondaries, all merged into the primary after this call' }),
  moved: MovedSchema,
  duplicateAssociatesRemoved: Type.Integer(),
  dryRun: Type.Boolean(),
}, { title: 'MergeResult', description: 'The outcome of a merge (or of a dry run)' });
export type MergeResultT = Static<typeof MergeResult>;

export const MergeRecord = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  primary: CustomerRef,
  secondaries: Type.Array(CustomerRef),
  moved: MovedSchema,
  duplicateAssociatesRemoved: Type.Integer(),
  tokenUuid: Type.Union([Type.String(), Type.Null()], { description: 'the API key or auth client that asked' }),
  source: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  undoneAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when the merge was undone (2026-11); null if it stands' }),
}, { title: 'MergeRecord', description: 'One merge of the history' });
export const MergesQuery = Type.Object({ ...PageQuery }, closed);

/** The SPEC §3 error body, for the error statuses a route declares. */
export const ErrorBody = Type.Object({
  errors: Type.Array(Type.Object({ message: Type.String(), errorCode: Type.String(), moreInfo: Type.String() })),
});
export const errorsFor = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, ErrorBody]));

export const MergeUuidParams = Type.Object({ mergeUuid: Type.String({ format: 'uuid', description: 'uuid of the merge (mergeUuid of its MergeResult)' }) });
export const UndoQuery = Type.Object({ dryRun: Type.Optional(Type.Boolean({ default: false, description: 'compute what would move back, change nothing' })) }, closed);
export const UndoResult = Type.Object({
  mergeUuid: Type.String({ format: 'uuid' }),
  undone: Type.Boolean({ description: 'true once undone; false for a dry run' }),
  primary: Customer,
  restoredCustomerIds: Type.Array(Type.String(), { description: 'externalIds of the secondaries, active again' }),
  movedBack: MovedSchema,
  associationsRestored: Type.Integer({ description: 'associations the merge removed as duplicates, re-created' }),
  dryRun: Type.Boolean(),
});
export type UndoResultT = Static<typeof UndoResult>;
