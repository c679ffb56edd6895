// What route modules and workers are given: the database, configuration and shared parts.
import type { Db } from './db/db.ts';
import type { Config } from './config.ts';
import { wireNames } from './config.ts';
import { Authenticator } from './auth/service.ts';

export interface Services {
  db: Db;
  config: Config;
  names: ReturnType<typeof wireNames>;
  auth: Authenticator;
}

export function makeServices(db: Db, config: Config): Services {
  return { db, config, names: wireNames(config.serviceName), auth: new Authenticator(db, config.authCacheMs) };
}
