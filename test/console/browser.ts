// Browser tests of the console: Debian's Chromium driven by playwright-core against a real Bulb server on PGlite.
// Without a browser the suite is skipped (and says why), except with CI=true where that is a failure.
import fs from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';
import { after, afterEach, before, describe } from 'node:test';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { CI, freshDb, type TestDb } from '../helpers/db.ts';
import { ADMIN_KEY, startServer, type TestServer } from '../helpers/server.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const ARTIFACTS = path.resolve(import.meta.dirname, '../../test-artifacts');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface ConsoleCtx {
  tdb: TestDb;
  srv: TestServer;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Uncaught page errors and console errors other than the browser's own "Failed to load resource" lines. */
  pageErrors: string[];
  /** Opens the console and signs in with the admin key. */
  signIn(key?: string): Promise<void>;
  /** Follows a link of the console's navigation (by its exact name) and waits for the page heading. */
  go(section: string, heading?: string): Promise<void>;
  /** Saves a full-page screenshot as test-artifacts/console-<name>.png. */
  shot(name: string): Promise<void>;
}

function browserMissing(): string | undefined {
  if (fs.existsSync(CHROMIUM)) return undefined;
  const why = `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
  if (CI) throw new Error(`CI=true but ${why}`);
  return why;
}

/**
 * describeConsole('webhooks', (ctx) => { it(...) }, env): one server (PGlite), one browser, one page for the
 * whole block. hooks.started(ctx) runs after the server starts (e.g. to start a webhook worker); hooks.context
 * adds browser context options (e.g. a timezoneId).
 */
export function describeConsole(name: string, body: (ctx: ConsoleCtx) => void, env: Record<string, string> = {}, hooks: { started?: (ctx: ConsoleCtx) => Promise<void>; stopping?: (ctx: ConsoleCtx) => Promise<void>; context?: BrowserContextOptions } = {}) {
  const missing = browserMissing();
  if (missing) console.log(`# SKIP console browser tests (${name}): ${missing}`);
  describe(`console: ${name}`, { skip: missing }, () => {
    const ctx = { pageErrors: [] as string[] } as ConsoleCtx;
    before(async () => {
      ctx.tdb = await freshDb('pglite');
      ctx.srv = await startServer(ctx.tdb.db, env);
      await hooks.started?.(ctx);
      ctx.browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
      ctx.context = await ctx.browser.newContext({ viewport: { width: 1360, height: 900 }, baseURL: ctx.srv.url, ...hooks.context });
      ctx.page = await ctx.context.newPage();
      // Generous: CI shares two cores with the rest of the suite (and, here, with other work).
      ctx.page.setDefaultTimeout(45_000);
      ctx.page.setDefaultNavigationTimeout(90_000);
      ctx.page.on('pageerror', (err) => ctx.pageErrors.push(`pageerror: ${err.message}`));
      ctx.page.on('console', (msg) => {
        if (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())) ctx.pageErrors.push(`console: ${msg.text()}`);
      });
      ctx.signIn = async (key = ADMIN_KEY) => {
        const p = ctx.page;
        await p.goto('/admin');
        await p.getByLabel('Admin API key').fill(key);
        await p.getByRole('button', { name: 'Sign in' }).click();
        await p.getByRole('navigation', { name: 'Console sections' }).waitFor();
      };
      ctx.go = async (section, heading = section) => {
        await ctx.page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: section, exact: true }).click();
        await ctx.page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
      };
      ctx.shot = async (shotName: string) => {
        fs.mkdirSync(ARTIFACTS, { recursive: true });
        await ctx.page.screenshot({ path: path.join(ARTIFACTS, `console-${shotName}.png`), fullPage: true });
      };
    });
    // The state each test ended in (a failed test's screen is the one to look at).
    afterEach(async (t: any) => {
      const slug = String(t?.name ?? 'test').toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, 60);
      await ctx.shot?.(`end-${slug}`).catch(() => {});
    });
    after(async () => {
      await ctx.browser?.close();
      await hooks.stopping?.(ctx);
      await ctx.srv?.close();
      await ctx.tdb?.close();
      assert.deepEqual(ctx.pageErrors, [], 'the console raised no script errors');
    });
    body(ctx);
  });
}
