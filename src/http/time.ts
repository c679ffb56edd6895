// Timestamps on the wire: RFC 3339 UTC with Z and milliseconds.
export function iso(v: string | Date | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  const d = v instanceof Date ? v : new Date(v);
  return d.toISOString();
}

/** Like iso() for columns that are never null. */
export function isoNN(v: string | Date): string {
  return (v instanceof Date ? v : new Date(v)).toISOString();
}
