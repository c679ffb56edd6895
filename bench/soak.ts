// Memory soak: the chaos run's mixed load (creates, updates, orders, merges, webhook deliveries to a
// receiver) without the faults, against one Bulb process (role all, PostgreSQL) for --seconds N (default
// 600). Samples the server's RSS from /proc/<pid>/status; reports start (after a warm-up), end and max.
import { createPgDatabase, log, parseArgs, rssMiB, round, sleep, startBulb, startReceiver, subscribe, api, type Row } from './lib.ts';
import { MixedLoad } from './mixed.ts';

export async function runSoak(o: { seconds: number }): Promise<Row[]> {
  const db = await createPgDatabase('soak');
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  let server: Awaited<ReturnType<typeof startBulb>> | undefined;
  let loadGen: MixedLoad | undefined;
  try {
    receiver = await startReceiver();
    server = await startBulb({ databaseUrl: db.url, role: 'all' });
    const subs = await subscribe(server.url, `${receiver.url}/hook`, ['customerCreate', 'customerUpdate', 'customerMerge']);
    await api(server.url, 'POST', '/crm/customers', { externalId: 'soak-probe' });
    await api(server.url, 'POST', '/crm/customers', { externalId: 'soak-probe-2' });
    const orders = (await api(server.url, 'POST', '/crm/customers/soak-probe/orders', { externalId: 'p', orderedAt: new Date().toISOString(), currency: 'EUR', total: '1.00' })).status === 201;
    const merges = (await api(server.url, 'POST', '/crm/customers/soak-probe/merge?dryRun=true', { mergeWithCustomerIds: ['soak-probe-2'] })).status === 200;
    const deadline = Date.now() + o.seconds * 1000;
    loadGen = new MixedLoad({ targets: [server.url], features: { orders, merges }, prefix: 'soak', concurrency: 8 });
    loadGen.start(deadline);
    const warmUntil = Date.now() + Math.max(5, o.seconds * 0.1) * 1000;
    const every = Math.max(1000, (o.seconds * 1000) / 120);
    const samples: { t: number; rss: number }[] = [];
    const t0 = Date.now();
    for (let i = 0; i < 100_000 && Date.now() < deadline; i++) {
      await sleep(Math.min(every, Math.max(0, deadline - Date.now())));
      const rss = rssMiB(server.pid);
      if (rss === undefined) throw new Error(`the server died during the soak:\n${server.output().slice(-2000)}`);
      if (Date.now() >= warmUntil) samples.push({ t: Date.now() - t0, rss });
    }
    await loadGen.stop();
    if (samples.length < 2) throw new Error('too few RSS samples');
    const start = samples[0].rss;
    const end = samples[samples.length - 1].rss;
    const max = Math.max(...samples.map((s) => s.rss));
    const growth = end - start;
    const flat = growth <= Math.max(20, start * 0.15);
    const mid = samples[Math.floor(samples.length / 2)].rss;
    log(`soak: RSS start ${round(start, 1)} MiB, middle ${round(mid, 1)}, end ${round(end, 1)}, max ${round(max, 1)}; ${loadGen.stats.requests} requests`);
    const st = loadGen.stats;
    return [
      {
        what: `server RSS after ${round(o.seconds / 60, 1)} min of mixed load (baseline: RSS after the warm-up)`,
        value: round(end, 1), unit: 'MiB', baseline: round(start, 1), ratio: round(end / start),
        goal: flat ? 'flat (growth ≤ max(20 MiB, 15%)): met' : `flat (growth ≤ max(20 MiB, 15%)): missed (+${round(growth, 1)} MiB)`,
        command: `npm run bench -- --only soak --seconds ${o.seconds}`,
        note: `Soak: one Bulb process (role all, PostgreSQL), ${st.requests} requests (${st.creates} creates, ${st.updates} updates, ${st.orders} orders, ${st.merges} merges acknowledged; ` +
          `${st.fiveXX} 5xx, webhooks ${subs ? 'on: 3 subscriptions' : 'absent'}); RSS sampled every ${round(every / 1000, 1)} s after a ${round(Math.max(5, o.seconds * 0.1), 0)} s warm-up: ` +
          `start ${round(start, 1)} MiB, middle ${round(mid, 1)} MiB, end ${round(end, 1)} MiB, max ${round(max, 1)} MiB.`,
      },
      { what: 'server RSS maximum during the soak', value: round(max, 1), unit: 'MiB', baseline: round(start, 1), ratio: round(max / start), goal: 'reported', command: `npm run bench -- --only soak --seconds ${o.seconds}` },
    ];
  } finally {
    await loadGen?.stop();
    await server?.stop();
    await receiver?.stop();
    await db.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = parseArgs();
  const rows = await runSoak({ seconds: args.seconds ?? (args.quick ? 30 : 600) });
  console.log(JSON.stringify(rows, null, 2));
  process.exit(0);
}
