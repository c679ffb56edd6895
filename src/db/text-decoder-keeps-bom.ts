// The embedded database's thread decodes text as stored, a leading byte-order mark (U+FEFF) included. PGlite's
// protocol parser reads every text field with one `new TextDecoder('utf-8')`, whose default (ignoreBOM: false) takes a
// BOM at the start of each decoded field for a mark and drops it: a value stored whole (`\ufeffAnn`, an externalId
// `\ufeffbomext`) was read back without it, so GET by the externalId as sent was a 404 and a PUT by it made a second
// customer (a round-trip probe, 2026-11-30; node-postgres keeps it, as PostgreSQL's own clients do). Imported first by
// src/db/pglite-worker.ts, this thread's TextDecoder keeps a BOM unless told otherwise; the thread runs PGlite only.
const Decoder = globalThis.TextDecoder;

globalThis.TextDecoder = class extends Decoder {
  constructor(label?: string, options?: TextDecoderOptions) {
    super(label, { ignoreBOM: true, ...options });
  }
} as typeof TextDecoder;
