// The address guard: which IP addresses a webhook may never reach, and a DNS lookup that refuses them.
// Used at subscription time (URL validation) and at connect time (undici's connect.lookup), so the
// address connected to is exactly the address checked: no DNS-rebinding window.
import dns from 'node:dns';
import net from 'node:net';

const blocked = new net.BlockList();
const V4: [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'CGNAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.169.254', 32, 'cloud metadata'],
  // Azure's wireserver (a public address every Azure VM reaches: its metadata, agent and DNS endpoint).
  ['168.63.129.16', 32, 'cloud metadata (Azure wireserver)'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'deprecated 6to4 relay anycast'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'], // includes 255.255.255.255 broadcast
];
const V6: [string, number, string][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['64:ff9b:1::', 48, 'NAT64 local'],
  ['100::', 64, 'discard'],
  ['2001:2::', 48, 'benchmarking'],
  ['2001:db8::', 32, 'documentation'],
  ['3fff::', 20, 'documentation'], // RFC 9637 (2024): let through until 2026-11-29, as were 2001:2::/48 and 5f00::/16
  ['5f00::', 16, 'segment routing (SRv6) SIDs'],
  ['fc00::', 7, 'private (unique local)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];
const reasons: { list: net.BlockList; reason: string }[] = [];
for (const [a, p, r] of V4) {
  blocked.addSubnet(a, p, 'ipv4');
  const l = new net.BlockList();
  l.addSubnet(a, p, 'ipv4');
  reasons.push({ list: l, reason: r });
}
for (const [a, p, r] of V6) {
  blocked.addSubnet(a, p, 'ipv6');
  const l = new net.BlockList();
  l.addSubnet(a, p, 'ipv6');
  reasons.push({ list: l, reason: r });
}

/** Parses the IPv4 forms inet_aton accepts (decimal 2130706433, octal 0177.0.0.1, hex 0x7f.1, short 127.1). */
export function parseLegacyIPv4(s: string): string | undefined {
  const parts = s.split('.');
  if (parts.length < 1 || parts.length > 4) return undefined;
  const nums: number[] = [];
  for (const p of parts) {
    let n: number;
    if (/^0x[0-9a-f]*$/i.test(p)) n = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
    else if (/^0[0-7]*$/.test(p)) n = parseInt(p, 8);
    else if (/^[1-9][0-9]*$/.test(p)) n = parseInt(p, 10);
    else return undefined;
    nums.push(n);
  }
  let value = 0;
  for (let i = 0; i < nums.length - 1; i++) {
    if (nums[i] > 255) return undefined;
    value = value * 256 + nums[i];
  }
  const rest = 4 - (nums.length - 1);
  const last = nums[nums.length - 1];
  if (last >= 256 ** rest) return undefined;
  value = value * 256 ** rest + last;
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

const v4Of = (hi: number, lo: number) => [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');

/**
 * Every IPv4 address an IPv6 address embeds, with the form's name: mapped ::ffff:0:0/96, translated
 * ::ffff:0:0:0/96, compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32 (server, and the
 * client address stored inverted), ISATAP (interface id 0:5efe or 200:5efe). Such packets may be delivered
 * to the embedded IPv4 address by a translator or relay, so a blocked embedded address blocks the IPv6 one.
 */
function embeddedV4(v6: string): { form: string; v4: string }[] {
  const groups = expand6(v6);
  if (!groups) return [];
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  const out: { form: string; v4: string }[] = [];
  const low = v4Of(groups[6], groups[7]);
  if (zero(0, 5) && groups[5] === 0xffff) out.push({ form: 'IPv4-mapped', v4: low });
  if (zero(0, 4) && groups[4] === 0xffff && groups[5] === 0) out.push({ form: 'IPv4-translated', v4: low });
  if (zero(0, 6) && (groups[6] !== 0 || groups[7] > 1)) out.push({ form: 'IPv4-compatible', v4: low });
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6)) out.push({ form: 'NAT64', v4: low });
  if (groups[0] === 0x2002) out.push({ form: '6to4', v4: v4Of(groups[1], groups[2]) });
  if (groups[0] === 0x2001 && groups[1] === 0) {
    out.push({ form: 'Teredo server', v4: v4Of(groups[2], groups[3]) });
    out.push({ form: 'Teredo client', v4: v4Of(groups[6] ^ 0xffff, groups[7] ^ 0xffff) });
  }
  if ((groups[4] === 0 || groups[4] === 0x200) && groups[5] === 0x5efe) out.push({ form: 'ISATAP', v4: low });
  return out;
}

function expand6(a: string): number[] | undefined {
  let s = a.toLowerCase().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    const o = v4[1].split('.').map(Number);
    s = s.slice(0, -v4[1].length) + ((o[0] << 8) | o[1]).toString(16) + ':' + ((o[2] << 8) | o[3]).toString(16);
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  if (fill < 0) return undefined;
  const all = [...h, ...Array(fill).fill('0'), ...t].map((g) => parseInt(g || '0', 16));
  return all.length === 8 && all.every((g) => g >= 0 && g <= 0xffff) ? all : undefined;
}

/**
 * Why an IP address must not be reached, or undefined if it may. Accepts IPv4 (any inet_aton form),
 * IPv6 (bracketed or not, with a zone), IPv4 embedded in IPv6. A string that is not an IP answers undefined.
 */
export function blockedReason(ip: string): string | undefined {
  let a = ip.trim().replace(/^\[|\]$/g, '');
  let family = net.isIP(a);
  if (family === 0) {
    const legacy = parseLegacyIPv4(a);
    if (!legacy) {
      if (a.includes('%') && net.isIP(a.replace(/%.*$/, '')) === 6) {
        a = a.replace(/%.*$/, '');
        family = 6;
      } else return undefined;
    } else {
      a = legacy;
      family = 4;
    }
  }
  if (family === 6) {
    for (const { form, v4 } of embeddedV4(a)) {
      const r = blockedReason(v4);
      if (r) return `${form} ${r} (embeds ${v4})`;
    }
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (!blocked.check(a, type)) return undefined;
  return reasons.find((x) => x.list.check(a, type))?.reason ?? 'private';
}

/** An IP address as a URL or CONNECT authority writes it (an IPv6 one in brackets). */
export const urlHost = (ip: string) => (net.isIPv6(ip) ? `[${ip}]` : ip);

export function isIpLiteral(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return net.isIP(h) !== 0 || parseLegacyIPv4(h) !== undefined;
}

/** A refusal's reason without the IPv4 address an IPv6 one embeds ("NAT64 private (embeds 10.0.0.23)"): for names. */
const withoutAddress = (reason: string) => reason.replace(/ \(embeds [^)]*\)/, '');

/**
 * What a refusal says: a literal's reason whole; a name's without the address it resolved to (the message reaches the
 * logs API, and an API key would map internal names to their addresses through it: a probe, 2026-11-29).
 */
const blockedWords = (host: string, literal: boolean, reason: string) =>
  literal ? `${host} is a ${reason} address` : `${host} resolves to a ${withoutAddress(reason)} address`;

/** An error whose code tells the sender this was the address guard, not the network. */
export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
  constructor(readonly host: string, readonly address: string, readonly reason: string) {
    // `address` stays on the error for the process's own use; the message does not say a name's (blockedWords).
    super(`${blockedWords(host, isIpLiteral(host), reason)}: refused`);
  }
}

type LookupCb = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A drop-in for dns.lookup (net.connect's `lookup` option): resolves every address, refuses the host
 * if any address is blocked, and hands net.connect only addresses it checked.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, cb: LookupCb) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addrs) => {
      if (err) return cb(err, '', 0);
      const list = addrs as dns.LookupAddress[];
      if (!allowPrivate) {
        for (const x of list) {
          const reason = blockedReason(x.address);
          if (reason) return cb(new BlockedAddressError(hostname, x.address, reason) as any, '', 0);
        }
      }
      if ((options as any).all) cb(null, list);
      else cb(null, list[0].address, list[0].family);
    });
  };
}

/** Checks a host (name or literal) the way the sender will; resolves to a refusal reason or undefined. */
export async function checkHost(host: string): Promise<{ blocked?: string; unresolvable?: string }> {
  const h = host.replace(/^\[|\]$/g, '');
  if (isIpLiteral(h)) {
    const r = blockedReason(h);
    return r ? { blocked: blockedWords(host, true, r) } : {};
  }
  try {
    const addrs = await dns.promises.lookup(h, { all: true });
    for (const x of addrs) {
      const r = blockedReason(x.address);
      if (r) return { blocked: blockedWords(host, false, r) };
    }
    return {};
  } catch (err) {
    return { unresolvable: `${host} does not resolve (${(err as any).code ?? 'DNS error'})` };
  }
}
