// Generates packages/client/src/openapi.ts (the types of the typed client, '@bulb/client') from the 2026-11
// OpenAPI document with openapi-typescript. Run by `npm run build`. The document is built from the declared
// routes; no database is touched (route modules only keep a reference).
import { writeFile } from 'node:fs/promises';
import openapiTS, { astToString } from 'openapi-typescript';
import { loadConfig } from '../src/config.ts';
import type { Db } from '../src/db/db.ts';
import { makeServices } from '../src/services.ts';
import { Registry } from '../src/http/versioning/registry.ts';
import { openApiDocument } from '../src/http/versioning/openapi.ts';
import { LATEST } from '../src/http/versioning/versions.ts';
import { allChanges, allRoutes } from '../src/wiring.ts';

/** The text of packages/client/src/openapi.ts as the declared routes make it now. */
export async function clientTypes(): Promise<string> {
  const refuse = () => {
    throw new Error('client-types: no database here');
  };
  const db = new Proxy({}, { get: () => refuse }) as unknown as Db;
  const doc = openApiDocument(new Registry(allRoutes(makeServices(db, loadConfig({ BULB_LOG_LEVEL: 'silent' }))), allChanges), LATEST, 'tulip');
  return `// Generated from the ${LATEST} OpenAPI document by scripts/client-types.ts (npm run build); do not edit.\n${astToString(await openapiTS(doc as any))}`;
}

export const CLIENT_TYPES_FILE = new URL('../packages/client/src/openapi.ts', import.meta.url);

if (import.meta.url === `file://${process.argv[1]}`) {
  await writeFile(CLIENT_TYPES_FILE, await clientTypes());
  console.log(`client-types: wrote ${CLIENT_TYPES_FILE.pathname}`);
  process.exit(0);
}
