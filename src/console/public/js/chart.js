// Attempts and success rate per hour as inline SVG, built with DOM APIs (createElementNS, textContent; no
// markup strings, no inline styles: CSP-safe). Stacked bars: successes and failures; a line: success rate.
const NS = 'http://www.w3.org/2000/svg';

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children) if (c) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** Totals of hourly buckets [{hour, attempts, successes}]. */
export function totals(buckets) {
  const attempts = buckets.reduce((n, b) => n + b.attempts, 0);
  const successes = buckets.reduce((n, b) => n + b.successes, 0);
  return { attempts, successes, rate: attempts ? Math.round((100 * successes) / attempts) : null };
}

/** "24 h: 120 attempts, 97% successful" (also the chart's accessible name). */
export function summary(buckets, hours = buckets.length) {
  const t = totals(buckets);
  return t.attempts === 0 ? `Last ${hours} hours: no attempts` : `Last ${hours} hours: ${t.attempts} attempts, ${t.rate}% successful`;
}

const hourLabel = (iso) => `${String(new Date(iso).getHours()).padStart(2, '0')}:00`;

/**
 * An hourly chart. opts: { width, height, axis (hour labels and a 0–100% scale), label }.
 * Each bar has a <title> (hour, attempts, successes) so a pointer shows the figures.
 */
export function hourlyChart(buckets, { width = 168, height = 32, axis = false, label } = {}) {
  const padL = axis ? 34 : 0;
  const padB = axis ? 18 : 0;
  const padT = axis ? 8 : 1;
  const w = width - padL;
  const hgt = height - padB - padT;
  const max = Math.max(1, ...buckets.map((b) => b.attempts));
  const step = w / buckets.length;
  const bw = Math.max(1, step - (axis ? 3 : 1));
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', class: `chart${axis ? ' chart-large' : ''}`, 'aria-label': label ?? summary(buckets) });
  svg.append(s('title', {}, label ?? summary(buckets)));
  svg.append(s('line', { x1: padL, y1: padT + hgt + 0.5, x2: width, y2: padT + hgt + 0.5, class: 'chart-base' }));
  const points = [];
  buckets.forEach((b, i) => {
    const x = padL + i * step;
    const total = (b.attempts / max) * hgt;
    const okH = (b.successes / max) * hgt;
    const g = s('g', { class: 'chart-bar' }, s('title', {}, `${hourLabel(b.hour)}: ${b.attempts} attempts, ${b.successes} successful`));
    // A transparent column over the whole height so the hour's figures show on hover even without attempts.
    g.append(s('rect', { x, y: padT, width: step, height: hgt, class: 'chart-hit' }));
    if (b.attempts > 0) {
      g.append(s('rect', { x, y: padT + hgt - total, width: bw, height: total - okH, class: 'chart-fail' }));
      g.append(s('rect', { x, y: padT + hgt - okH, width: bw, height: okH, class: 'chart-ok' }));
      points.push(`${x + bw / 2},${padT + hgt - (b.successes / b.attempts) * hgt}`);
    }
    if (axis && i % 3 === 0) svg.append(s('text', { x: x + bw / 2, y: height - 4, class: 'chart-label', 'text-anchor': 'middle' }, hourLabel(b.hour)));
    svg.append(g);
  });
  if (axis) {
    svg.append(s('text', { x: padL - 4, y: padT + 4, class: 'chart-label', 'text-anchor': 'end' }, '100%'));
    svg.append(s('text', { x: padL - 4, y: padT + hgt, class: 'chart-label', 'text-anchor': 'end' }, '0%'));
    if (points.length > 1) svg.append(s('polyline', { points: points.join(' '), class: 'chart-rate' }));
  }
  return svg;
}
