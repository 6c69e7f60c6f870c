/**
 * A writer for the backup tests: writes in a known order, one at a time, so that the state after
 * the first k writes is known for every k, and a copy can be checked to be exactly one of them.
 */
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';

const JSON_HEADERS = { 'content-type': 'application/json' };

/** The entities a data directory's log holds: the last line per id, deletes left out, stamps dropped. */
export function liveEntities(text: string): Map<string, Record<string, unknown>> {
  const live = new Map<string, Record<string, unknown>>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const { _change: _, ...record } = JSON.parse(line) as Record<string, unknown>;
    if (record['_deleted'] === true) live.delete(record['id'] as string);
    else live.set(record['id'] as string, record);
  }
  return live;
}

/** The largest change number the lines of `text` carry. */
export const maxStamp = (text: string): number =>
  Math.max(0, ...text.split('\n').filter((l) => l !== '').map((l) => Number(/"_change":"(\d+)\./.exec(l)?.[1] ?? 0)));

/**
 * One write of the writer: the n-th (from 1), in order, each sent once the one before was
 * acknowledged. Every 10th updates the counter of `orders`; every 10th plus 5 deletes the entity
 * the 4th before it created; the others create an entity `{n}` in `orders` or `items` in turn.
 */
export type Op = { n: number; kind: 'create'; resource: string } | { n: number; kind: 'count' } | { n: number; kind: 'delete'; of: number };

export const opOf = (n: number): Op => (n % 10 === 0 ? { n, kind: 'count' } : n % 10 === 5 ? { n, kind: 'delete', of: n - 4 } : { n, kind: 'create', resource: n % 2 === 0 ? 'orders' : 'items' });

/** The state after the first `k` writes: per resource, the `n` of every live entity, and the counter. */
export function stateAfter(k: number): { orders: number[]; items: number[]; counter: number } {
  const live = new Map<number, string>();
  let counter = 0;
  for (let n = 1; n <= k; n++) {
    const op = opOf(n);
    if (op.kind === 'create') live.set(n, op.resource);
    else if (op.kind === 'count') counter = n;
    else live.delete(op.of);
  }
  const of = (resource: string): number[] => [...live].filter(([, r]) => r === resource).map(([n]) => n);
  return { orders: of('orders'), items: of('items'), counter };
}

/**
 * The write a copy ends with: the largest `n` its entities show, or the write after it when that
 * one is a delete and the copy already lacks what it deleted (a delete leaves no `n` behind, so a
 * copy taken right after one shows the `n` of the write before it).
 */
export function lastWriteIn(copied: { orders: number[]; items: number[]; counter: number }): number {
  const shown = Math.max(copied.counter, ...copied.orders, ...copied.items);
  const next = opOf(shown + 1);
  return next.kind === 'delete' && isDeepStrictEqual(copied, stateAfter(shown + 1)) ? shown + 1 : shown;
}

/** The same state read from a copy's files. */
export function stateOfFiles(orders: string, items: string): { orders: number[]; items: number[]; counter: number } {
  const o = liveEntities(orders);
  const counter = (o.get('counter')?.['n'] as number | undefined) ?? 0;
  o.delete('counter');
  const ns = (m: Map<string, Record<string, unknown>>): number[] => [...m.values()].map((e) => e['n'] as number);
  return { orders: ns(o), items: ns(liveEntities(items)), counter };
}

/** Writes as fast as acknowledgements come, until stopped; counts what was sent and acknowledged. */
export function startWriter(url: string): { sent: () => number; acked: () => number; stop: () => Promise<void>; ids: ReadonlyMap<number, { resource: string; id: string }> } {
  const ids = new Map<number, { resource: string; id: string }>();
  let sent = 0;
  let acked = 0;
  let stopping = false;
  const run = (async () => {
    while (!stopping) {
      const n = sent + 1;
      const op = opOf(n);
      sent = n;
      let response: Response;
      if (op.kind === 'create') {
        response = await fetch(`${url}/${op.resource}`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n }) });
        const { id } = (await response.json()) as { id: string };
        ids.set(n, { resource: op.resource, id });
      } else if (op.kind === 'count') {
        response = await fetch(`${url}/orders/counter`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ n }) });
        await response.arrayBuffer();
      } else {
        const target = ids.get(op.of)!;
        response = await fetch(`${url}/${target.resource}/${target.id}`, { method: 'DELETE' });
        await response.arrayBuffer();
      }
      assert.ok(response.ok, `write ${n}: ${response.status}`);
      acked = n;
    }
  })();
  return { sent: () => sent, acked: () => acked, ids, stop: async () => { stopping = true; await run; } };
}


/** The entities (`resource/id`) that the writer's acknowledged writes after write `k` touched: what a feed from the copy's cursor must bring. */
export function touchedAfter(k: number, writer: { acked: () => number; ids: ReadonlyMap<number, { resource: string; id: string }> }): Set<string> {
  const touched = new Set<string>();
  for (let n = k + 1; n <= writer.acked(); n++) {
    const op = opOf(n);
    if (op.kind === 'count') touched.add('orders/counter');
    else {
      const written = writer.ids.get(op.kind === 'create' ? n : op.of)!;
      touched.add(`${written.resource}/${written.id}`);
    }
  }
  return touched;
}

/**
 * Every entity of a collection, page after page (200 a page): a writer that got far before a
 * backup ended (a busy machine) leaves a copy of more than one page.
 */
export async function listAll(collection: string, resource: string): Promise<{ id: string; n: number }[]> {
  const all: { id: string; n: number }[] = [];
  for (let page = 1; ; page++) {
    const body = (await (await fetch(`${collection}?page=${page}&limit=200`)).json()) as { pages: number; _embedded: { [k: string]: { id: string; n: number }[] } };
    all.push(...body._embedded[resource]!);
    if (page >= body.pages) return all;
  }
}
