/**
 * Answers an earlier halserve recorded in `halserve.answers` (layout.ts) under a ledger key of its
 * own making, given this version's name for them (idempotency-key.ts `currentLedgerKey`), so that
 * the retry of a write answered before an upgrade replays after it. Until 2026-12-02 a key named
 * the path as the request spelled it; until this version, the path under `--base-path`
 * (`/api/items`). Every key of a database served without a base path since 2026-12-02 is already
 * this version's, and nothing is written.
 *
 * Run at every start of a writing process (connection.ts `prepareLayout`), not once: while
 * processes are replaced one at a time, the older ones go on recording answers under their keys,
 * and each start renames those recorded so far. Answers live 24 hours, so there are few to find
 * and none a day after the upgrade; finding them reads the table once (no index holds a key's
 * target), a read of the answers of the last 24 hours, cheaper than the load of every live row
 * that follows it (loader.ts).
 */
import type { Sql } from './driver.js';
import { textArray } from './driver.js';
import { currentLedgerKey } from '../../conventions/idempotency-key.js';
import { ANSWERS_TABLE } from './layout.js';

/**
 * The keys that may be an earlier version's: those naming neither the resource's collection as a
 * POST's target nor a path below it as a PATCH's, and PATCH keys with a `/` after that (a base
 * path that begins as the resource's own path, `/items/items/<id>`). A coarse filter, on text:
 * `currentLedgerKey` decides each key it finds.
 */
export const EARLIER_KEYS_QUERY = `SELECT resource, key FROM ${ANSWERS_TABLE}
  WHERE strpos(key, '","POST","/' || resource || '","') = 0
    AND (strpos(key, '","PATCH","/' || resource || '/') = 0 OR key LIKE '%","PATCH","/' || resource || '/%/%')`;

/**
 * Moves each answer of `$2` (old keys) to `$3` (new keys) of resource `$1` (parallel arrays), in
 * one statement: one a key already holds (the same write answered under both names: the retry was
 * processed by each version) keeps its answer, and the earlier version's goes.
 */
export const RENAME_KEYS = `WITH moved AS (
    DELETE FROM ${ANSWERS_TABLE} a USING unnest($1::text[], $2::text[], $3::text[]) AS m(resource, old, new)
    WHERE a.resource = m.resource AND a.key = m.old
    RETURNING m.resource, m.new AS key, a.fingerprint, a.at, a.status, a.headers, a.body)
  INSERT INTO ${ANSWERS_TABLE} (resource, key, fingerprint, at, status, headers, body)
  SELECT resource, key, fingerprint, at, status, headers, body FROM moved
  ON CONFLICT (resource, key) DO NOTHING`;

/** Renames the answers recorded under an earlier version's keys (see above); resolves with how many. */
export async function renameEarlierKeys(sql: Sql): Promise<number> {
  const resources: string[] = [];
  const olds: string[] = [];
  const news: string[] = [];
  for (const { resource, key } of await sql.unsafe<{ resource: string; key: string }[]>(EARLIER_KEYS_QUERY)) {
    const current = currentLedgerKey(key);
    if (current === key) continue;
    resources.push(resource);
    olds.push(key);
    news.push(current);
  }
  if (olds.length === 0) return 0;
  await sql.unsafe(RENAME_KEYS, [textArray(resources), textArray(olds), textArray(news)]);
  return olds.length;
}
