// A per-process cache of a pure function's results, emptied when it holds `max` entries (the values it serves,
// e.g. opened secrets and imported HMAC keys, are few per subscription; the bound only stops unbounded growth).
export function memoize<K, V>(compute: (key: K) => V, max = 10_000): (key: K) => V {
  const kept = new Map<K, V>();
  return (key) => {
    let v = kept.get(key);
    if (v === undefined) {
      v = compute(key);
      if (kept.size >= max) kept.clear();
      kept.set(key, v);
    }
    return v;
  };
}
