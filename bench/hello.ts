// The baseline: a Fastify hello-world server in its own process. GET / answers a small JSON object;
// POST / parses the JSON body and answers it with 201 (the same body size as a customer create).
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/*', async () => ({ hello: 'world' }));
app.post('/*', async (req, reply) => {
  reply.code(201);
  return req.body;
});
const addr = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
console.log(`hello listening on ${new URL(addr).port}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
