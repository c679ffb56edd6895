// A worker's own listener (BULB_METRICS_PORT): GET /metrics and GET /health. A BULB_ROLE=worker process opens no API
// port, yet the attempt and delivery counters live in it (the process that sends): without this they could not be
// scraped, and a worker had no liveness probe (found by probing, 2026-11-28). Nothing else is served.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { registry } from './metrics.ts';

export async function startMetricsServer(host: string, port: number): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
    if (path === '/health') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    if (path !== '/metrics') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('only /metrics and /health here\n');
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const url = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  return {
    url,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    }),
  };
}
