// The administration console (SPEC §8): static HTML/CSS/ES modules under ./public, served at /admin/.
// No build step and nothing from a CDN; the pages call the same JSON API an integrator uses. GET / redirects here.
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { ApiError, errorHandler } from '../http/errors.ts';

const ROOT = path.join(import.meta.dirname, 'public');

/** Only our own origin: no inline script or style, no framing, no third-party fetches. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function securityHeaders(res: { setHeader(name: string, value: string): unknown }) {
  res.setHeader('content-security-policy', CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('cache-control', 'no-cache');
}

export async function consolePlugin(app: FastifyInstance) {
  // The static files refuse a path that leaves their folder (/admin/../package.json) with a bare 403 "Forbidden".
  app.setErrorHandler((err, req, reply) =>
    errorHandler((err as { statusCode?: number }).statusCode === 403 ? new ApiError('NotFound', 'no such file: a path may not leave the console\'s folder', '') : err, req, reply));
  await app.register(fastifyStatic, {
    root: ROOT,
    prefix: '/admin/',
    index: ['index.html'],
    redirect: false,
    cacheControl: false, // our own no-cache below: a new version of the console is picked up at once
    wildcard: true,
    setHeaders: securityHeaders,
  });
  // The server's root is where a browser lands first: the console.
  app.get('/', async (_req, reply) => reply.redirect('/admin', 302));
  // "/admin" (no slash) serves the same page; its asset URLs are absolute so either form works.
  app.get('/admin', async (_req, reply) => {
    securityHeaders(reply.raw);
    return reply.sendFile('index.html');
  });
}
