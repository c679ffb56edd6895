// Which secret box a process uses (SPEC §15): BULB_SECRET_KEY (+ _PREVIOUS); else, on the embedded default,
// a key file created in BULB_DATA_DIR (mode 0600) or an in-memory key for memory://; else (PostgreSQL)
// a refusal to start unless BULB_ALLOW_PLAINTEXT_SECRETS=true.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, type Config } from '../config.ts';
import { AesGcmBox, KEY_BYTES, PlaintextBox, type SecretBox } from './box.ts';

export const KEY_FILE = 'secret.key';

export interface ResolvedBox {
  box: SecretBox;
  /** One line for the start-up message: where the key comes from. */
  notice: string;
  /** The notice is a warning (secrets in clear, a key file others can read): logged at warn. */
  warning: boolean;
  /** The key file this start created (the embedded default), removed again if the database refuses its key. */
  createdKeyFile?: string;
}

export function resolveSecretBox(config: Config): ResolvedBox {
  const previous = config.secretKeyPrevious ? [config.secretKeyPrevious] : [];
  if (config.secretKey) {
    const box = new AesGcmBox(config.secretKey, previous);
    return { box, warning: false, notice: `secrets sealed under BULB_SECRET_KEY (key id ${box.currentKeyId})${previous.length ? ', BULB_SECRET_KEY_PREVIOUS still opens older values' : ''}` };
  }
  if (config.secretKeyPrevious) throw new ConfigError('BULB_SECRET_KEY_PREVIOUS is set without BULB_SECRET_KEY: set the new key too');
  if (config.databaseUrl) {
    if (config.allowPlaintextSecrets) return { box: new PlaintextBox(), warning: true, notice: 'WARNING: secrets stored in clear (BULB_ALLOW_PLAINTEXT_SECRETS=true, no BULB_SECRET_KEY)' };
    throw new ConfigError(
      'DATABASE_URL is set but BULB_SECRET_KEY is not: webhook signing secrets and credentials would be stored in clear. ' +
        'Set BULB_SECRET_KEY to the base64 of 32 random bytes (openssl rand -base64 32), the same in every process, ' +
        'or set BULB_ALLOW_PLAINTEXT_SECRETS=true to accept secrets in clear',
    );
  }
  if (config.dataDir.startsWith('memory://')) {
    return { box: new AesGcmBox(crypto.randomBytes(KEY_BYTES)), warning: false, notice: 'secrets sealed under an in-memory key (memory:// database: both vanish at exit)' };
  }
  const file = path.join(config.dataDir, KEY_FILE);
  const existed = fs.existsSync(file);
  const key = readOrCreateKeyFile(file);
  const mode = fs.statSync(file).mode & 0o777;
  const loose = mode & 0o077 ? `; WARNING: ${file} is readable by other users (mode 0${mode.toString(8)}): chmod 600 it` : '';
  return { box: new AesGcmBox(key), warning: loose !== '', notice: `secrets sealed under the key in ${file} (set BULB_SECRET_KEY to keep the key elsewhere)${loose}`, createdKeyFile: existed ? undefined : file };
}

/** Reads the key file, or creates it (0600) atomically: two processes starting at once agree on one key. */
export function readOrCreateKeyFile(file: string): Buffer {
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
    fs.writeFileSync(tmp, crypto.randomBytes(KEY_BYTES).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    try {
      fs.linkSync(tmp, file); // fails if another process created it first: then theirs wins
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.unlinkSync(tmp);
    }
  }
  const raw = fs.readFileSync(file, 'utf8').trim();
  const key = Buffer.from(raw, 'base64');
  if (key.length !== KEY_BYTES) throw new ConfigError(`${file} does not hold the base64 of ${KEY_BYTES} bytes: restore it from a backup or set BULB_SECRET_KEY`);
  return key;
}
