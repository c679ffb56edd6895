// Certificates made for a test with openssl (P-256 keys): a CA, a server certificate (for 127.0.0.1 and localhost unless told), a
// client certificate the CA signed, and a rogue client certificate signed by another CA (what a receiver requiring
// mutual TLS refuses).
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestCerts {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  rogueCert: string;
  rogueKey: string;
  /** Self-signed client certificates valid only in 2020 and only from 2099 (openssl ca's -startdate/-enddate). */
  expiredCert: string;
  expiredKey: string;
  futureCert: string;
  futureKey: string;
}

/** `serverNames`: the server certificate's subjectAltName (default: 127.0.0.1 and localhost). */
export async function makeCerts(serverNames = 'IP:127.0.0.1,DNS:localhost'): Promise<TestCerts> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bulb-certs-'));
  const f = (n: string) => path.join(dir, n);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
    for (const ca of ['ca', 'rogue-ca']) {
      await run('openssl', ['req', '-x509', ...ec, '-keyout', f(`${ca}.key`), '-out', f(`${ca}.pem`), '-days', '2', '-subj', `/CN=Bulb test ${ca}`,
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
    }
    const leaf = async (name: string, ca: string, ext: string) => {
      await run('openssl', ['req', ...ec, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${name}`]);
      await fs.writeFile(f(`${name}.ext`), ext);
      await run('openssl', ['x509', '-req', '-in', f(`${name}.csr`), '-CA', f(`${ca}.pem`), '-CAkey', f(`${ca}.key`), '-CAcreateserial',
        '-out', f(`${name}.pem`), '-days', '2', '-extfile', f(`${name}.ext`)]);
    };
    await leaf('server', 'ca', `subjectAltName=${serverNames}\nextendedKeyUsage=serverAuth\n`);
    await leaf('bulb-client', 'ca', 'extendedKeyUsage=clientAuth\n');
    await leaf('rogue-client', 'rogue-ca', 'extendedKeyUsage=clientAuth\n');
    await fs.writeFile(f('ca.cnf'), '[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\ndefault_md=sha256\npolicy=p\nserial=serial\nunique_subject=no\n[p]\ncommonName=supplied\n');
    await fs.writeFile(f('index.txt'), '');
    await fs.writeFile(f('serial'), '01\n');
    for (const [name, start, end] of [['expired', '20200101000000Z', '20200102000000Z'], ['future', '20990101000000Z', '20990102000000Z']]) {
      await run('openssl', ['req', ...ec, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${name}`]);
      await run('openssl', ['ca', '-batch', '-config', 'ca.cnf', '-selfsign', '-keyfile', f(`${name}.key`), '-in', f(`${name}.csr`), '-out', f(`${name}.pem`),
        '-startdate', start, '-enddate', end, '-notext'], { cwd: dir });
    }
    const read = (n: string) => fs.readFile(f(n), 'utf8');
    return {
      ca: await read('ca.pem'),
      serverCert: await read('server.pem'),
      serverKey: await read('server.key'),
      clientCert: await read('bulb-client.pem'),
      clientKey: await read('bulb-client.key'),
      rogueCert: await read('rogue-client.pem'),
      rogueKey: await read('rogue-client.key'),
      expiredCert: await read('expired.pem'),
      expiredKey: await read('expired.key'),
      futureCert: await read('future.pem'),
      futureKey: await read('future.key'),
    };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
