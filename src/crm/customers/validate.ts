// Checks of a customer write that no JSON Schema can express, shared by every writer (routes, bulk, imports):
// countryCode in ISO 3166-1, zoneCode an ISO 3166-2 code of that country, phone in E.164 (libphonenumber-js), no
// address uuid or externalId twice, no attribute twice; and (with the database) every attributeExternalId known.
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Queryable } from '../../db/db.ts';
import { ApiError } from '../../http/errors.ts';
import { isCountryCode, zoneCountry } from './iso3166.ts';
import { dotSegmentMessage, DOT_SEGMENTS } from '../dot-segments.ts';

export interface Problem {
  message: string;
  moreInfo: string;
}

type Input = { externalId?: unknown; addresses?: unknown; attributes?: unknown };

function isE164(v: string): boolean {
  if (!/^\+[1-9]\d{1,14}$/.test(v)) return false;
  const p = parsePhoneNumberFromString(v);
  return p !== undefined && p.number === v && p.isValid();
}

/**
 * Problems of a (schema-valid) input, each naming its field as a dotted path (`addresses.0.countryCode`); moreInfo
 * is the path after `where` (`body.` for a request body, as the schema's own errors say; '' for a bulk item or line).
 */
export function inputProblems(input: Input, where = ''): Problem[] {
  const problems: Problem[] = [];
  const add = (field: string, message: string) => problems.push({ message: `"${field}" ${message}`, moreInfo: where + field });
  if (typeof input.externalId === 'string' && RESERVED_EXTERNAL_IDS.has(input.externalId)) add('externalId', RESERVED_MESSAGE(input.externalId));
  if (Array.isArray(input.addresses)) {
    const uuids = new Set<string>();
    const externalIds = new Set<string>();
    input.addresses.forEach((a: Record<string, any>, i: number) => {
      const at = `addresses.${i}`;
      if (typeof a.countryCode === 'string' && !isCountryCode(a.countryCode)) add(`${at}.countryCode`, `"${a.countryCode}" is not an ISO 3166-1 alpha-2 country code`);
      if (typeof a.zoneCode === 'string') {
        const country = zoneCountry(a.zoneCode);
        if (country === null || !isCountryCode(country)) add(`${at}.zoneCode`, `"${a.zoneCode}" is not an ISO 3166-2 code`);
        else if (typeof a.countryCode === 'string' && country !== a.countryCode) add(`${at}.zoneCode`, `"${a.zoneCode}" is not in country ${a.countryCode}`);
      }
      if (typeof a.phone === 'string' && !isE164(a.phone)) add(`${at}.phone`, `"${a.phone}" is not a valid phone number in E.164 form (+ and digits, e.g. +14155550100)`);
      if (typeof a.uuid === 'string') {
        if (uuids.has(a.uuid.toLowerCase())) add(`${at}.uuid`, 'repeats the uuid of another address');
        uuids.add(a.uuid.toLowerCase());
      }
      if (typeof a.externalId === 'string') {
        if (externalIds.has(a.externalId)) add(`${at}.externalId`, 'repeats the externalId of another address');
        externalIds.add(a.externalId);
      }
    });
  }
  if (Array.isArray(input.attributes)) {
    const seen = new Set<string>();
    input.attributes.forEach((v: Record<string, any>, i: number) => {
      const key = JSON.stringify([v.attributeExternalId, v.languageExternalId ?? null]);
      if (seen.has(key)) add(`attributes.${i}`, `repeats attribute "${v.attributeExternalId}"${v.languageExternalId ? ` in language ${v.languageExternalId}` : ''}`);
      seen.add(key);
    });
  }
  return problems;
}

/**
 * externalIds that are routes under /crm/customers/ in some version (`GET …/export` from 2026-11, `…/bulk` from 2022-08):
 * a customer with one could not be read by it there, and what a URL meant changed with the version (found by probing,
 * 2026-11-28); and the dot segments `.` and `..`, which most HTTP clients remove from a path (../dot-segments.ts; since
 * 2026-11-30). Refused in writes; a customer stored with one before keeps it (read it by uuid).
 */
export const RESERVED_EXTERNAL_IDS: ReadonlySet<string> = new Set(['export', 'bulk', ...DOT_SEGMENTS]);
export const RESERVED_MESSAGE = (id: string) => DOT_SEGMENTS.has(id)
  ? dotSegmentMessage(id, '/crm/customers')
  : `"${id}" is reserved: /crm/customers/${id} is a route, so a customer could not be read by it; choose another externalId`;

/** Throws a 400 listing every problem of inputProblems. */
export function checkInput(input: Input, where = 'body.'): void {
  const problems = inputProblems(input, where);
  if (problems.length > 0) throw ApiError.many('InvalidParameterError', problems);
}

/** The attributeExternalIds of these inputs' attribute values that name no customer attribute. */
export async function unknownAttributeIds(db: Queryable, inputs: Input[]): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const input of inputs) if (Array.isArray(input.attributes)) for (const v of input.attributes) ids.add(v.attributeExternalId);
  if (ids.size === 0) return ids;
  const r = await db.query<{ external_id: string }>('SELECT external_id FROM customer_attributes WHERE external_id = ANY($1::text[])', [[...ids]]);
  for (const row of r.rows) ids.delete(row.external_id);
  return ids;
}

/** Problems naming each attribute value of `input` whose attribute is in `unknown`. */
export function attributeProblems(input: Input, unknown: Set<string>, where = ''): Problem[] {
  if (unknown.size === 0 || !Array.isArray(input.attributes)) return [];
  const problems: Problem[] = [];
  input.attributes.forEach((v: { attributeExternalId: string }, i: number) => {
    if (unknown.has(v.attributeExternalId)) {
      problems.push({ message: `"attributes.${i}.attributeExternalId": no customer attribute "${v.attributeExternalId}" (create it with POST /crm/customerAttributes)`, moreInfo: `${where}attributes.${i}.attributeExternalId` });
    }
  });
  return problems;
}

/** Throws a 400 when an attribute value of the input names an unknown attribute. */
export async function checkAttributes(db: Queryable, input: Input, where = 'body.'): Promise<void> {
  const problems = attributeProblems(input, await unknownAttributeIds(db, [input]), where);
  if (problems.length > 0) throw ApiError.many('InvalidParameterError', problems);
}
