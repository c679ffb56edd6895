// The seven kinds of data attached to a customer (SPEC §4), declared once each: wire schemas, the
// table and the columns written on create, and how a row is shaped for the wire. The store, the
// routes and the merge all iterate over this list.
import { Type, type TObject } from '@sinclair/typebox';
import { StringEnum } from '../../http/schema.ts';
import { isoNN } from '../../http/time.ts';
import type { Queryable } from '../../db/db.ts';
import { createNote, Note, NoteCreate, noteValues, shapeNote } from './notes.ts';
import { NOTE_CASTS, NOTE_COLUMNS, type KindTable } from './store.ts';

const closed = { additionalProperties: false } as const;
const Str = (min: number, max: number) => Type.String({ minLength: min, maxLength: max });
const NullableStr = (max: number) => Type.Union([Type.String({ maxLength: max }), Type.Null()]);
const DateTime = Type.String({ format: 'date-time' });
const Decimal = Type.String({ pattern: '^-?[0-9]{1,15}(\\.[0-9]{1,6})?$', description: 'decimal number as a string, e.g. "129.90"' });
const AssociateRef = Type.Optional(Type.Union([Type.String({ format: 'uuid' }), Type.Null()]));
const Nullable = (t: any) => Type.Union([t, Type.Null()]);


/** Fields common to every attached row on the wire. */
const common = { uuid: Type.String({ format: 'uuid' }), customerUuid: Type.String({ format: 'uuid' }), createdAt: DateTime };

export type KindName = 'orders' | 'followUps' | 'notes' | 'messages' | 'preferences' | 'productShares' | 'associates';

export interface Kind extends KindTable {
  /** Path segment under /crm/customers/{id}/ and key in a MergeResult's "moved". */
  name: KindName;
  /** Singular, for messages and OpenAPI. */
  label: string;
  create: TObject;
  out: TObject;
  shape(row: any): Record<string, unknown>;
  /** Creates a row itself (instead of the generic insert of service.createRow). */
  ownCreate?: (tx: Queryable, customerRef: string, body: any, source: string) => Promise<any>;
}

const base = (r: any) => ({ uuid: r.uuid, customerUuid: r.customer_uuid });

const LineItem = Type.Object({ sku: Str(1, 255), name: Type.Optional(NullableStr(500)), quantity: Type.Integer({ minimum: 0, maximum: 1_000_000 }), price: Decimal }, { ...closed, title: 'LineItem' });

export const KINDS: Kind[] = [
  {
    name: 'orders', table: 'orders', label: 'order', hasAssociate: false,
    create: Type.Object({ externalId: Str(1, 255), orderedAt: DateTime, currency: Type.String({ pattern: '^[A-Z]{3}$' }), total: Decimal, lineItems: Type.Optional(Type.Array(LineItem, { maxItems: 1000 })) }, { ...closed, title: 'OrderCreate' }),
    out: Type.Object({ ...common, externalId: Type.String(), orderedAt: DateTime, currency: Type.String(), total: Type.String(), lineItems: Type.Array(LineItem) }, { title: 'Order' }),
    columns: [['external_id', 'text'], ['ordered_at', 'timestamptz'], ['currency', 'text'], ['total', 'numeric'], ['line_items', 'jsonb']],
    values: (b) => [b.externalId, b.orderedAt, b.currency, b.total, JSON.stringify(b.lineItems ?? [])],
    shape: (r) => ({ ...base(r), externalId: r.external_id, orderedAt: isoNN(r.ordered_at), currency: r.currency, total: r.total, lineItems: r.line_items, createdAt: isoNN(r.created_at) }),
  },
  {
    name: 'followUps', table: 'follow_ups', label: 'follow-up', hasAssociate: true,
    create: Type.Object({ associateUuid: AssociateRef, dueAt: DateTime, subject: Str(1, 1000), status: Type.Optional(StringEnum(['open', 'done'], { default: 'open' })) }, { ...closed, title: 'FollowUpCreate' }),
    out: Type.Object({ ...common, associateUuid: Nullable(Type.String()), dueAt: DateTime, subject: Type.String(), status: StringEnum(['open', 'done']) }, { title: 'FollowUp' }),
    columns: [['due_at', 'timestamptz'], ['subject', 'text'], ['status', 'text']],
    values: (b) => [b.dueAt, b.subject, b.status ?? 'open'],
    shape: (r) => ({ ...base(r), associateUuid: r.associate_uuid, dueAt: isoNN(r.due_at), subject: r.subject, status: r.status, createdAt: isoNN(r.created_at) }),
  },
  {
    // Tulip's shape; created through notes.ts (employee by uuid or externalId, events, externalId conflicts).
    name: 'notes', table: 'notes', label: 'note', hasAssociate: true,
    create: NoteCreate,
    out: Note,
    columns: NOTE_COLUMNS.map((c, i) => [c, NOTE_CASTS[i]]),
    values: (b) => noteValues(b),
    shape: shapeNote,
    ownCreate: createNote,
  },
  {
    name: 'messages', table: 'messages', label: 'message', hasAssociate: false,
    create: Type.Object({ channel: StringEnum(['sms', 'email', 'whatsapp', 'other']), direction: StringEnum(['inbound', 'outbound']), body: Str(0, 20000), sentAt: Type.Optional(DateTime) }, { ...closed, title: 'MessageCreate' }),
    out: Type.Object({ ...common, channel: Type.String(), direction: Type.String(), body: Type.String(), sentAt: DateTime }, { title: 'Message' }),
    columns: [['channel', 'text'], ['direction', 'text'], ['body', 'text'], ['sent_at', 'timestamptz']],
    values: (b) => [b.channel, b.direction, b.body, b.sentAt ?? new Date().toISOString()],
    shape: (r) => ({ ...base(r), channel: r.channel, direction: r.direction, body: r.body, sentAt: isoNN(r.sent_at), createdAt: isoNN(r.created_at) }),
  },
  {
    name: 'preferences', table: 'preferences', label: 'preference', hasAssociate: false,
    create: Type.Object({ category: Str(1, 255), value: Str(1, 2000) }, { ...closed, title: 'PreferenceCreate' }),
    out: Type.Object({ ...common, category: Type.String(), value: Type.String() }, { title: 'Preference' }),
    columns: [['category', 'text'], ['value', 'text']],
    values: (b) => [b.category, b.value],
    shape: (r) => ({ ...base(r), category: r.category, value: r.value, createdAt: isoNN(r.created_at) }),
  },
  {
    name: 'productShares', table: 'product_shares', label: 'product share', hasAssociate: true,
    create: Type.Object({ sku: Str(1, 255), associateUuid: AssociateRef, sharedAt: Type.Optional(DateTime), message: Type.Optional(NullableStr(2000)) }, { ...closed, title: 'ProductShareCreate' }),
    out: Type.Object({ ...common, sku: Type.String(), associateUuid: Nullable(Type.String()), sharedAt: DateTime, message: Nullable(Type.String()) }, { title: 'ProductShare' }),
    columns: [['sku', 'text'], ['shared_at', 'timestamptz'], ['message', 'text']],
    values: (b) => [b.sku, b.sharedAt ?? new Date().toISOString(), b.message ?? null],
    shape: (r) => ({ ...base(r), sku: r.sku, associateUuid: r.associate_uuid, sharedAt: isoNN(r.shared_at), message: r.message, createdAt: isoNN(r.created_at) }),
  },
  {
    name: 'associates', table: 'customer_associates', label: 'customer–associate association', hasAssociate: true,
    create: Type.Object({ associateUuid: Type.String({ format: 'uuid' }), role: Type.Optional(NullableStr(100)) }, { ...closed, title: 'AssociationCreate' }),
    out: Type.Object({ ...common, associateUuid: Type.String(), role: Nullable(Type.String()) }, { title: 'Association' }),
    columns: [['role', 'text']],
    values: (b) => [b.role ?? null],
    shape: (r) => ({ ...base(r), associateUuid: r.associate_uuid, role: r.role, createdAt: isoNN(r.created_at) }),
  },
];

export const kindByName = (name: KindName): Kind => KINDS.find((k) => k.name === name)!;

