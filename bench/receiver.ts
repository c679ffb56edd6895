// A webhook receiver for the benchmarks, in its own process: answers 200 to every POST and counts them
// (GET answers the count).
import http from 'node:http';

let received = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received }));
    return;
  }
  req.resume();
  req.on('end', () => {
    received++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.keepAliveTimeout = 30_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`receiver listening on ${(server.address() as import('node:net').AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  console.log(`received ${received}`);
  process.exit(0);
});
