// Prometheus metrics (SPEC §9). One registry per process; webhook metrics register here too.
import client from 'prom-client';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

export const httpRequests = new client.Histogram({
  name: 'bulb_http_request_duration_seconds',
  help: 'HTTP requests by route and status, with their duration',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});
