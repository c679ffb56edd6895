// What one request's body costs the server's event loop, against the JSON.parse of the same body (a probe, 2026-11-30:
// a 10 MiB bulk of one item of 850,000 keys held the process 12.5 s, /health waiting 11.9 s). A Bulb server (embedded
// PGlite, its own process) is sent each shape of body below while this process asks GET /health back to back: the
// longest /health answer while the request is in flight is how long the server was held (value); the baseline is
// JSON.parse of the body here (the median of as many runs). Each shape is sent once first (Ajv compiles its listing
// validator and V8 the code on a first request), then RUNS times; the medians are compared.
// `npm run bench -- --only bodycost` (`--quick`: 2 runs), or `node --import tsx bench/body-cost.ts`.
import { ADMIN_KEY, log, median, round, startBulb, type Row } from './lib.ts';

interface Shape {
  what: string;
  path: string;
  /** The body of run `i` (a write needs new externalIds each time). */
  body: (i: number) => string;
  /** The answer expected: a check that the shape is what it says (a 400, a result per item…). */
  expect: (status: number, text: string) => string | undefined;
  /** Reported only: not a refusal. */
  reported?: string;
}

const keys = (n: number) => Array.from({ length: n }, (_, i) => `"k${i}":1`).join(',');
const items = (n: number, item: (i: number) => string) => `[${Array.from({ length: n }, (_, i) => item(i)).join(',')}]`;
const addresses = (n: number, address: string) => `[${Array(n).fill(address).join(',')}]`;
const itemsRefused = (status: number, text: string) => (status === 200 && /^\{"results":\[\{"index":0,"status":400/.test(text) ? undefined : `${status} ${text.slice(0, 200)}`);
const refused = (status: number, text: string) => (status === 400 ? undefined : `${status} ${text.slice(0, 200)}`);

const SHAPES: Shape[] = [
  { what: 'bulk (2025-12), one item of 850,000 unknown keys, 10 MiB', path: '/api/2025-12/crm/customers/bulk', body: () => `[{${keys(850_000)}}]`, expect: itemsRefused },
  { what: 'the same with an externalId', path: '/api/2025-12/crm/customers/bulk', body: () => `[{"externalId":"kk",${keys(850_000)}}]`, expect: itemsRefused },
  { what: 'POST /crm/customers (2026-11), 95,000 unknown keys, 1 MiB', path: '/api/2026-11/crm/customers', body: () => `{${keys(95_000)}}`, expect: refused },
  { what: 'POST /crm/customers (2026-11), 90,000 unknown keys in one address', path: '/api/2026-11/crm/customers', body: () => `{"externalId":"x","addresses":[{${keys(90_000)}}]}`, expect: refused },
  {
    what: 'bulk (2025-12), 1,000 items of 50 addresses each with a NUL, 1.1 MB', path: '/api/2025-12/crm/customers/bulk',
    body: () => items(1000, (i) => `{"externalId":"z${i}","addresses":${addresses(50, '{"address1":"\\u0000"}')}}`), expect: itemsRefused,
  },
  {
    what: 'bulk (2025-12), 1,000 items of 50 addresses each with a lone surrogate', path: '/api/2025-12/crm/customers/bulk',
    body: () => items(1000, (i) => `{"externalId":"x${i}","addresses":${addresses(50, '{"address1":"\\ud800"}')}}`), expect: itemsRefused,
  },
  {
    what: 'bulk (2025-12), 1,000 items of 50 addresses, an escaped emoji in each (every string walked), each refused after (country ZZ)',
    path: '/api/2025-12/crm/customers/bulk',
    body: () => items(1000, (i) => `{"externalId":"w${i}","firstName":"\\ud83d\\ude00","addresses":${addresses(50, '{"address1":"ok","countryCode":"ZZ"}')}}`), expect: itemsRefused,
  },
  {
    what: 'bulk (2025-12), 1,000 items of 700 bad emails, 9.8 MB', path: '/api/2025-12/crm/customers/bulk',
    body: () => items(1000, (i) => `{"externalId":"e${i}","emails":${addresses(700, '{"email":"x"}')}}`), expect: itemsRefused,
  },
  {
    what: 'bulk (2025-12), 1,000 new customers of 50 addresses, written', path: '/api/2025-12/crm/customers/bulk',
    body: (run) => items(1000, (i) => `{"externalId":"ok-${run}-${i}","addresses":${addresses(50, '{"address1":"ok"}')}}`),
    expect: (status, text) => (status === 200 && /^\{"results":\[\{"index":0,"status":201/.test(text) ? undefined : `${status} ${text.slice(0, 200)}`),
    reported: 'its answer is ~10× its body (each address served with its 15 keys), built and written to PGlite',
  },
];

/** The longest GET /health while `request` is in flight (ms), and the request's answer. */
async function held(base: string, request: () => Promise<Response>): Promise<{ ms: number; status: number; text: string }> {
  let done = false;
  let longest = 0;
  const probe = (async () => {
    while (!done) {
      const t = performance.now();
      await (await fetch(`${base}/health`)).arrayBuffer();
      longest = Math.max(longest, performance.now() - t);
    }
  })();
  const r = await request();
  const text = await r.text();
  done = true;
  await probe;
  return { ms: longest, status: r.status, text };
}

function parseMs(body: string, runs: number): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    JSON.parse(body);
    times.push(performance.now() - t);
  }
  return median(times);
}

export async function runBodyCostBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  const runs = opts.quick ? 2 : 5;
  const cmd = `npm run bench -- --only bodycost${opts.quick ? ' --quick' : ''}`;
  const server = await startBulb({ env: { BULB_LOG_LEVEL: 'error' } });
  const rows: Row[] = [];
  try {
    const post = (path: string, body: string) => () =>
      fetch(`${server.url}${path}`, { method: 'POST', body, headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' } });
    for (const [n, shape] of SHAPES.entries()) {
      const warm = await held(server.url, post(shape.path, shape.body(-1 - n)));
      const wrong = shape.expect(warm.status, warm.text);
      if (wrong) throw new Error(`${shape.what}: unexpected answer ${wrong}`);
      const helds: number[] = [];
      const parses: number[] = [];
      for (let i = 0; i < runs; i++) {
        const body = shape.body(i);
        parses.push(parseMs(body, 1));
        helds.push((await held(server.url, post(shape.path, body))).ms);
      }
      const value = median(helds);
      const baseline = median(parses);
      const ratio = value / baseline;
      log(`body cost: ${shape.what}: held ${round(value, 0)} ms, JSON.parse ${round(baseline, 1)} ms, ${round(ratio, 1)}×`);
      rows.push({
        what: `${shape.what} (baseline: JSON.parse of the body)`, value: round(value, 0), unit: 'ms', baseline: round(baseline, 1), ratio: round(ratio, 1),
        goal: shape.reported ? 'reported' : `≤ 5 × baseline: ${ratio <= 5 ? 'met' : 'missed'}`, command: cmd,
        note: shape.reported ? `${shape.what}: ${shape.reported}; first request ${round(warm.ms, 0)} ms.` : undefined,
      });
    }
  } finally {
    await server.stop();
  }
  rows[0].note = `The longest GET /health answer while the request was in flight (the server held), median of ${runs} runs after one first request each; the baseline is JSON.parse of the same body in the bench process, median of ${runs}.` + (rows[0].note ? ` ${rows[0].note}` : '');
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runBodyCostBench({ quick: process.argv.includes('--quick') });
  for (const r of rows) console.log(`${r.what}: ${r.value} ${r.unit} vs ${r.baseline} → ${r.ratio}× (${r.goal})`);
  process.exit(0);
}
