// Minimal types for the parts of autocannon the benchmarks use (the package ships none).
declare module 'autocannon' {
  namespace autocannon {
    interface Histogram {
      average: number;
      p50: number;
      p99: number;
      total: number;
    }
    interface Result {
      requests: Histogram;
      latency: Histogram;
      non2xx: number;
      errors: number;
      timeouts: number;
    }
  }
  function autocannon(opts: Record<string, unknown>, cb: (err: Error | null, result: autocannon.Result) => void): unknown;
  export default autocannon;
}
