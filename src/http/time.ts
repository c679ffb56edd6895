// Timestamps on the wire: RFC 3339 UTC with Z and milliseconds.
// PostgreSQL sends timestamptz as text ("2026-01-02 03:04:05.678901+00", "0099-…", "…+05:30", "… BC");
// it is parsed here rather than by Date (which reads year 0099 as 1999 and rejects LMT offsets like
// +00:19:32), so that the pg and PGlite backends give the same string whatever the session TimeZone.
const PG_TS = /^(\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?|Z)?( BC)?$/;

function toDate(v: string | Date): Date {
  if (v instanceof Date) return v;
  const m = PG_TS.exec(v);
  if (!m) return new Date(v);
  const [, y, mo, d, h, mi, s, frac = '', sign, oh = '0', om = '0', os = '0', bc] = m;
  let year = Number(y);
  if (bc) year = 1 - year; // 1 BC is year 0
  const ms = Number((frac + '000').slice(0, 3));
  const d0 = new Date(0);
  d0.setUTCFullYear(year, Number(mo) - 1, Number(d));
  d0.setUTCHours(Number(h), Number(mi), Number(s), ms);
  const offset = sign ? (sign === '-' ? -1 : 1) * (Number(oh) * 3600 + Number(om) * 60 + Number(os)) : 0;
  return new Date(d0.getTime() - offset * 1000);
}

// What a UTC session sends for years 1–9999: "2026-01-02 03:04:05.678901+00" (or without the fraction). Its
// RFC 3339 form is a rearrangement of the text (milliseconds truncated, as toDate does), no Date needed: this
// runs twice per customer on every answer.
const PG_UTC = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?\+00$/;

function format(v: string | Date): string {
  if (typeof v === 'string' && PG_UTC.test(v)) {
    const ms = v.length === 22 ? '000' : (v.slice(20, v.length - 3) + '00').slice(0, 3);
    return `${v.slice(0, 10)}T${v.slice(11, 19)}.${ms}Z`;
  }
  return toDate(v).toISOString();
}

export function iso(v: string | Date | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  return format(v);
}

/** Like iso() for columns that are never null. */
export function isoNN(v: string | Date): string {
  return format(v);
}
