// Attempts and success rate per hour as inline SVG, built with DOM APIs (createElementNS, textContent; no
// markup strings, no inline styles: CSP-safe). Stacked bars: successes and failures; a line: success rate.
const NS = 'http://www.w3.org/2000/svg';

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children) if (c) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** "1 attempt", "2 attempts". */
const attemptsText = (n) => `${n} attempt${n === 1 ? '' : 's'}`;

/** Totals of hourly buckets [{hour, attempts, successes}]. */
export function totals(buckets) {
  const attempts = buckets.reduce((n, b) => n + b.attempts, 0);
  const successes = buckets.reduce((n, b) => n + b.successes, 0);
  return { attempts, successes, rate: attempts ? Math.round((100 * successes) / attempts) : null };
}

/** "24 h: 120 attempts, 97% successful" (also the chart's accessible name). */
export function summary(buckets, hours = buckets.length) {
  const t = totals(buckets);
  return t.attempts === 0 ? `Last ${hours} hours: no attempts` : `Last ${hours} hours: ${attemptsText(t.attempts)}, ${t.rate}% successful`;
}

const hourLabel = (iso) => `${String(new Date(iso).getHours()).padStart(2, '0')}:00`;

/** Hour labels every 1, 2, 3, 4, 6 or 12 hours: the fewest that leave each label 40 px. */
const labelEvery = (step) => [1, 2, 3, 4, 6, 12].find((k) => k * step >= 40) ?? 24;

/**
 * An hourly chart. opts: { width, height, axis (hour labels and a 0–100% scale), label }.
 * Each bar has a <title> (hour, attempts, successes) so a pointer shows the figures.
 * Drawn at its size in CSS pixels (no viewBox scaling), so its labels render at their font size.
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
  const every = labelEvery(step);
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', class: 'chart', 'aria-label': label ?? summary(buckets) });
  svg.append(s('title', {}, label ?? summary(buckets)));
  svg.append(s('line', { x1: padL, y1: padT + hgt + 0.5, x2: width, y2: padT + hgt + 0.5, class: 'chart-base' }));
  const points = [];
  buckets.forEach((b, i) => {
    const x = padL + i * step;
    const total = (b.attempts / max) * hgt;
    const okH = (b.successes / max) * hgt;
    const g = s('g', { class: 'chart-bar' }, s('title', {}, `${hourLabel(b.hour)}: ${attemptsText(b.attempts)}, ${b.successes} successful`));
    // A transparent column over the whole height so the hour's figures show on hover even without attempts.
    g.append(s('rect', { x, y: padT, width: step, height: hgt, class: 'chart-hit' }));
    if (b.attempts > 0) {
      g.append(s('rect', { x, y: padT + hgt - total, width: bw, height: total - okH, class: 'chart-fail' }));
      g.append(s('rect', { x, y: padT + hgt - okH, width: bw, height: okH, class: 'chart-ok' }));
      points.push(`${x + bw / 2},${padT + hgt - (b.successes / b.attempts) * hgt}`);
    }
    if (axis && i % every === 0) svg.append(s('text', { x: x + bw / 2, y: height - 4, class: 'chart-label', 'text-anchor': 'middle' }, hourLabel(b.hour)));
    svg.append(g);
  });
  if (axis) {
    svg.append(s('text', { x: padL - 4, y: padT + 4, class: 'chart-label', 'text-anchor': 'end' }, '100%'));
    svg.append(s('text', { x: padL - 4, y: padT + hgt, class: 'chart-label', 'text-anchor': 'end' }, '0%'));
    if (points.length > 1) svg.append(s('polyline', { points: points.join(' '), class: 'chart-rate' }));
  }
  return svg;
}

/**
 * Keeps box filled with draw(width): a chart as wide as the box, redrawn when the box changes width (a phone
 * turned, a window resized), until signal aborts.
 */
export function fitChart(box, draw, signal) {
  let drawn = 0;
  const observer = new ResizeObserver(() => {
    if (!box.isConnected) return observer.disconnect(); // replaced by a newer chart
    const w = Math.floor(box.clientWidth);
    if (w > 0 && w !== drawn) {
      drawn = w;
      box.replaceChildren(draw(w));
    }
  });
  observer.observe(box);
  signal?.addEventListener('abort', () => observer.disconnect(), { once: true });
}
