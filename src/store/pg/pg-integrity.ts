import type { LinkTarget, RelationGraph } from '../../conventions/relations.js';
import { DanglingLinkError, type LinkIntegrity } from '../integrity.js';
import { StoreUnavailableError } from '../store.js';
import { isUnavailable, reason, STATEMENT_DEADLINE_MS, withDeadline, type Database } from './connection.js';
import { ensureLinkLayout, linkSpecs, type LinkSpec } from './link-layout.js';
import type { PgStore } from './pg-store.js';
import { liveTargets, targetKey } from './write-statement.js';
import { holdsNul, unreadableEntity } from './nul-text.js';
import type { WriterLinks } from './link-writes.js';

/**
 * Links that never dangle across every process on one database (docs/relations.md, §8a).
 *
 * The decision is the database's, in each write's own statement (the write function,
 * link-layout.ts): a write that makes a link locks its target `FOR KEY SHARE` and writes only if
 * the target is live; a delete locks its entity `FOR UPDATE` and deletes only if no live row
 * links to it, counted in a snapshot taken after that lock. The two locks conflict, so a link and
 * a delete of its target are ordered: the later one waits for the earlier to commit and then sees
 * it (a 409 for the delete, a 400 for the link). Both errors come from the writer.
 *
 * This port adds what the HTTP layer asks before a write, as the in-process guard does: every
 * link a request names (a PUT's unchanged ones included) must point to a live entity, so a request
 * is refused with the same 400 before its `If-Match` or its 404 is looked at. A target this
 * process's index holds passes (the statement checks it again); one it lacks is looked up in the
 * database (another process may have just created it).
 */
export class PgLinkIntegrity implements LinkIntegrity {
  /** The delete's statement checks the row it deletes (404, 412) before it counts links (409). */
  readonly countsBeforeChecks = false;
  readonly #database: Database;
  readonly #stores: ReadonlyMap<string, PgStore>;
  readonly #onUnavailable: (error: unknown) => void;

  constructor(database: Database, stores: ReadonlyMap<string, PgStore>, onUnavailable: (error: unknown) => void) {
    this.#database = database;
    this.#stores = stores;
    this.#onUnavailable = onUnavailable;
  }

  async linking<T>(targets: readonly LinkTarget[], write: () => Promise<T>): Promise<T> {
    const missing = await this.#missing(targets);
    if (missing.length > 0) throw new DanglingLinkError(missing);
    return write();
  }

  async exists(resource: string, id: string): Promise<boolean> {
    return (await this.#missing([{ resource, id, path: '' }])).length === 0;
  }

  /** The targets live neither in this process's index nor in the database. */
  async #missing(targets: readonly LinkTarget[]): Promise<LinkTarget[]> {
    const unknown = targets.filter((t) => this.#stores.get(t.resource)?.get(t.id) === undefined);
    // An id holding U+0000 has no row (nul-text.ts): missing without asking, which would fail the statement.
    if (unknown.some((t) => holdsNul(t.id))) {
      const asked = unknown.filter((t) => !holdsNul(t.id));
      const absent = asked.length === 0 ? [] : await this.#missing(asked);
      return unknown.filter((t) => holdsNul(t.id) || absent.includes(t));
    }
    if (unknown.length === 0) return [];
    const sql = this.#database.sql;
    let live: Set<string>;
    try {
      live = await withDeadline(() => liveTargets(sql, unknown), STATEMENT_DEADLINE_MS, 'link check');
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      this.#onUnavailable(error);
      throw new StoreUnavailableError(`PostgreSQL unreachable: ${reason(error)}`);
    }
    return unknown.filter((t) => !live.has(targetKey(t.resource, t.id)));
  }

  /** The delete's own statement refuses it while something links to the entity (`StillLinkedError`). */
  removing<T>(_resource: string, _id: string, remove: () => Promise<T>): Promise<T> {
    return remove();
  }
}

/** What each resource's writes check: its link fields, and the fields of every resource that link to it. */
export function writerLinks(graph: RelationGraph, resource: string): WriterLinks {
  const specs = linkSpecs(graph);
  const forward = graph.get(resource)?.forward ?? [];
  // In the order of the graph's reverse links: a 409 lists them as the in-process guard does.
  const reverse = (graph.get(resource)?.reverse ?? []).map(({ source, field }): LinkSpec => specs.find((s) => s.source === source && s.field === field)!);
  return { forward, reverse };
}

/** Creates what the checks need in the database (when absent): the write function, an index per link field. */
export async function prepareLinks(database: Database, graph: RelationGraph): Promise<void> {
  const specs = linkSpecs(graph);
  if (specs.length > 0) await ensureLinkLayout(database.sql, specs);
}

/**
 * Whether `error` is PostgreSQL's refusal of a JSON text: 22P05 (`\u0000`, "unsupported Unicode
 * escape sequence") or 22P02 (a lone surrogate, "invalid input syntax for type json").
 */
export const unreadJson = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '22P05' || code === '22P02';
};

/**
 * Why the link fields' indexes cannot be built, when a body of a linking resource holds what
 * PostgreSQL's `json` cannot read (nul-text.ts): data stored before the schema made the field a
 * link, or imported so. Named from this process's copy of the rows (loaded before the build), as
 * one line with the entity, the member and what the operator can do; undefined when no such body
 * is found (the build failed for another reason).
 */
export function unreadableLinking(graph: RelationGraph, stores: ReadonlyMap<string, PgStore>): string | undefined {
  for (const { source, field } of linkSpecs(graph)) {
    const store = stores.get(source);
    const found = store === undefined ? undefined : unreadableEntity(store.values());
    if (found === undefined) continue;
    const others = found.more === 0 ? '' : ` (and ${found.more} more of ${source})`;
    return (
      `${source} ${JSON.stringify(found.id)} holds ${found.what} at ${JSON.stringify(found.path)}${others}, which PostgreSQL's json cannot read, ` +
      `so the index of the link field ${JSON.stringify(field)} cannot be built: remove it from the entity (a PUT or PATCH through a server ` +
      `whose schema of ${source} has no x-link yet), then start again`
    );
  }
  return undefined;
}
