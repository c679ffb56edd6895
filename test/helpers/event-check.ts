// Checks a delivered webhook body against the event catalog (src/events/catalog.ts): the schema of its
// eventType, with Ajv (JSON Schema 2020-12, formats on). The shared loopback receiver (test/webhooks/receiver.ts)
// runs it on every body it receives, so every delivery in the test suite is checked.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { CATALOG, catalogEntry } from '../../src/events/catalog.ts';

const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats.default(ajv);

const validators = new Map<string, ValidateFunction>(CATALOG.map((e) => [e.name, ajv.compile(e.schema)]));

/** The problems of a body claiming an event type ([] when it matches its type's schema). */
export function eventBodyProblems(body: unknown): string[] {
  const type = (body as { eventType?: unknown } | null)?.eventType;
  if (typeof type !== 'string' || !catalogEntry(type)) return [`eventType ${JSON.stringify(type)} is not in the event catalog`];
  const validate = validators.get(type)!;
  if (validate(body)) return [];
  return (validate.errors ?? []).map((e) => `${type}${e.instancePath || ''} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
}
