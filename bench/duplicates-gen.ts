// Generator of the duplicate-quality benchmark (SPEC §14): N customers of which 5% are planted duplicates of
// other customers, written differently (case, spacing, phone formats, typos, swapped first/last names,
// another or no email, no address), and households (real family members sharing a last name, an address
// and often a landline) as negatives. Deterministic (seeded PRNG), so every run scores the same set.

/** mulberry32: small, fast, seedable. */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)],
    chance: (p: number) => next() < p,
  };
}
type Rng = ReturnType<typeof rng>;

const FIRST_COMMON = ['james', 'mary', 'john', 'patricia', 'robert', 'jennifer', 'michael', 'linda', 'william', 'elizabeth', 'david', 'barbara', 'richard', 'susan', 'joseph', 'jessica', 'thomas', 'sarah', 'charles', 'karen', 'maria', 'jose', 'wei', 'fatima', 'mohammed', 'anna', 'sofia', 'lucas', 'emma', 'noah', 'olivia', 'liam', 'ava', 'mia', 'ethan', 'chloe', 'daniel', 'grace', 'samuel', 'zoe'];
const LAST_COMMON = ['smith', 'johnson', 'williams', 'brown', 'jones', 'garcia', 'miller', 'davis', 'rodriguez', 'martinez', 'hernandez', 'lopez', 'gonzalez', 'wilson', 'anderson', 'thomas', 'taylor', 'moore', 'jackson', 'martin', 'lee', 'perez', 'thompson', 'white', 'harris', 'sanchez', 'clark', 'ramirez', 'lewis', 'robinson', 'nguyen', 'kim', 'patel', 'chen', 'wang', 'singh', 'khan', 'cohen', 'muller', 'rossi'];
const SYL_A = ['al', 'ber', 'cal', 'dor', 'el', 'fen', 'gar', 'hal', 'is', 'jor', 'kel', 'lin', 'mar', 'nor', 'or', 'pen', 'quin', 'ros', 'sel', 'tor', 'ul', 'van', 'wes', 'yar', 'zan', 'bri', 'cor', 'dal', 'ev', 'fra'];
const SYL_B = ['a', 'ena', 'ric', 'ton', 'ley', 'son', 'wyn', 'dra', 'mond', 'ette', 'ian', 'ora', 'ick', 'elle', 'ard', 'ina', 'o', 'us', 'ia', 'an'];
const SYL_C = ['berg', 'field', 'stone', 'wood', 'ford', 'well', 'man', 'ley', 'ton', 'ridge', 'worth', 'brook', 'by', 'more', 'ston', 'land', 'ham', 'dale', 'shaw', 'win', 'er', 'ez', 'ini', 'sky', 'ov'];

/** Zipf-like pick: index k with weight 1/(k+1)^s over a list built once. */
function zipf(list: string[], s: number) {
  const w = list.map((_, k) => 1 / (k + 1) ** s);
  const total = w.reduce((a, b) => a + b, 0);
  const cum: number[] = [];
  let acc = 0;
  for (const x of w) cum.push((acc += x / total));
  return (r: Rng) => {
    const u = r.next();
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return list[lo];
  };
}

export const FIRSTS = [...FIRST_COMMON, ...SYL_A.flatMap((a) => SYL_B.map((b) => a + b))]; // 640
export const LASTS = [...LAST_COMMON, ...SYL_A.flatMap((a) => SYL_C.map((c) => a + c)), ...SYL_B.flatMap((b) => SYL_C.map((c) => 'mc' + b + c))]; // 1290
export const AREA = ['201', '212', '213', '305', '312', '404', '415', '469', '503', '512', '602', '617', '646', '702', '713', '718', '773', '805', '917', '971'];
export const DOMAINS = ['gmail.com', 'yahoo.com', 'outlook.com', 'icloud.com', 'proton.me', 'example.com'];

export interface GenCustomer {
  externalId: string;
  firstName: string | null;
  lastName: string | null;
  emails: { email: string }[];
  phones: { number: string }[];
  addresses: { address1: string; city: string; postCode: string; countryCode: string }[];
}

export interface Generated {
  customers: GenCustomer[];
  /** externalId pairs (original, planted duplicate). */
  truth: [string, string][];
  households: number;
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function typo(r: Rng, s: string): string {
  if (s.length < 3) return s + s.charAt(s.length - 1);
  const i = 1 + r.int(s.length - 2); // keep the first letter, as people do
  switch (r.int(4)) {
    case 0: return s.slice(0, i) + s.slice(i + 1); // deletion
    case 1: return s.slice(0, i) + s.charAt(i) + s.slice(i); // doubled letter
    case 2: return s.slice(0, i) + s.charAt(i + 1) + s.charAt(i) + s.slice(i + 2); // transposition
    default: return s.slice(0, i) + 'aeiou'.charAt(r.int(5)) + s.slice(i + 1); // substitution
  }
}

function phoneFormats(r: Rng, area: string, ex: string, line: string): string {
  return r.pick([`(${area}) ${ex}-${line}`, `${area}.${ex}.${line}`, `+1 ${area} ${ex} ${line}`, `1-${area}-${ex}-${line}`, `${area}${ex}${line}`, `+1${area}${ex}${line}`]);
}

/**
 * Skew (Zipf exponents over FIRSTS, LASTS and CITIES): the commonest first name carries ~4.9% of the customers and
 * the ten commonest ~20%; the commonest last name ~2.4%; the commonest city ~6.4% and the ten biggest ~25% (a
 * retailer's customers gather around its stores). bench/duplicates.ts seeds its background population in SQL
 * with the same lists and exponents.
 */
export const SKEW = { first: 0.7, last: 0.6, city: 0.7 };
export const CITIES = Array.from({ length: 300 }, (_, i) => ({ name: `${cap(SYL_A[i % SYL_A.length])}${SYL_C[Math.floor(i / SYL_A.length) % SYL_C.length]}`, zips: Array.from({ length: 5 + (i % 20) }, (_, j) => String(10000 + i * 40 + j).padStart(5, '0')) }));
export const STREET_KINDS = ['St', 'Ave', 'Rd', 'Blvd'];

/** The k-th phone number of a run (distinct for k < 160 million: area, exchange and line all vary). */
export function phoneNo(k: number): { area: string; ex: string; line: string } {
  const rest = Math.floor(k / AREA.length);
  return { area: AREA[k % AREA.length], ex: String(200 + ((rest * 7919) % 800)), line: String(Math.floor(rest / 800) % 10000).padStart(4, '0') };
}

export function generate(n: number, seed = 42, dupRate = 0.05, prefix = 'g-'): Generated {
  const r = rng(seed);
  const first = zipf(FIRSTS, SKEW.first);
  const last = zipf(LASTS, SKEW.last);
  const cities = CITIES;
  const city = zipf(cities.map((_, i) => String(i)), SKEW.city);
  // Phone numbers repeated every 200,000 customers before (unrelated people sharing one at 1M).
  let phoneSeq = 0;
  const newPhone = () => phoneNo(phoneSeq++);
  const nDup = Math.round(n * dupRate);
  const nOrig = n - nDup;
  const customers: GenCustomer[] = [];
  const phones: { area: string; ex: string; line: string }[] = [];
  let households = 0;
  const address = () => {
    const c = cities[Number(city(r))];
    return { address1: `${1 + r.int(999)} ${cap(r.pick(LASTS))} ${r.pick(STREET_KINDS)}`, city: c.name, postCode: r.pick(c.zips), countryCode: 'US' };
  };
  while (customers.length < nOrig) {
    const i = customers.length;
    const f = first(r);
    const l = last(r);
    const ph = newPhone();
    const addr = address();
    customers.push({
      externalId: `${prefix}${i}`, firstName: cap(f), lastName: cap(l),
      emails: [{ email: `${f}.${l}.${i}@${r.pick(DOMAINS)}` }],
      phones: [{ number: `+1${ph.area}${ph.ex}${ph.line}` }],
      addresses: [addr],
    });
    phones.push(ph);
    // Households: 1–3 family members, same last name and address, own first name and email;
    // half of them share the household's landline.
    if (r.chance(0.12)) {
      households++;
      const members = 1 + r.int(3);
      for (let m = 0; m < members && customers.length < nOrig; m++) {
        const j = customers.length;
        let fm = first(r);
        while (fm === f) fm = first(r); // family members do not share a first name
        const shared = r.chance(0.5);
        const mph = shared ? ph : newPhone();
        customers.push({
          externalId: `${prefix}${j}`, firstName: cap(fm), lastName: cap(l),
          emails: [{ email: `${fm}.${l}.${j}@${r.pick(DOMAINS)}` }],
          phones: [{ number: `+1${mph.area}${mph.ex}${mph.line}` }],
          addresses: [{ ...addr }],
        });
        phones.push(mph);
      }
    }
  }
  // Planted duplicates of distinct originals.
  const truth: [string, string][] = [];
  const used = new Set<number>();
  for (let d = 0; d < nDup; d++) {
    let k = r.int(nOrig);
    while (used.has(k)) k = r.int(nOrig);
    used.add(k);
    const o = customers[k];
    let f = o.firstName!.toLowerCase();
    let l = o.lastName!.toLowerCase();
    const nameKind = r.next();
    if (nameKind < 0.3) f = typo(r, f);
    else if (nameKind < 0.45) l = typo(r, l);
    else if (nameKind < 0.65) [f, l] = [l, f];
    const style = r.pick([(s: string) => s.toUpperCase(), (s: string) => s, cap, (s: string) => ` ${cap(s)} `]);
    const email = o.emails[0].email;
    const emailKind = r.next();
    const emails = emailKind < 0.6 ? [{ email: r.chance(0.5) ? email.toUpperCase() : cap(email) }]
      : emailKind < 0.8 ? [{ email: `${f}.${d}.new@${r.pick(DOMAINS)}` }] : [];
    const ph = phones[k];
    const phoneKind = r.next();
    const dupPhones = phoneKind < 0.6 ? [{ number: phoneFormats(r, ph.area, ph.ex, ph.line) }] : phoneKind < 0.75 ? [(() => { const p = newPhone(); return { number: `+1${p.area}${p.ex}${p.line}` }; })()] : [];
    const addresses = r.chance(0.8) ? [{ ...o.addresses[0], city: r.chance(0.3) ? o.addresses[0].city.toUpperCase() : o.addresses[0].city }] : [];
    const id = `${prefix}${customers.length}`;
    customers.push({ externalId: id, firstName: style(f), lastName: style(l), emails, phones: dupPhones, addresses });
    truth.push([o.externalId, id]);
  }
  return { customers, truth, households };
}
