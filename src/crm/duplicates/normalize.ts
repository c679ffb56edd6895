// Normalised signals of a customer for duplicate detection (SPEC §14): emails trimmed and lower-cased,
// phones in E.164 (libphonenumber-js, numbers without a country code read in BULB_DEFAULT_PHONE_REGION),
// the name folded (case, accents, punctuation, spacing), postal codes (upper case, no spaces or dashes)
// and cities (folded). Countries are ignored: written inconsistently, and a postal code shared across
// countries only counts together with a similar name.
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

export interface Profile {
  customerId: string;
  name: string;
  emails: string[];
  phones: string[];
  postalCodes: string[];
  cities: string[];
  /** Street addresses (address line folded, with the postal code or else the city): a blocking key only, not scored. */
  streets: string[];
}

export interface CustomerSignals {
  id: string;
  first_name: string | null;
  last_name: string | null;
  emails: { email?: unknown }[];
  phones: { number?: unknown }[];
  addresses: { address1?: unknown; city?: unknown; postCode?: unknown }[];
}

const uniq = (xs: (string | null)[]) => [...new Set(xs.filter((x): x is string => !!x))].sort();
const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** Letters NFKD leaves whole (a stroke or a ligature, not a combining accent), as the letters written without it. */
const UNSTROKED: Record<string, string> = { ø: 'o', ł: 'l', đ: 'd', ð: 'd', ħ: 'h', ŧ: 't', ı: 'i', ß: 'ss', æ: 'ae', œ: 'oe', þ: 'th' };

/** Lower case, accents stripped, anything but letters and digits a single space. */
export function foldText(s: string): string {
  // Format characters (joiners, soft hyphen, bidi marks and isolates: \p{Cf}) are dropped, not word breaks:
  // "Schm\u200didt" pasted from a web page is "schmidt" (it was "schm idt", no pair found; a probe, 2026-11-29). But
  // the zero-width space, U+200B, stays a word break: it is how Thai, Khmer, Lao and Burmese separate words.
  return s.normalize('NFKD').replace(/\p{M}|(?!\u200b)\p{Cf}/gu, '').toLowerCase().replace(/[øłđðħŧıßæœþ]/g, (c) => UNSTROKED[c])
    .replace(/[^\p{L}\p{N}]+/gu, ' ').trim();
}

export function normalizeEmail(raw: string): string | null {
  const e = raw.trim().toLowerCase();
  return e.includes('@') ? e : null;
}

/** E.164, or null when the number cannot be a phone number. */
export function normalizePhone(raw: string, region: string): string | null {
  try {
    // NFKC first: a full-width number ("＋８１３…", typed with a Japanese input method) was read with a US
    // country code, the full-width plus not being one to libphonenumber (a probe, 2026-11-29).
    const p = parsePhoneNumberFromString(raw.normalize('NFKC').trim(), { defaultCountry: region as CountryCode, extract: false });
    return p && p.isPossible() ? p.number : null;
  } catch {
    return null;
  }
}

export function profileOf(c: CustomerSignals, region: string): Profile {
  const addresses = Array.isArray(c.addresses) ? c.addresses : [];
  return {
    customerId: c.id,
    name: foldText(`${c.first_name ?? ''} ${c.last_name ?? ''}`),
    emails: uniq((Array.isArray(c.emails) ? c.emails : []).map((e) => normalizeEmail(str(e?.email)))),
    phones: uniq((Array.isArray(c.phones) ? c.phones : []).map((p) => normalizePhone(str(p?.number), region))),
    postalCodes: uniq(addresses.map((a) => {
      const code = str(a?.postCode).replace(/[\s-]+/g, '').toUpperCase();
      return code || null;
    })),
    cities: uniq(addresses.map((a) => {
      const city = foldText(str(a?.city));
      return city || null;
    })),
    streets: uniq(addresses.map((a) => {
      const street = foldText(str(a?.address1));
      const place = str(a?.postCode).replace(/[\s-]+/g, '').toUpperCase() || foldText(str(a?.city));
      return street && place ? `${street}|${place}` : null;
    })),
  };
}

/**
 * Blocking keys of a profile: customers sharing none are never compared. Emails, phones, and each word of
 * the name (2+ letters, or one Han character) with each postal code and each street address (and with each
 * city when the customer has no postal code), so a typo in one word or swapped first and last names still
 * meet. A key borne by more than its cap (keyCap in refresh.ts) brings nobody together: a common first name
 * in a big city or postal code is no signal alone; with a street it is. A city beside a postal code is no
 * key: a name with the city alone scores at most 0.6 (below the default minScore), such keys made 60% of the
 * candidates at 1M customers, and a pair that also shares an email or a phone meets on that key.
 */
export function keysOf(p: Profile): string[] {
  // One letter is an initial, except a Han character: a whole surname or given name.
  const words = [...new Set(p.name.split(' ').filter((w) => w.length >= 2 || /\p{Script=Han}/u.test(w)))];
  const keys = [...p.emails.map((e) => `e:${e}`), ...p.phones.map((x) => `p:${x}`)];
  for (const w of words) {
    for (const z of p.postalCodes) keys.push(`n:${w}|z:${z}`);
    if (p.postalCodes.length === 0) for (const c of p.cities) keys.push(`n:${w}|c:${c}`);
    for (const s of p.streets) keys.push(`n:${w}|s:${s}`);
  }
  return [...new Set(keys)];
}

/**
 * Counting keys of a folded name, one per word of 4+ letters ('w:' + the word): no blocking key (a word alone
 * brings nobody together), stored in duplicate_keys so that its count (duplicate_key_counts) says how common
 * a spelling is, and its bearers can be walked by index when that count changes step. A typo between two
 * common spellings is two names, not a slip (score.ts, SLIP_COMMON). Length in code points, as SQL's length().
 */
export function wordKeysOf(name: string): string[] {
  return [...new Set(name.split(' ').filter((w) => [...w].length >= 4))].map((w) => `w:${w}`);
}
