// Entry of the PGlite worker thread (src/db/pglite-worker.ts), plain JS so that it loads without hooks.
import { tsImport } from 'tsx/esm/api';
await tsImport('./pglite-worker.ts', import.meta.url);
