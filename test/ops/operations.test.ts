// SPEC §9 operations endpoints: /health, /ready, /metrics (Prometheus, HTTP histogram by route/status).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb('operations', (ctx) => {
  const api = () => ctx.srv.api;

  it('/health and /ready answer 200 without auth', async () => {
    const anon = api().withToken(undefined);
    const h = await anon.get('/health');
    assert.equal(h.status, 200);
    assert.equal(h.body.status, 'ok');
    const r = await anon.get('/ready');
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'ready');
    // /ready → 503 when the database is gone: see test/http/errors.test.ts (InternalError).
  });

  it('/metrics is Prometheus text with the HTTP histogram labelled by method, route template and status', async () => {
    await api().get('/crm/customers');
    await api().get('/crm/customers/metrics-missing');
    await api().withToken(undefined).get('/crm/customers');
    await api().get('/no/such/path/12345');
    const r = await api().withToken(undefined).req('GET', '/metrics');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const lines = r.text.split('\n');
    assert.ok(lines.includes('# TYPE bulb_http_request_duration_seconds histogram'));
    const has = (route: string, status: string) =>
      lines.some((l) => l.startsWith('bulb_http_request_duration_seconds_count{') && l.includes(`route="${route}"`) && l.includes(`status="${status}"`) && l.includes('method="GET"'));
    assert.ok(has('/api/2025-04/crm/customers', '200'), 'list 200');
    assert.ok(has('/api/2025-04/crm/customers/:id', '404'), 'route template, not the raw path');
    assert.ok(has('/api/2025-04/crm/customers', '401'));
    assert.ok(has('unmatched', '404'), 'unknown paths share one label');
    assert.ok(!r.text.includes('/no/such/path/12345'), 'raw paths never become labels');
    assert.ok(lines.some((l) => /^bulb_http_request_duration_seconds_bucket\{le="0\.005"/.test(l) || /_bucket\{.*le="0\.005"/.test(l)));
    assert.ok(lines.some((l) => l.startsWith('process_cpu_user_seconds_total')), 'process metrics');
  });
});
