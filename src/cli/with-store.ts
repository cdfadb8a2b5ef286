// Opening the store for one command, and announcing the changes it commits, then closing both.
import { SecretHasher } from '../auth/key-secret.js';
import type { ChangeFeed } from '../changes/change-feed.js';
import { envSetting, resolveSettings, type RedisSettings, type Settings } from '../core/settings.js';
import type { Store } from '../store/store.js';
import type { ConfigFlags, StoreFlags } from './command.js';

/**
 * Runs `work` on the store the flags (or the environment) name. With `redis` (the commands that
 * change keys or the catalogue's prices), each change it commits is published there before the command returns, so running
 * gateways see it at once; without Redis they see it on their next poll of the store (every
 * 250 ms). A PostgreSQL store notifies its listeners itself, at commit.
 */
export async function withStore<T>(flags: StoreFlags & ConfigFlags, work: (store: Store, hasher: SecretHasher, settings: Settings) => Promise<T>, redis?: RedisSettings): Promise<T> {
  const settings = resolveSettings(flags);
  const hasher = SecretHasher.forDataDir(settings.dataDir);
  const { openStore, storeLocation } = await import('../store/open-store.js');
  let changes: ChangeFeed | undefined;
  if (redis?.redisUrl !== undefined) {
    const [{ openChangeFeed }, { createLogger }] = await Promise.all([import('../changes/open-change-feed.js'), import('../core/log.js')]);
    changes = await openChangeFeed({ ...redis, logger: createLogger(envSetting('SLUICE_LOG_LEVEL') ?? 'warn') });
  }
  try {
    const store = await openStore(storeLocation(settings), changes === undefined ? {} : { onChange: (topic) => changes.publish(topic) });
    try {
      return await work(store, hasher, settings);
    } finally {
      await store.close();
    }
  } finally {
    await changes?.close();
  }
}
