// The process's secret box, installed once at start (src/secrets/startup.ts) like the configuration it
// comes from; store files seal on write and open on read through these two functions.
import type { SecretBox } from './box.ts';

let box: SecretBox | undefined;

export function installSecretBox(b: SecretBox): void {
  box = b;
}

export function activeBox(): SecretBox {
  if (!box) throw new Error('no secret box installed: call prepareSecrets() at start');
  return box;
}

/** Seals a secret for storage (null stays null). */
export function sealSecret<T extends string | null>(clear: T): T {
  return (clear === null ? null : activeBox().seal(clear)) as T;
}

/** Opens a stored secret (null stays null; clear text from an older Bulb passes through). */
export function openSecret<T extends string | null>(stored: T): T {
  return (stored === null ? null : activeBox().open(stored)) as T;
}
