// At start: choose the secret box, refuse to start if stored values are sealed under a key this process
// does not have, seal clear text left by an older Bulb (once, under an advisory lock), install the box.
// `npm run reencrypt` moves every value to the current key after a key rotation.
import fs from 'node:fs';
import type { Db, Queryable } from '../db/db.ts';
import { ConfigError, wireNames, type Config } from '../config.ts';
import { installSecretBox } from './active.ts';
import type { SecretBox } from './box.ts';
import { resolveSecretBox, type ResolvedBox } from './keys.ts';
import * as store from './store.ts';
import { auditSubscriptionsDisabled } from '../audit/store.ts';
import { notifySubscriptionsChanged } from '../webhooks/store.ts';
import { emitOperational } from '../webhooks/health-store.ts';
import { NO_MORE_RETRIES } from '../webhooks/schedule.ts';

const LOCK_KEY = 0x62756c63; // one process at a time rewrites secret columns
const BATCH = 500;

export interface PreparedSecrets {
  box: SecretBox;
  notice: string;
  /** The notice is a warning (ResolvedBox's). */
  warning: boolean;
  /** Clear-text values sealed by this start. */
  sealed: number;
}

/** `resolved` defaults to resolveSecretBox(config); main resolves it before opening the database (fail fast). */
export async function prepareSecrets(db: Db, config: Config, resolved: ResolvedBox = resolveSecretBox(config)): Promise<PreparedSecrets> {
  const { box, notice, warning } = resolved;
  let deactivated: { ids: string[]; keyIds: string[] } = { ids: [], keyIds: [] };
  const sealed = await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    const notOpened = (await store.keyIdsInUse(tx)).filter((k) => !box.keyIds.includes(k));
    const lost = notOpened.filter((k) => config.secretKeysLost.includes(k));
    const unknown = notOpened.filter((k) => !lost.includes(k));
    if (unknown.length) {
      // A key file this start made for a database whose secrets were sealed under another: the folder's own key file
      // is missing (a partial copy or restore). The new file goes again (left, it would read as the folder's key).
      if (resolved.createdKeyFile) {
        fs.rmSync(resolved.createdKeyFile, { force: true });
        throw new ConfigError(
          `stored secrets are sealed under key id ${unknown.join(', ')}, but ${resolved.createdKeyFile} was missing (this start made a new key, removed again): ` +
            'restore that file from the backup of the data folder, or set BULB_SECRET_KEY to the key it held',
        );
      }
      throw new ConfigError(
        `stored secrets are sealed under key id ${unknown.join(', ')}, which ${box.plaintext ? 'needs BULB_SECRET_KEY' : 'is neither BULB_SECRET_KEY nor BULB_SECRET_KEY_PREVIOUS'}: ` +
          'start with the key they were sealed under (as BULB_SECRET_KEY, or as BULB_SECRET_KEY_PREVIOUS beside a new key, then npm run reencrypt); ' +
          `if that key is lost for good, BULB_SECRET_KEYS_LOST=${unknown.join(',')} starts without it (docs/security.md: the subscriptions holding such values are deactivated until given them anew)`,
      );
    }
    if (lost.length) {
      deactivated = await store.deactivateHolders(tx, lost, lostKeyReason);
      const { ids } = deactivated;
      if (ids.length) {
        await auditSubscriptionsDisabled(tx, ids);
        await notifySubscriptionsChanged(tx, ids);
        // Announced as every subscription Bulb disables is (docs/delivery.md), to the others listening.
        await emitOperational(tx, [], ids, wireNames(config.serviceName).sourceApi, NO_MORE_RETRIES);
      }
    }
    if (box.plaintext) return 0;
    return rewrite(tx, box, null);
  });
  installSecretBox(box);
  // The notice names the lost keys their values are sealed under, not every id the setting declares (some may seal
  // nothing any more, or only values of subscriptions inactive already).
  if (deactivated.ids.length) {
    const { ids, keyIds } = deactivated;
    return { box, notice: `${notice}; ${ids.length} subscription(s) deactivated: they hold values sealed under key id ${keyIds.join(', ')}, declared lost (BULB_SECRET_KEYS_LOST)`, warning: true, sealed };
  }
  return { box, notice, warning, sealed };
}

/**
 * What a subscription deactivated for a lost key says (its health's disabledReason): its own fields and the lost key
 * ids its own values are sealed under, and what heals it.
 */
const lostKeyReason = (fields: string[], keyIds: string[]) =>
  `${fields.join(', ')} of this subscription: sealed under key id ${keyIds.join(', ')}, declared lost (BULB_SECRET_KEYS_LOST): ` +
  'give each credential named again (PATCH), rotate the signing secret if named (POST …/rotateSecret; give the receiver the new one), then re-activate it';

/** Seals every value not yet under the current key. Returns how many values changed. */
export async function reencryptAll(db: Db, box: SecretBox): Promise<number> {
  if (box.plaintext || !box.currentKeyId) throw new ConfigError('reencrypt needs BULB_SECRET_KEY (the new key) and BULB_SECRET_KEY_PREVIOUS (the old one)');
  let total = 0;
  for (;;) {
    const n = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
      return rewrite(tx, box, box.currentKeyId!, BATCH);
    });
    total += n;
    if (n === 0) return total;
  }
}

/** keyId null: seal clear text only; else also re-seal values under other keys. At most `limit` per column. */
async function rewrite(tx: Queryable, box: SecretBox, keyId: string | null, limit = Infinity): Promise<number> {
  let n = 0;
  for (const { table, columns } of store.SECRET_COLUMNS) {
    for (const column of columns) {
      let after = '0';
      for (let done = 0; done < limit; ) {
        const rows = await store.valuesToSeal(tx, table, column, keyId, box.keyIds, after, Math.min(BATCH, limit - done));
        for (const r of rows) {
          if (await store.replaceValue(tx, table, column, r.id, r.value, box.seal(box.open(r.value)))) n++;
        }
        done += rows.length;
        if (rows.length === 0) break;
        after = rows[rows.length - 1].id;
      }
    }
  }
  return n;
}
