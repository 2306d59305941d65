import { resolve } from 'node:path';

/**
 * The folder where `npm start` keeps its local servers' data and dev-keys.json, read by both the launcher
 * (infra/services/dev.ts) and the CLI (clients/cli/config.ts), so they agree: TROUPE_DATA_DIR, else `.data`, and
 * a relative path is taken from the checkout, not from the shell's folder. `npm start` runs at the checkout's
 * root wherever it is typed, while `npx troupe` runs where it is typed: taken from each one's own folder, the
 * same relative value named two places.
 */
export function devDataDir(checkout: string, value: string | undefined = process.env.TROUPE_DATA_DIR): string {
  return resolve(checkout, value || '.data');
}
