// Possible duplicates (SPEC §14): normalised emails and phones, trigram names with a shared place, a
// score with reasons, the per-customer and whole-base routes kept current as customers change (writes,
// bulk, merge, undo), only active customers, pagination, errors, and the normalisers themselves.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { keysOf, normalizeEmail, normalizePhone, profileOf } from '../../src/crm/duplicates/normalize.ts';
import { COMMON_CONTACT, NAME_KEY_CAP, SLIP_COMMON, oneTypoApart, scorePair, slipFloor } from '../../src/crm/duplicates/score.ts';
import { refreshDuplicates } from '../../src/crm/duplicates/refresh.ts';
import { migrate } from '../../src/db/migrate.ts';
import { activeSignals, candidates, pairsOfNames } from '../../src/crm/duplicates/store.ts';
import { buffersOf, recording } from '../helpers/buffers.ts';

describe('duplicate signals', () => {
  it('normalises emails, phones (E.164 in the default region) and names', () => {
    assert.equal(normalizeEmail('  Ann.Lee@Example.COM '), 'ann.lee@example.com');
    for (const raw of ['(201) 555-0123', '201.555.0123', '+1 201 555 0123', '1-201-555-0123', '2015550123']) {
      assert.equal(normalizePhone(raw, 'US'), '+12015550123', raw);
    }
    assert.equal(normalizePhone('01 42 68 53 00', 'FR'), '+33142685300');
    assert.equal(normalizePhone('+33 1 42 68 53 00', 'US'), '+33142685300');
    assert.equal(normalizePhone('not a phone', 'US'), null);
    // Full-width digits and plus, as a Japanese input method types them: the same number (read as +1 8131… before).
    assert.equal(normalizePhone('＋８１３１２３４５６７８', 'US'), '+81312345678');
    assert.equal(normalizePhone('０３－１２３４－５６７８', 'JP'), '+81312345678');
    const p = profileOf({ id: '1', first_name: ' Zoë ', last_name: "O'Brien-Smith", emails: [{ email: 'A@B.C' }], phones: [{ number: '555' }], addresses: [{ address1: '12, Park Ave.', city: ' New  York', postCode: '100 01' }] }, 'US');
    assert.deepEqual(p, { customerId: '1', name: 'zoe o brien smith', emails: ['a@b.c'], phones: [], postalCodes: ['10001'], cities: ['new york'], streets: ['12 park ave|10001'] });
    // A word of the name with the postal code and the street address (the city only without a postal code).
    assert.deepEqual(keysOf(p).filter((k) => k.startsWith('n:zoe')), ['n:zoe|z:10001', 'n:zoe|s:12 park ave|10001']);
    assert.deepEqual(keysOf({ ...p, postalCodes: [] }).filter((k) => k.startsWith('n:zoe')), ['n:zoe|c:new york', 'n:zoe|s:12 park ave|10001'], 'the city when there is no postal code');
  });

  it('folds letters that NFKD keeps whole (a stroke, a ligature), and blocks names of single Han characters', () => {
    const p = profileOf({ id: '1', first_name: 'Łukasz', last_name: 'Ørsted-Þórsson', emails: [], phones: [], addresses: [{ city: 'Łódź' }] }, 'US');
    assert.equal(p.name, 'lukasz orsted thorsson');
    assert.deepEqual(p.cities, ['lodz']);
    assert.equal(profileOf({ id: '2', first_name: 'Æsa', last_name: 'Strauß', emails: [], phones: [], addresses: [] }, 'US').name, 'aesa strauss');
    // Format characters pasted with a name (a joiner, a soft hyphen, bidi marks and isolates) are no word break; a
    // zero-width space is one (Thai separates words with it).
    assert.equal(profileOf({ id: '5', first_name: 'An\u2066na\u2069', last_name: 'Schm\u200did\u00adt\u200e', emails: [], phones: [], addresses: [] }, 'US').name, 'anna schmidt');
    const thai = (first: string) => profileOf({ id: '6', first_name: first, last_name: '', emails: [], phones: [], addresses: [] }, 'US').name;
    assert.equal(thai('สมชาย\u200bใจดี'), thai('สมชาย ใจดี'));
    assert.equal(thai('สมชาย\u200bใจดี').split(' ').length, 2, 'two words');
    assert.equal(profileOf({ id: '7', first_name: 'Mary\u200bAnn', last_name: 'Smithers', emails: [], phones: [], addresses: [] }, 'US').name, 'mary ann smithers');
    // Initials (one Latin letter) are no blocking key; a one-character Han name is a whole name.
    const han = profileOf({ id: '3', first_name: '伟', last_name: '王', emails: [], phones: [], addresses: [{ postCode: '100000' }] }, 'US');
    assert.deepEqual(keysOf(han).sort(), ['n:伟|z:100000', 'n:王|z:100000']);
    assert.deepEqual(keysOf(profileOf({ id: '4', first_name: 'J', last_name: 'Li', emails: [], phones: [], addresses: [{ postCode: '1' }] }, 'US')), ['n:li|z:1']);
  });

  it('scores each signal and explains it', () => {
    const none = { emails: [], phones: [], nameSimilarity: 0, postalCodes: [], cities: [] };
    assert.equal(scorePair(none).score, 0);
    assert.ok(scorePair({ ...none, emails: ['a@b.c'] }).score >= 0.8, 'the same email alone is a likely duplicate');
    assert.ok(scorePair({ ...none, phones: ['+12015550123'] }).score < 0.8, 'a shared phone alone is not (households)');
    assert.ok(scorePair({ ...none, nameSimilarity: 1, postalCodes: ['07030'] }).score >= 0.8);
    assert.ok(scorePair({ ...none, nameSimilarity: 1 }).score < 0.8, 'a name alone, elsewhere, is not');
    assert.ok(scorePair({ ...none, nameSimilarity: 0.375, postalCodes: ['07030'], phones: ['+1'] }).score < 0.8, 'family member: same place and phone, other first name');
    assert.ok(scorePair({ ...none, nameSimilarity: 1, cities: ['hoboken'] }).score < 0.8, 'the same name in the same city is weaker than in the same postal code');
    assert.ok(scorePair({ ...none, nameSimilarity: 1, postalCodes: ['07030'], nameCount: 40 }).score < 0.8, 'a common name says less');
    // One typo (same first letter, 4+ letters) counts as a near-identical name.
    assert.ok(oneTypoApart('jamees smith', 'smith james'));
    assert.ok(oneTypoApart('jennifer lee', 'jenifer lee'));
    assert.ok(!oneTypoApart('alina lee', 'elina lee'), 'first letters differ: other names');
    assert.ok(!oneTypoApart('ann lee', 'anna lee'), 'short words differ: other names');
    assert.ok(!oneTypoApart('james smith', 'james smyth jr'));
    const typo = scorePair({ ...none, names: ['jamees smith', 'james smith'], nameSimilarity: 0.57, postalCodes: ['07030'] });
    assert.ok(typo.score >= 0.8, JSON.stringify(typo));
    assert.match(typo.reasons[0].detail, /one typo apart/);
    // A typo between two spellings each borne by many is two names (alena/alina), a slip of a common name is not.
    const slip = { ...none, names: ['alena smith', 'alina smith'] as [string, string], nameSimilarity: 0.5, postalCodes: ['07030'] };
    assert.deepEqual(scorePair({ ...slip, typoCount: 1 }), scorePair({ ...slip, typoCount: SLIP_COMMON }), 'a rare spelling: a slip');
    assert.ok(scorePair({ ...slip, typoCount: 2 }).score >= 0.8);
    const twoNames = scorePair({ ...slip, typoCount: 64 });
    assert.ok(twoNames.score < 0.8, JSON.stringify(twoNames));
    assert.match(twoNames.reasons[0].detail, /one typo apart .*both spellings common \(the rarer borne by at least 64 customers\)/);
    assert.ok(scorePair({ ...slip, typoCount: 1000 }).score < twoNames.score, 'the commoner, the less');
    assert.ok(scorePair({ ...slip, typoCount: 1e6 }).score >= scorePair({ ...slip, names: undefined }).score, 'never less than its trigrams');
    assert.deepEqual([63, 64, 90, 91].map(slipFloor), [0, 64, 64, 91]);
    const r = scorePair({ ...none, emails: ['a@b.c'], nameSimilarity: 0.9, cities: ['hoboken'] }).reasons.map((x) => x.field);
    assert.deepEqual(r, ['email', 'name', 'address']);
  });
});

await describeEachDb('possible duplicates', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const create = async (externalId: string, body: Record<string, unknown>) => {
    const r = await api().post('/crm/customers', { externalId, ...body });
    assert.equal(r.status, 201, r.text);
    return r.body;
  };
  // Reads serve the pairs as they stand: the worker's refresher folds changes in (here, the test does).
  const drain = () => refreshDuplicates(ctx.tdb.db, 'US');
  const dupsOf = async (id: string, q = '') => {
    await drain();
    const r = await api().get(`/crm/customers/${id}/duplicates${q}`);
    assert.equal(r.status, 200, r.text);
    return r.body.data as { customer: { externalId: string }; score: number; reasons: { field: string; detail: string }[] }[];
  };
  const home = { address1: '1 Main St', city: 'Hoboken', postCode: '07030', countryCode: 'US' };

  it('finds the same person across formats, best first, with reasons; not the family', async () => {
    const ann = await create('d-ann', { firstName: 'Ann', lastName: 'Lee', emails: [{ email: 'Ann.Lee@Example.com' }], phones: [{ number: '(201) 555-0123' }], addresses: [home] });
    await create('d-ann2', { firstName: 'ann', lastName: 'lee', emails: [{ email: 'ann.lee@example.COM' }], phones: [{ number: '+1 201-555-0123' }] });
    await create('d-ann3', { firstName: 'Lee', lastName: 'Ann', addresses: [{ ...home, postCode: '07030 ' }] });
    await create('d-bob', { firstName: 'Robert', lastName: 'Lee', phones: [{ number: '201.555.0123' }], addresses: [home] });
    await create('d-zed', { firstName: 'Zed', lastName: 'Quux', emails: [{ email: 'zed@example.com' }] });
    const d = await dupsOf('d-ann');
    const ids = d.map((x) => x.customer.externalId);
    assert.deepEqual(ids.slice(0, 2), ['d-ann2', 'd-ann3'], JSON.stringify(d));
    assert.ok(d[0].score >= d[1].score);
    assert.ok(d[0].score >= 0.8 && d[1].score >= 0.8);
    assert.deepEqual(d[0].reasons.map((r) => r.field).sort(), ['email', 'name', 'phone']);
    assert.match(d[0].reasons.find((r) => r.field === 'phone')!.detail, /\+12015550123/);
    assert.deepEqual(d[1].reasons.map((r) => r.field), ['name', 'address']);
    const bob = d.find((x) => x.customer.externalId === 'd-bob');
    assert.ok(!bob || bob.score < 0.8, 'a family member (same address and phone, other first name) is not a likely duplicate');
    assert.ok(!ids.includes('d-zed'));
    assert.deepEqual((await dupsOf('d-ann', '?limit=1')).map((x) => x.customer.externalId), ['d-ann2']);
    assert.deepEqual(await dupsOf(ann.uuid), d, 'the same by uuid');
    // Symmetric.
    assert.ok((await dupsOf('d-ann2')).some((x) => x.customer.externalId === 'd-ann'));
  });

  it('finds names one typo apart that trigrams alone rate low (the candidate search keeps them)', async () => {
    const place = { address1: '9 Elm St', city: 'Trenton', postCode: '08608', countryCode: 'US' };
    await create('t-1', { firstName: 'Anna', lastName: 'Lopez', addresses: [place] });
    await create('t-2', { firstName: 'Lpoez', lastName: 'Anna', addresses: [place] });
    const d = await dupsOf('t-1');
    assert.deepEqual(d.map((x) => x.customer.externalId), ['t-2'], JSON.stringify(d));
    assert.ok(d[0].score >= 0.8);
    assert.match(d[0].reasons[0].detail, /one typo apart \(similarity 0\.4/);
  });

  it('the candidate search sifts by name before reading profiles: every pair one typo apart kept, names sharing one word of a length left out', async () => {
    // Before migration 061 every candidate's whole profile was read, and two-word names sharing a word whose other
    // words had lengths at most one apart (maria smith / maria jones) all went through: 60% of candidates at 5M.
    let seed = 61;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    const word = () => [...Array(5 + rand(4))].map(() => String.fromCharCode(97 + rand(26))).join('');
    const slip = (w: string) => {
      const i = 1 + rand(w.length - 2); // the first letter stays (typoWords)
      const c = String.fromCharCode(97 + rand(26));
      return [w.slice(0, i) + c + w.slice(i), w.slice(0, i) + w.slice(i + 1), w.slice(0, i) + c + w.slice(i + 1), w.slice(0, i) + w[i + 1] + w[i] + w.slice(i + 2)][rand(4)];
    };
    const made: [string, string][] = [];
    const items: Record<string, unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      const [first, last] = [word(), word()];
      const [f2, l2] = rand(2) === 0 ? [slip(first), last] : [first, slip(last)];
      const place = { address1: `${i} Sift Rd`, city: 'Siftville', postCode: String(62000 + i), countryCode: 'US' };
      items.push({ externalId: `sift-${i}a`, firstName: first, lastName: last, addresses: [place] }, { externalId: `sift-${i}b`, firstName: f2, lastName: l2, addresses: [{ ...place, address1: `${i} Other Rd` }] });
      if (oneTypoApart(`${first} ${last}`, `${f2} ${l2}`)) made.push([`sift-${i}a`, `sift-${i}b`]);
    }
    assert.ok(made.length >= 30, `${made.length} pairs one typo apart`);
    assert.equal((await api().post('/crm/customers/bulk', items)).status, 200);
    for (const [a, b] of made) {
      const d = await dupsOf(a);
      assert.ok(d.some((x) => x.customer.externalId === b && /one typo apart|similarity/.test(x.reasons[0].detail)), `${a} ~ ${b}: ${JSON.stringify(d)}`);
    }
    const db = ctx.tdb.db;
    const place = { address1: '3 Word St', city: 'Wordham', postCode: '62999', countryCode: 'US' };
    await create('sift-maria-s', { firstName: 'Maria', lastName: 'Smith', addresses: [place] });
    await create('sift-maria-j', { firstName: 'Maria', lastName: 'Jones', addresses: [{ ...place, address1: '5 Word St' }] });
    await drain();
    const id = (await db.query<{ id: string }>(`SELECT id FROM customers WHERE external_id = 'sift-maria-s'`)).rows[0].id;
    const p = profileOf((await activeSignals(db, [id]))[0], 'US');
    const keys = keysOf(p).map((key) => ({ key, customerId: p.customerId, name: p.name }));
    assert.ok(keys.some((k) => k.key === 'n:maria|z:62999'), 'they meet on the first name with the postal code');
    assert.deepEqual(await candidates(db, keys), [], 'one word in common, the other of another first letter: no candidate features computed');
  });

  it('a customer whose name changes has every key written again with the new name (the candidate search reads names from the keys)', async () => {
    const db = ctx.tdb.db;
    const place = { address1: '4 Key St', city: 'Keyport', postCode: '63063', countryCode: 'US' };
    await create('kn-a', { firstName: 'Orla', lastName: 'Aaberg', emails: [{ email: 'orla.kn@example.com' }], addresses: [place] });
    await drain();
    assert.equal((await api().patch('/crm/customers/kn-a', { lastName: 'Quinlan' })).status, 200);
    await drain();
    const names = await db.query<{ key: string; name: string }>(
      `SELECT k.key, k.name FROM duplicate_keys k JOIN customers c ON c.id = k.customer_id WHERE c.external_id = 'kn-a' ORDER BY k.key`,
    );
    assert.ok(names.rows.some((k) => k.key === 'e:orla.kn@example.com') && names.rows.some((k) => k.key === 'n:orla|z:63063'));
    assert.deepEqual(names.rows.filter((k) => k.name !== 'orla quinlan'), [], 'every key, the email\'s and the unchanged first name\'s included');
    // Found through the first name's key, which the change did not touch: a stale name on it ("orla aaberg") would
    // sift the pair out (another last name, another first letter).
    await create('kn-b', { firstName: 'Orla', lastName: 'Quinlan', addresses: [{ ...place, address1: '6 Key St' }] });
    const d = await dupsOf('kn-b');
    assert.deepEqual(d.map((x) => x.customer.externalId), ['kn-a'], JSON.stringify(d));
  });

  it('finds unicode names: single Han characters, letters with a stroke written with or without it', async () => {
    const bj = { address1: '1 Chang An Jie', city: '北京', postCode: '100000', countryCode: 'CN' };
    await create('h-1', { firstName: '伟', lastName: '王', addresses: [bj] });
    await create('h-2', { firstName: '伟', lastName: '王', addresses: [bj] });
    const lodz = { address1: 'ul. Piotrkowska 1', city: 'Łódź', postCode: '90-001', countryCode: 'PL' };
    await create('h-3', { firstName: 'Łukasz', lastName: 'Żółć', addresses: [lodz] });
    await create('h-4', { firstName: 'Lukasz', lastName: 'Zolc', addresses: [{ ...lodz, city: 'Lodz' }] });
    for (const [a, b] of [['h-1', 'h-2'], ['h-3', 'h-4']]) {
      const d = await dupsOf(a);
      assert.deepEqual(d.map((x) => x.customer.externalId), [b], JSON.stringify(d));
      assert.ok(d[0].score >= 0.8, JSON.stringify(d));
    }
  });

  it('migration 024 puts back on the queue the customers whose folded name or city may change (unicode)', async () => {
    const db = ctx.tdb.db;
    await create('m24-1', { firstName: 'Jørgen', lastName: 'Berg' });
    await create('m24-2', { firstName: 'Jorgen', lastName: 'Berg' });
    await create('m24-3', { firstName: 'Ann', lastName: 'Berg', addresses: [{ city: 'Łódź' }] });
    await refreshDuplicates(db, 'US');
    await db.query('DELETE FROM schema_migrations WHERE version = 24');
    assert.deepEqual(await migrate(db), ['024_duplicates_unicode_refold.sql']);
    const dirty = await db.query<{ external_id: string }>(
      `SELECT c.external_id FROM duplicate_dirty d JOIN customers c ON c.id = d.customer_id WHERE c.external_id LIKE 'm24-%' ORDER BY 1`,
    );
    assert.deepEqual(dirty.rows.map((r) => r.external_id), ['m24-1', 'm24-3']);
  });

  it('an email or phone many customers share (a placeholder, a shop number) pairs nobody, and pairs again when it is rare', async () => {
    // Before: k bearers of one placeholder email made k²/2 pairs (3,000 made 4.5 million, a gigabyte, minutes per read).
    const n = COMMON_CONTACT + 2;
    const at = { address1: '1 Shop St', city: 'Camden', postCode: '08101', countryCode: 'US' };
    const items = [...Array(n)].map((_, i) => ({
      externalId: `ph-${i}`, firstName: `Zyx${String.fromCharCode(97 + i)}`, lastName: `Qwv${i}`,
      emails: [{ email: i % 2 ? 'NoEmail@Store.example' : 'noemail@store.example' }], phones: [{ number: '(856) 555-0100' }],
    }));
    // Two of them are the same person (same name, same place): still found, by the name and the place.
    items[0] = { ...items[0], firstName: 'Maria', lastName: 'Ortiz', addresses: [at] } as any;
    items[1] = { ...items[1], firstName: 'maria', lastName: 'ORTIZ', addresses: [at] } as any;
    const first = await api().post('/crm/customers/bulk', items.slice(0, COMMON_CONTACT));
    assert.equal(first.status, 200, first.text);
    assert.ok(first.body.results.every((x: any) => x.status === 201), first.text);
    assert.equal((await dupsOf('ph-2')).length, COMMON_CONTACT - 1, 'rare enough: the shared email and phone count');
    const more = await api().post('/crm/customers/bulk', items.slice(COMMON_CONTACT));
    assert.equal(more.status, 200, more.text);
    assert.deepEqual(await dupsOf('ph-2'), []);
    assert.deepEqual(await dupsOf(`ph-${n - 1}`), []);
    const maria = await dupsOf('ph-0');
    assert.deepEqual(maria.map((x) => x.customer.externalId), ['ph-1'], JSON.stringify(maria));
    assert.deepEqual(maria[0].reasons.map((r) => r.field), ['name', 'address'], 'the placeholder is no reason');
    await drain();
    const all = await api().get('/crm/duplicates?minScore=0&limit=250');
    assert.ok(!all.body.data.some((p: any) => p.reasons.some((r: any) => /noemail|8565550100/.test(r.detail))), JSON.stringify(all.body.data[0]));
    // Back to rare: the bearers pair again.
    for (let i = COMMON_CONTACT; i < n; i++) assert.equal((await api().patch(`/crm/customers/ph-${i}`, { emails: [], phones: [] })).status, 200);
    assert.equal((await dupsOf('ph-2')).length, COMMON_CONTACT - 1);
  });

  it('many bearers of one name at one place (walk-in "Guest Customer"s): the name is counted once, the hopeless pairs left out in the database', async () => {
    // Before: each candidate with the same name counted that name's bearers: k bearers cost k² candidates × k,
    // 72 s for one read at k = 1,000.
    const db = ctx.tdb.db;
    const k = 150;
    const items = [...Array(k)].map((_, i) => ({ externalId: `gc-${i}`, firstName: 'Guest', lastName: 'Customer', addresses: [{ city: 'Newark', postCode: '07102' }] }));
    for (let i = 0; i < k; i += 100) assert.equal((await api().post('/crm/customers/bulk', items.slice(i, i + 100))).status, 200);
    assert.deepEqual(await dupsOf('gc-0'), [], 'a name this common says nothing on its own');
    const ids = (await db.query<{ id: string }>(`SELECT id FROM customers WHERE external_id LIKE 'gc-%'`)).rows.map((r) => r.id);
    const profiles = (await activeSignals(db, ids)).map((c) => profileOf(c, 'US'));
    const rec = recording(db);
    const rows = (await candidates(rec.q, profiles.flatMap((p) => keysOf(p).map((key) => ({ key, customerId: p.customerId, name: p.name }))))).length;
    assert.equal(rows, k * (k - 1));
    const { buffers } = await buffersOf(db, rec.sent[0]);
    // The statement's own reads beside its candidate search (before: the name's index again for every candidate, 4 per candidate here).
    assert.ok(buffers < rows, `${buffers} buffers for ${rows} candidates`);
    // A name this common pairs its bearers only with a contact in common: the others are left out in the database
    // (before: k² rows computed, sent and scored for nothing, 22 s of one batch at k = 1,000).
    const guests = profiles.flatMap((p) => keysOf(p).map((key) => ({ key, customerId: p.customerId, name: p.name })));
    assert.equal((await candidates(db, guests, { emails: [], phones: [] }, ['guest customer'])).length, 0);
    await api().post('/crm/customers/bulk', [1, 2].map((i) => ({ externalId: `gc-e${i}`, firstName: 'Guest', lastName: 'Customer', emails: [{ email: 'jo.guest@example.com' }], addresses: [{ city: 'Newark', postCode: '07102' }] })));
    assert.deepEqual((await dupsOf('gc-e1')).map((x) => x.customer.externalId), ['gc-e2']);
  });

  it('a name a step more common re-scores its pairs read by their name, not by walking its bearers', async () => {
    // Before migration 062 the step walked every bearer of the name (its index, each bearer's profile and pairs):
    // at 5M customers as much of the refresher's time as the candidate search.
    const db = ctx.tdb.db;
    const k = 120;
    const items = [...Array(k)].map((_, i) => ({ externalId: `sn-${i}`, firstName: 'Odile', lastName: 'Stepwise', emails: i === 0 ? [{ email: 'odile.twin@example.com' }] : [], addresses: [{ address1: `${i} Far Rd`, city: `Town ${i}`, postCode: String(70000 + i), countryCode: 'US' }] }));
    for (let i = 0; i < k; i += 100) assert.equal((await api().post('/crm/customers/bulk', items.slice(i, i + 100))).status, 200);
    await create('sn-twin', { firstName: 'Odile', lastName: 'Stepwise', emails: [{ email: 'odile.twin@example.com' }], addresses: [{ address1: '0 Far Rd', city: 'Town 0', postCode: '70000', countryCode: 'US' }] });
    const pair = (await dupsOf('sn-0')).find((x) => x.customer.externalId === 'sn-twin');
    assert.ok(pair && /at least \d+ customers/.test(JSON.stringify(pair.reasons)), JSON.stringify(pair));
    const stored = (await db.query<{ same_name: string | null }>(`SELECT same_name FROM duplicate_pairs WHERE same_name = 'odile stepwise'`)).rows;
    assert.equal(stored.length, 1, 'the one pair of two bearers, marked with its name');
    const rec = recording(db);
    const rows = await pairsOfNames(rec.q, ['odile stepwise'], [], { emails: [], phones: [] });
    assert.equal(rows.length, 1);
    const { buffers } = await buffersOf(db, rec.sent[0]);
    assert.ok(buffers < k / 2, `${buffers} buffers for a name of ${k + 1} bearers and 1 pair`);
  });

  it('scores a common name by its current count, whatever order its bearers arrived in, up and down', async () => {
    const at = (postCode: string) => ({ address1: '5 Oak St', city: `Town ${postCode}`, postCode, countryCode: 'US' });
    const pairOf = async (a: string, b: string) => (await dupsOf(a)).find((x) => x.customer.externalId === b)!;
    // Jane Roe: the pair first, scored while the name is rare; then five more bearers elsewhere.
    await create('o-1', { firstName: 'Jane', lastName: 'Roe', addresses: [at('11001')] });
    await create('o-2', { firstName: 'Jane', lastName: 'Roe', addresses: [at('11001')] });
    const rare = await pairOf('o-1', 'o-2');
    assert.ok(rare.score >= 0.8 && !/common/.test(JSON.stringify(rare.reasons)), JSON.stringify(rare));
    for (let i = 0; i < 5; i++) await create(`o-x${i}`, { firstName: 'Jane', lastName: 'Roe', addresses: [at(`2${i}000`)] });
    // Joan Doe: the five bearers first (refreshed), then the pair.
    for (let i = 0; i < 5; i++) await create(`l-x${i}`, { firstName: 'Joan', lastName: 'Doe', addresses: [at(`3${i}000`)] });
    await dupsOf('l-x0');
    await create('l-1', { firstName: 'Joan', lastName: 'Doe', addresses: [at('11001')] });
    await create('l-2', { firstName: 'Joan', lastName: 'Doe', addresses: [at('11001')] });
    const early = await pairOf('o-1', 'o-2');
    const late = await pairOf('l-1', 'l-2');
    assert.ok(early.score < rare.score, `a name now borne by 7 says less: ${JSON.stringify(early)}`);
    assert.equal(early.score, late.score);
    assert.deepEqual(early.reasons, late.reasons);
    assert.match(early.reasons[0].detail, /a common name \(at least 6 customers\)/);
    // The name becomes rare again: the pair is scored as at first.
    for (let i = 0; i < 5; i++) assert.equal((await api().patch(`/crm/customers/o-x${i}`, { firstName: `Janet${i}` })).status, 200);
    assert.deepEqual(await pairOf('o-1', 'o-2'), rare);
  });

  it('names one typo apart: two common spellings are two names, a slip of a common name is one; re-scored as the spellings\' counts change, whatever the order', async () => {
    const at = (postCode: string) => ({ address1: '7 Birch St', city: `Town ${postCode}`, postCode, countryCode: 'US' });
    const pairOf = async (a: string, b: string) => (await dupsOf(a)).find((x) => x.customer.externalId === b);
    const many = async (prefix: string, firstName: string, n: number) => {
      // Elsewhere and without contacts: they count, they meet nobody.
      const items = [...Array(n)].map((_, i) => ({ externalId: `${prefix}-${i}`, firstName, lastName: `Filler${i}` }));
      for (let i = 0; i < n; i += 100) assert.equal((await api().post('/crm/customers/bulk', items.slice(i, i + 100))).status, 200);
    };
    // Both spellings rare: a slip, as before.
    await create('ty-a1', { firstName: 'Alena', lastName: 'Smithers', addresses: [at('58001')] });
    await create('ty-a2', { firstName: 'Alina', lastName: 'Smithers', addresses: [at('58001')] });
    const rare = (await pairOf('ty-a1', 'ty-a2'))!;
    assert.ok(rare.score >= 0.8, JSON.stringify(rare));
    // Both spellings become common (64 bearers each): the stored pair is re-scored in place, below minScore.
    await many('ty-alena', 'Alena', 64);
    await many('ty-alina', 'Alina', 64);
    const common = (await pairOf('ty-a1', 'ty-a2'))!;
    assert.ok(common.score < 0.8, JSON.stringify(common));
    assert.match(common.reasons[0].detail, /both spellings common \(the rarer borne by at least 64 customers\)/);
    // The same two spellings met after they became common: the same score.
    await create('ty-b1', { firstName: 'Alena', lastName: 'Wrightson', addresses: [at('58002')] });
    await create('ty-b2', { firstName: 'Alina', lastName: 'Wrightson', addresses: [at('58002')] });
    const late = (await pairOf('ty-b1', 'ty-b2'))!;
    assert.equal(late.score, common.score);
    // A slip of a common name (its rare spelling borne by one) still is a likely duplicate.
    await create('ty-c1', { firstName: 'Alena', lastName: 'Carter', addresses: [at('58003')] });
    await create('ty-c2', { firstName: 'Alnea', lastName: 'Carter', addresses: [at('58003')] });
    const slip = (await pairOf('ty-c1', 'ty-c2'))!;
    assert.deepEqual(slip.score, rare.score, JSON.stringify(slip));
    // One spelling rare again: the pairs come back as slips.
    assert.equal((await api().post('/crm/customers/bulk', [...Array(64)].map((_, i) => ({ externalId: `ty-alina-${i}`, firstName: 'Bo' })))).status, 200);
    assert.deepEqual(await pairOf('ty-a1', 'ty-a2'), rare);
    assert.equal((await pairOf('ty-b1', 'ty-b2'))!.score, rare.score);
  });

  it('stays current as customers change: patch, merge (only active customers), undo, bulk', async () => {
    await create('k-1', { firstName: 'Kim', lastName: 'Park', emails: [{ email: 'kim@park.example' }] });
    await create('k-2', { firstName: 'Jo', lastName: 'Yoon', emails: [{ email: 'other@park.example' }] });
    assert.deepEqual(await dupsOf('k-1'), []);
    const p = await api().patch('/crm/customers/k-2', { emails: [{ email: 'KIM@park.example' }] });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual((await dupsOf('k-1')).map((x) => x.customer.externalId), ['k-2']);
    const m = await api().post('/crm/customers/k-1/merge', { mergeWithCustomerIds: ['k-2'] });
    assert.equal(m.status, 200, m.text);
    assert.deepEqual(await dupsOf('k-1'), [], 'a merged-away customer is no duplicate');
    assert.deepEqual(await dupsOf('k-2'), []);
    const all = await api().get('/crm/duplicates?minScore=0&limit=250');
    assert.ok(!all.body.data.some((x: any) => x.customers.some((c: any) => c.externalId === 'k-2')));
    assert.equal((await api().post(`/crm/merges/${m.body.mergeUuid}/undo`)).status, 200);
    assert.deepEqual((await dupsOf('k-1')).map((x) => x.customer.externalId), ['k-2'], 'back after the undo');
    const b = await api().post('/crm/customers/bulk', [{ externalId: 'k-3', firstName: 'Kim', lastName: 'Park', emails: [{ email: 'Kim@Park.example' }] }]);
    assert.equal(b.status, 200, b.text);
    assert.equal(b.body.results[0].status, 201, b.text);
    assert.deepEqual((await dupsOf('k-1')).map((x) => x.customer.externalId).sort(), ['k-2', 'k-3']);
    // A write behind the API's back (SQL) is seen too: the triggers mark the customer.
    await ctx.tdb.db.query(`UPDATE customers SET emails = '[]', email_keys = '{}' WHERE external_id = 'k-3'`);
    assert.deepEqual((await dupsOf('k-1')).map((x) => x.customer.externalId), ['k-2']);
  });

  it('lists pairs across the base best first, walks them with a cursor, filters by minScore', async () => {
    for (let i = 0; i < 3; i++) {
      await create(`w-${i}a`, { firstName: `Walker${i}`, lastName: 'Ng', emails: [{ email: `w${i}@ng.example` }] });
      await create(`w-${i}b`, { firstName: 'Someone', lastName: 'Else', emails: [{ email: `W${i}@NG.example` }] });
    }
    await drain();
    const seen: string[] = [];
    const scores: number[] = [];
    let cursor: string | null = null;
    do {
      const r: { status: number; text: string; body: any } = await api().get(`/crm/duplicates?limit=2&minScore=0.8${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, r.text);
      for (const pair of r.body.data) {
        assert.equal(pair.customers.length, 2);
        assert.ok(pair.score >= 0.8);
        seen.push(pair.customers.map((c: any) => c.externalId).sort().join('+'));
        scores.push(pair.score);
      }
      cursor = r.body.nextCursor;
    } while (cursor);
    assert.equal(new Set(seen).size, seen.length, 'each pair once');
    for (let i = 0; i < 3; i++) assert.ok(seen.includes(`w-${i}a+w-${i}b`));
    assert.deepEqual(scores, [...scores].sort((a, b) => b - a), 'best first');
    const high = await api().get('/crm/duplicates?minScore=0.99');
    assert.ok(high.body.data.every((p: any) => p.score >= 0.99));
  });

  it('settles after a large backlog: vacuums the drained queue and analyzes the pairs (lookups stay on the quick plan)', async () => {
    const db = ctx.tdb.db;
    const counts = async () => (await db.query<{ relname: string; v: number; a: number }>(
      `SELECT relname, vacuum_count::int AS v, analyze_count::int AS a FROM pg_stat_user_tables WHERE relname IN ('duplicate_dirty', 'duplicate_pairs') ORDER BY relname`,
    )).rows.map((r) => `${r.relname}:${r.v}:${r.a}`);
    const mark = (xid: string) => db.query(`INSERT INTO customers (external_id, first_name, last_name) VALUES ($1, 'Settle', 'Test')`, [xid]);
    await mark('settle-1');
    const before = await counts();
    assert.equal(await refreshDuplicates(db, 'US'), 1);
    assert.deepEqual(await counts(), before, 'a small drain leaves vacuum and analyze to autovacuum');
    await mark('settle-2');
    assert.equal(await refreshDuplicates(db, 'US', Infinity, () => false, 1), 1);
    const [dirty, pairs] = before.map((x) => x.split(':').map((y, k) => (k === 0 ? y : Number(y))));
    assert.deepEqual(await counts(), [`duplicate_dirty:${Number(dirty[1]) + 1}:${dirty[2]}`, `duplicate_pairs:${pairs[1]}:${Number(pairs[2]) + 1}`]);
  });

  it('a read while customers are queued does no refresher work: it answers the pairs as they stand and how many wait', async () => {
    // Before: each read ran up to 4 refresher batches inline while the queue was dirty (43–64 s per read at 1M customers).
    const db = ctx.tdb.db;
    await drain();
    await create('q-1', { firstName: 'Quentin', lastName: 'Marsh', emails: [{ email: 'quentin@marsh.example' }] });
    await create('q-2', { firstName: 'QUENTIN', lastName: 'MARSH', emails: [{ email: 'Quentin@Marsh.example' }] });
    const queued = async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM duplicate_dirty')).rows[0].n);
    assert.equal(await queued(), 2);
    const one = await api().get('/crm/customers/q-1/duplicates');
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.body, { data: [], pendingCustomers: 2 });
    const all = await api().get('/crm/duplicates?minScore=0&limit=250');
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.pendingCustomers, 2);
    assert.ok(!all.body.data.some((p: any) => p.customers.some((c: any) => c.externalId === 'q-1')));
    assert.equal(await queued(), 2, 'the reads left the queue to the refresher');
    const profiles = await db.query(`SELECT 1 FROM duplicate_profiles p JOIN customers c ON c.id = p.customer_id WHERE c.external_id IN ('q-1', 'q-2')`);
    assert.equal(profiles.rows.length, 0, 'no profile was computed by a read');
    await drain();
    const after = await api().get('/crm/customers/q-1/duplicates');
    assert.equal(after.body.pendingCustomers, 0);
    assert.deepEqual(after.body.data.map((x: any) => x.customer.externalId), ['q-2']);
    assert.equal((await api().get('/crm/duplicates?minScore=0&limit=1')).body.pendingCustomers, 0);
  });

  it('a name key borne by more than the cap (a first name with a city) brings nobody together; a name with a postal code still does', async () => {
    // Before: every bearer of a city-level key was a candidate of every other (7,615 bearers for one key at 1M customers).
    const db = ctx.tdb.db;
    const town = (street: string) => ({ address1: street, city: 'Springvale', countryCode: 'US' });
    // One typo apart in the last name, the same city (no postal code, another street, no contact in common): they
    // meet on the first name with the city only (name × city: stored, below the default minScore).
    await create('cap-a1', { firstName: 'Avelina', lastName: 'Quist', addresses: [town('1 Pine Rd')] });
    await create('cap-a2', { firstName: 'Avelina', lastName: 'Qvist', addresses: [town('2 Oak Rd')] });
    const pairOf = async (a: string, b: string) => (await dupsOf(a)).find((x) => x.customer.externalId === b);
    const rare = await pairOf('cap-a1', 'cap-a2');
    assert.ok(rare && rare.score >= 0.5 && rare.score < 0.8, JSON.stringify(rare));
    assert.deepEqual(rare.reasons.map((r) => r.field), ['name', 'address']);
    // The first name with the city becomes common: past the cap it brings nobody together, and the earlier pair goes too.
    const items = [...Array(NAME_KEY_CAP)].map((_, i) => ({ externalId: `cap-x${i}`, firstName: 'Avelina', lastName: `Zed${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}ski`, addresses: [town(`${i} Elm St`)] }));
    for (let i = 0; i < items.length; i += 100) assert.equal((await api().post('/crm/customers/bulk', items.slice(i, i + 100))).status, 200);
    const bearers = async () => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM duplicate_keys WHERE key = 'n:avelina|c:springvale'`)).rows[0].n;
    await drain();
    assert.equal(await bearers(), NAME_KEY_CAP + 2, 'every bearer keeps the key, counted on its index up to the cap');
    assert.equal(await pairOf('cap-a1', 'cap-a2'), undefined, 'a key past the cap brings nobody together');
    assert.deepEqual(await dupsOf('cap-x0'), []);
    // The same name with a postal code in common pairs (that key is rare), above the default minScore.
    await create('cap-b1', { firstName: 'Avelina', lastName: 'Quist', addresses: [{ ...town('7 Birch Ln'), postCode: '40001' }] });
    await create('cap-b2', { firstName: 'Avelina', lastName: 'Qvist', addresses: [{ ...town('9 Ash Ln'), postCode: '40001' }] });
    const withPostal = await pairOf('cap-b1', 'cap-b2');
    assert.ok(withPostal && withPostal.score >= 0.8, JSON.stringify(withPostal));
    assert.deepEqual(withPostal.reasons.map((r) => r.field), ['name', 'address']);
    // Back under the cap: the pair through the city comes back, as if the others had never come.
    await db.query(`UPDATE customers SET first_name = 'Eve' WHERE external_id LIKE 'cap-x%'`);
    assert.deepEqual(await pairOf('cap-a1', 'cap-a2'), rare);
    assert.equal(await bearers(), 2);
  });

  it('the counts kept by the triggers are the words and names stored, after all the changes above (blocking keys are counted on their index)', async () => {
    await drain();
    const r = await ctx.tdb.db.query<{ key: string; kept: number; real: number }>(
      `WITH real AS (SELECT key, count(*)::int AS n FROM duplicate_keys WHERE key LIKE 'w:%' GROUP BY key UNION ALL SELECT 'f:' || name, count(*)::int FROM duplicate_profiles GROUP BY name)
       SELECT coalesce(c.key, r.key) AS key, coalesce(c.bearers, 0) AS kept, coalesce(r.n, 0) AS real
       FROM duplicate_key_counts c FULL JOIN real r ON r.key = c.key WHERE coalesce(c.bearers, 0) <> coalesce(r.n, 0)`,
    );
    assert.deepEqual(r.rows, []);
    assert.ok(Number((await ctx.tdb.db.query<{ n: string }>('SELECT count(*) AS n FROM duplicate_key_counts WHERE bearers > 0')).rows[0].n) > 100);
  });

  it('migrations 049, 061 and 062: every key and name counted, then the names and words only; the pairs of equal names marked', async () => {
    const db = ctx.tdb.db;
    await drain();
    const counts = async () => (await db.query<{ key: string; bearers: number }>('SELECT key, bearers FROM duplicate_key_counts WHERE bearers > 0 ORDER BY key')).rows;
    const pairs = async () => (await db.query('SELECT a, b, score, reasons, same_name FROM duplicate_pairs ORDER BY a, b')).rows;
    const [kept, keptPairs] = [await counts(), await pairs()];
    assert.ok(kept.length > 100 && kept.every((c) => c.key.startsWith('f:') || c.key.startsWith('w:')), 'names and words only');
    await db.exec('DROP TABLE duplicate_key_counts; DROP FUNCTION duplicate_keys_counted() CASCADE; DROP FUNCTION duplicate_names_counted() CASCADE');
    await db.exec('ALTER TABLE duplicate_profiles DROP CONSTRAINT duplicate_profiles_pkey, ADD PRIMARY KEY (customer_id)');
    await db.query('UPDATE duplicate_pairs SET same_name = NULL');
    await db.query('DELETE FROM schema_migrations WHERE version IN (49, 61, 62)');
    await db.exec('DROP INDEX duplicate_pairs_same_name; ALTER TABLE duplicate_pairs DROP COLUMN same_name');
    assert.deepEqual(await migrate(db, 49), ['049_duplicate_key_counts.sql']);
    assert.ok((await counts()).some((c) => c.key.startsWith('n:')), '049 counted the blocking keys too');
    assert.deepEqual(await migrate(db), ['061_duplicate_counts_of_names.sql', '062_duplicate_pairs_same_name.sql']);
    assert.deepEqual(await counts(), kept);
    assert.deepEqual(await pairs(), keptPairs, '062 marks the pairs of two equal names');
    const pk = await db.query<{ def: string }>(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'duplicate_profiles_pkey'`);
    assert.equal(pk.rows[0].def, 'PRIMARY KEY (customer_id) INCLUDE (name)');
    await db.query(`INSERT INTO duplicate_dirty (customer_id) SELECT customer_id FROM duplicate_profiles ON CONFLICT DO NOTHING`);
    await drain();
    assert.deepEqual(await pairs(), keptPairs, 'every pair scored as before');
    await create('m49-1', { firstName: 'Counted', lastName: 'Again', addresses: [{ address1: '3 Elm St', postCode: '49049' }] });
    await drain();
    assert.deepEqual((await db.query(`SELECT key, bearers FROM duplicate_key_counts WHERE key IN ('w:counted', 'f:counted again', 'n:counted|z:49049') ORDER BY key`)).rows,
      [{ key: 'f:counted again', bearers: 1 }, { key: 'w:counted', bearers: 1 }], 'the triggers count names and words, not blocking keys');
  });

  it('migrations 058 and 063: the word keys of the profiles already stored written, the pairs scored by the typo rule re-queued; every key given its bearer\'s name', async () => {
    const db = ctx.tdb.db;
    await drain();
    const keys = async () => (await db.query<{ key: string; customer_id: string; name: string }>(`SELECT * FROM duplicate_keys ORDER BY 1, 2`)).rows;
    const words = async () => (await db.query<{ key: string; customer_id: string }>(`SELECT key, customer_id FROM duplicate_keys WHERE key LIKE 'w:%' ORDER BY 1, 2`)).rows;
    const counts = async () => (await db.query<{ key: string; bearers: number }>(`SELECT key, bearers FROM duplicate_key_counts WHERE key LIKE 'w:%' AND bearers > 0 ORDER BY key`)).rows;
    const [kept, keptKeys, keptCounts] = [await words(), await keys(), await counts()];
    assert.ok(kept.some((k) => k.key === 'w:alena'), 'the refresher writes them');
    const typoSides = (await db.query<{ a: string }>(`SELECT DISTINCT a FROM duplicate_pairs WHERE reasons::text LIKE '%one typo apart%' ORDER BY a`)).rows.map((r) => r.a);
    assert.ok(typoSides.length > 0);
    await db.query(`DELETE FROM duplicate_keys WHERE key LIKE 'w:%'`);
    await db.query('DELETE FROM schema_migrations WHERE version IN (58, 63)');
    // duplicate_keys as before 063: no name.
    await db.exec('ALTER TABLE duplicate_keys DROP CONSTRAINT duplicate_keys_pkey; ALTER TABLE duplicate_keys DROP COLUMN name; ALTER TABLE duplicate_keys ADD PRIMARY KEY (key, customer_id)');
    assert.deepEqual(await migrate(db), ['058_duplicate_word_counts.sql', '063_duplicate_keys_carry_names.sql']);
    assert.deepEqual(await words(), kept);
    assert.deepEqual(await keys(), keptKeys, '063 gives every key the name the refresher writes it with');
    assert.ok(keptKeys.length > 100 && keptKeys.every((k) => k.name !== undefined && k.name !== null));
    const pk = await db.query<{ def: string }>(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'duplicate_keys_pkey'`);
    assert.equal(pk.rows[0].def, 'PRIMARY KEY (key, customer_id) INCLUDE (name)');
    assert.deepEqual(await counts(), keptCounts);
    assert.deepEqual((await db.query<{ customer_id: string }>('SELECT customer_id FROM duplicate_dirty ORDER BY customer_id')).rows.map((r) => r.customer_id), typoSides);
    await drain();
  });

  it('answers 404, 400 and EndpointNotInVersion in the error shape', async () => {
    const r = await api().get('/crm/customers/nobody-here/duplicates');
    assert.equal(r.status, 404);
    assert.deepEqual(errorCodes(r), ['NotFound']);
    for (const q of ['?minScore=2', '?minScore=x', '?cursor=zzz', '?limit=0', '?other=1']) {
      const b = await api().get(`/crm/duplicates${q}`);
      assert.equal(b.status, 400, q);
      errorCodes(b);
    }
    const old = await ctx.srv.api.get('/crm/duplicates');
    assert.equal(old.status, 404);
    assert.deepEqual(errorCodes(old), ['EndpointNotInVersion']);
  });
});
