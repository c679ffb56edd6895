// The export's floor: `COPY (SELECT <the export's JSON per customer>) TO STDOUT` read with pg-copy-streams
// and thrown away, counting lines and bytes. Same rows, same JSON, no HTTP, no cursor, no transaction.
// `node --import tsx bench/export-floor.ts postgres://…/db` prints {rows, bytes, seconds}.
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { exportSql } from '../src/crm/customers/export.ts';

export async function copyFloor(url: string, status: 'active' | 'disabled' | 'all' = 'all'): Promise<{ rows: number; bytes: number; seconds: number }> {
  const client = new pg.Client({ connectionString: url, options: '-c TimeZone=UTC' });
  await client.connect();
  try {
    const { sql, params } = exportSql({ status });
    // COPY takes no parameters: inline the (fixed, enum) status literal.
    const inlined = sql.replace(/\$(\d+)/g, (_, i) => pg.escapeLiteral(String(params[Number(i) - 1])));
    const t0 = process.hrtime.bigint();
    const stream = client.query(copyTo(`COPY (${inlined}) TO STDOUT`));
    let rows = 0;
    let bytes = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) rows++;
    }
    return { rows, bytes, seconds: Number(process.hrtime.bigint() - t0) / 1e9 };
  } finally {
    await client.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const url = process.argv[2];
  if (!url) {
    console.error('usage: bench/export-floor.ts postgres://…/database');
    process.exit(2);
  }
  console.log(JSON.stringify(await copyFloor(url)));
}
