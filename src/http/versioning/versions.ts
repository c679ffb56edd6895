// The supported API versions, as data (SPEC §2).
export interface VersionInfo {
  version: string;
  releasedOn: string;
  deprecatedOn?: string;
}

export const VERSIONS: readonly VersionInfo[] = [
  { version: '2022-04', releasedOn: '2022-04-01', deprecatedOn: '2022-08-01' },
  { version: '2022-08', releasedOn: '2022-08-01' },
  { version: '2025-04', releasedOn: '2025-04-01' },
  // Tulip's own later versions (named by docs.tulip.com's TGEN file-format pages). Tulip's change log is not
  // readable: they serve what 2025-04 serves (SPEC §16), but for POST /crm/customers/bulk, which creates only as
  // Tulip's single-vs-bulk page says (changes/2026-11-bulk-post-upserts.ts).
  { version: '2025-08', releasedOn: '2025-08-01' },
  { version: '2025-12', releasedOn: '2025-12-01' },
  { version: '2026-11', releasedOn: '2026-11-01' },
];

export const VERSION_IDS = VERSIONS.map((v) => v.version);
export const LATEST = VERSION_IDS[VERSION_IDS.length - 1];
/** The version the legacy /{service}_api/v2/ prefix serves. */
export const LEGACY_VERSION = '2022-04';

export function isVersion(v: string): boolean {
  return VERSION_IDS.includes(v);
}

/** -1, 0, 1 like a comparator; versions are date strings so they order lexically. */
export function cmpVersion(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function versionInfo(v: string): VersionInfo | undefined {
  return VERSIONS.find((x) => x.version === v);
}

export function isDeprecated(v: string): boolean {
  return versionInfo(v)?.deprecatedOn !== undefined;
}

export function deprecationHeaders(v: string, baseUrl: string): Record<string, string> {
  const info = versionInfo(v);
  if (!info?.deprecatedOn) return {};
  const secs = Math.floor(Date.parse(info.deprecatedOn + 'T00:00:00Z') / 1000);
  return { deprecation: `@${secs}`, link: `<${baseUrl}/api/versions>; rel="deprecation"` };
}

export function versionsDocument() {
  return {
    versions: VERSIONS.map((v) => ({
      version: v.version,
      status: v.deprecatedOn ? 'deprecated' : 'supported',
      releasedOn: v.releasedOn,
      ...(v.deprecatedOn ? { deprecatedOn: v.deprecatedOn } : {}),
    })),
    latest: LATEST,
  };
}
