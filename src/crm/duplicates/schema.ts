// Possible duplicates on the wire (SPEC §14).
import { Type } from '@sinclair/typebox';
import { StringEnum } from '../../http/schema.ts';
import { Customer } from '../customers/schema.ts';
import { DEFAULT_MIN_SCORE } from './score.ts';
import { PENDING_COUNTED } from './store.ts';

const closed = { additionalProperties: false } as const;

export const Reason = Type.Object({
  field: StringEnum(['email', 'phone', 'name', 'address']),
  detail: Type.String({ description: 'what matched, e.g. "same phone +12015550123"' }),
});
const Score = Type.Number({ minimum: 0, maximum: 1, description: '0..1, higher is likelier the same person' });

const PendingCustomers = Type.Integer({
  minimum: 0,
  maximum: PENDING_COUNTED,
  description: `customers changed but not yet folded into the pairs by the background refresher (the answer is the pairs as they stand); counted up to ${PENDING_COUNTED}: ${PENDING_COUNTED} means at least as many`,
});

export const Duplicate = Type.Object({ customer: Customer, score: Score, reasons: Type.Array(Reason) });
export const DuplicatesOf = Type.Object({ data: Type.Array(Duplicate), pendingCustomers: PendingCustomers });
export const DuplicatesOfQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 250, default: 50, description: 'how many, best first' })) },
  closed,
);

export const DuplicatePair = Type.Object({
  customers: Type.Array(Customer, { minItems: 2, maxItems: 2 }),
  score: Score,
  reasons: Type.Array(Reason),
});
export const DuplicatePairs = Type.Object({ data: Type.Array(DuplicatePair), nextCursor: Type.Union([Type.String(), Type.Null()]), pendingCustomers: PendingCustomers });
export const DuplicatePairsQuery = Type.Object(
  {
    minScore: Type.Optional(Type.Number({ minimum: 0, maximum: 1, default: DEFAULT_MIN_SCORE, description: `lowest score listed (default ${DEFAULT_MIN_SCORE}; pairs below 0.5 are not kept)` })),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'opaque cursor from a previous nextCursor' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 250, default: 50, description: 'page size, 1–250' })),
  },
  closed,
);
