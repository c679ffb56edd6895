// Waiting for an import through the API, shared by the import tests.
import type { Client } from './server.ts';

/** The import once it has ended (completed, failed or cancelled); throws after about 30 s. */
export async function importFinished(api: Client, uuid: string): Promise<any> {
  for (let i = 0; i < 600; i++) {
    const r = await api.get(`/crm/imports/${uuid}`);
    if (['completed', 'failed', 'cancelled'].includes(r.body.status)) return r.body;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`import ${uuid} did not finish`);
}

/** The import's per-line errors (its NDJSON errors stream, parsed). */
export async function importErrors(api: Client, uuid: string): Promise<any[]> {
  return (await api.get(`/crm/imports/${uuid}/errors`)).text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
