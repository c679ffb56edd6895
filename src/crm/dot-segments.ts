// externalIds a URL path cannot carry: `.` and `..` are dot segments, which WHATWG URL parsers (Node's fetch and so
// @bulb/client, browsers) and Python requests remove before sending (RFC 3986 §5.2.4), `%2E` and `%2E%2E` too: a
// GET /crm/customers/. is sent as /crm/customers/ (the list), /crm/customers/.. as /crm/ (404). The server reads them
// (curl --path-as-is), but most integrations could not name such a record by it (found by a round-trip probe,
// 2026-11-30). Refused as the externalId of every resource read by `{id}` in a path: customers (./customers/validate.ts),
// associates, customer attributes, customer notes. A record stored with one before keeps it (read it by uuid).
import { invalid } from '../http/errors.ts';

export const DOT_SEGMENTS: ReadonlySet<string> = new Set(['.', '..']);

/** The message of a refused dot-segment externalId of a record read at `collection`/{id}. */
export const dotSegmentMessage = (id: string, collection: string) =>
  `"${id}" is reserved: HTTP clients (fetch, browsers, Python requests) remove "${id}" as a dot segment, %2E too, so ${collection}/${id} would not reach the record; choose another externalId`;

/** Why `id` may not be the externalId of a record read at `collection`/{id} (a dot segment), or undefined. */
export const dotSegmentRefusal = (id: unknown, collection: string): string | undefined =>
  typeof id === 'string' && DOT_SEGMENTS.has(id) ? `"externalId" ${dotSegmentMessage(id, collection)}` : undefined;

/** Throws a 400 naming externalId when `id` is a dot segment. */
export function checkNotDotSegment(id: unknown, collection: string): void {
  const refusal = dotSegmentRefusal(id, collection);
  if (refusal) throw invalid(refusal, 'externalId');
}
