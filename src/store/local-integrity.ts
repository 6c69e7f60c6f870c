import type { LinkTarget, RelationGraph } from '../conventions/relations.js';
import { DanglingLinkError, StillLinkedError, type LinkIntegrity, type Referrers } from './integrity.js';
import type { Store } from './store.js';

/**
 * Links that never dangle between the stores of one process (docs/relations.md).
 *
 * Each store serialises its own writes, but a link spans two stores: a product created pointing
 * at category X while X is being deleted must not both succeed. Every write and delete that can
 * make a link dangle passes a per-target guard, keyed by `<resource>/<id>`:
 *
 * - a **linking write** waits until none of its targets is being deleted, then, in the same turn
 *   of the event loop, registers itself as *pending* on all of them at once; only then does it
 *   check that each target exists (acknowledged state), and it stays pending until its own write
 *   has been applied or has failed;
 * - a **delete** of X first marks X as *being deleted* (new linking writes now wait), then waits
 *   until no write is pending on X, then counts the links to X in the source stores' indexes (an
 *   equality query, cheap at any size); only with none does it delete, and the mark is lifted
 *   when the delete has settled. Deletes of one id take turns.
 *
 * Why no interleaving leaves a dangling link: a link to X becomes stored only through a linking
 * write pending on X. If that write registered before the delete's mark, the delete waits for it,
 * and its count (taken after) sees the link if the write succeeded: 409, X stays. If it comes after
 * the mark, it waits until the delete has settled and then finds X gone (400) or, the delete
 * having failed, present. While a write is pending on X, X cannot be deleted, so X, which it saw
 * existing, still exists when the write is applied. A write never holds a target while it waits
 * for another (it registers all at once), and a delete waits only for pending writes, which wait
 * for nothing here: no cycle, so no deadlock. A change that leaves a link field alone keeps a link
 * that is already stored, which every delete counts. Writes applied outside the HTTP layer (editing
 * the files) are not guarded.
 */
export function localLinkIntegrity(graph: RelationGraph, stores: ReadonlyMap<string, Store>): LinkIntegrity {
  /** Linking writes in flight, by target key. */
  const pending = new Map<string, number>();
  /** Deletes waiting for the pending writes of a key to end. */
  const drained = new Map<string, () => void>();
  /** Deletes in progress, by key: settles when the delete has. */
  const deleting = new Map<string, Promise<void>>();
  const key = (resource: string, id: string): string => `${resource}/${id}`;
  const storeOf = (name: string): Store => {
    const store = stores.get(name);
    if (store === undefined) throw new Error(`no store for resource ${name}`);
    return store;
  };

  const release = (k: string): void => {
    const left = (pending.get(k) ?? 1) - 1;
    if (left > 0) {
      pending.set(k, left);
      return;
    }
    pending.delete(k);
    drained.get(k)?.();
  };

  const exists = async (target: LinkTarget): Promise<boolean> => (await storeOf(target.resource).get(target.id)) !== undefined;

  /** Links to `id` held by the sources' acknowledged state, through each (source, field). */
  const referrers = async (resource: string, id: string): Promise<Referrers[]> => {
    const out: Referrers[] = [];
    for (const { source, field } of graph.get(resource)?.reverse ?? []) {
      const store = storeOf(source);
      const answer = await store.query({ filters: [{ field, path: [field], op: 'eq', values: [id] }], sort: [], search: [], offset: 0, limit: 1 });
      let count = answer.total;
      // An entity that links to itself does not keep itself alive.
      if (source === resource && count > 0) {
        const self = await store.get(id);
        const value = self?.record[field];
        if (value === id || (Array.isArray(value) && value.includes(id))) count--;
      }
      if (count > 0) out.push({ source, field, count });
    }
    return out;
  };

  return {
    async linking(targets, write) {
      const keys = [...new Set(targets.map((t) => key(t.resource, t.id)))];
      for (;;) {
        const busy = keys.find((k) => deleting.has(k));
        if (busy === undefined) break;
        await deleting.get(busy);
      }
      // No await since the loop saw none of them being deleted: registering is atomic with that.
      for (const k of keys) pending.set(k, (pending.get(k) ?? 0) + 1);
      try {
        const missing: LinkTarget[] = [];
        for (const target of targets) if (!(await exists(target))) missing.push(target);
        if (missing.length > 0) throw new DanglingLinkError(missing);
        return await write();
      } finally {
        for (const k of keys) release(k);
      }
    },

    countsBeforeChecks: true,

    exists: (resource, id) => exists({ resource, id, path: '' }),

    async removing(resource, id, remove) {
      const k = key(resource, id);
      while (deleting.has(k)) await deleting.get(k);
      let settle!: () => void;
      deleting.set(k, new Promise<void>((resolve) => (settle = resolve)));
      try {
        if (pending.has(k)) await new Promise<void>((resolve) => drained.set(k, resolve));
        drained.delete(k);
        const found = await referrers(resource, id);
        if (found.length > 0) throw new StillLinkedError(resource, id, found);
        return await remove();
      } finally {
        deleting.delete(k);
        settle();
      }
    },
  };
}
