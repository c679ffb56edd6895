// The machine's message brokers for tests: where they answer, and whether to run (CI=true: they must; else skip
// with the reason printed). .ci/run starts RabbitMQ and NATS (JetStream) where their ports do not answer.
import net from 'node:net';
import { CI } from './db.ts';

export const AMQP = 'amqp://guest:guest@127.0.0.1:5672';
export const NATS = 'nats://127.0.0.1:4222';

/** Whether something answers on a local port. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** Both brokers up, or (outside CI) the reason to skip; with CI=true a missing broker fails the run. */
export async function brokersUp(): Promise<string | false> {
  const missing = [];
  if (!(await listening(5672))) missing.push('RabbitMQ on 127.0.0.1:5672');
  if (!(await listening(4222))) missing.push('NATS on 127.0.0.1:4222');
  if (missing.length === 0) return false;
  if (CI) throw new Error(`CI=true but ${missing.join(' and ')} is not answering (.ci/run starts them)`);
  return `no ${missing.join(', no ')}`;
}

