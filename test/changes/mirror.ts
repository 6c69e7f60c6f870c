import assert from 'node:assert/strict';

/*
 * A client of the change feed as the contract describes it: it applies every event it receives, in
 * order, to its copy, remembers the last id, and resumes from it. The convergence tests compare its
 * copy with a full listing.
 */

export interface FeedEvent {
  readonly id: string;
  readonly type: string;
  readonly resource: string;
  readonly entityId: string;
  readonly entity: Record<string, unknown> | undefined;
}

/** What a client following `/changes` holds. */
export class Mirror {
  readonly entities = new Map<string, Record<string, unknown>>();
  readonly seen = new Set<string>();
  /** Ids delivered twice: kept, since `follow` ends quietly on any error of its stream. */
  readonly repeated: string[] = [];
  lastId: string | undefined;

  /** Applies one event; a repeated id is a failure of the feed. */
  apply(event: FeedEvent): void {
    if (this.seen.has(event.id)) this.repeated.push(event.id);
    assert.ok(!this.seen.has(event.id), `event id ${event.id} delivered twice`);
    this.seen.add(event.id);
    this.lastId = event.id;
    const key = `${event.resource}/${event.entityId}`;
    if (event.type === 'deleted' || event.type === 'removed') this.entities.delete(key);
    else {
      // The representation's links are the server's; the state is the rest.
      const { _links: _ignored, ...state } = event.entity ?? {};
      this.entities.set(key, state);
    }
  }
}

/** The server's state as a full listing gives it (of the entities `filters`, `&…`, select), keyed like a mirror. */
export async function listing(url: string, names: readonly string[], headers: Record<string, string> = {}, filters = ''): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const name of names) {
    for (let next: string | undefined = `/${name}?limit=200${filters}`; next !== undefined; ) {
      const res = await fetch(`${url}${next}`, { headers });
      assert.equal(res.status, 200);
      const page = (await res.json()) as { _embedded: Record<string, Record<string, unknown>[]>; _links: { next?: { href: string } } };
      for (const entity of page._embedded[name] ?? []) {
        const { _links: _ignored, ...state } = entity;
        out.set(`${name}/${String(entity['id'])}`, state);
      }
      next = page._links.next?.href;
    }
  }
  return out;
}

/**
 * Reads a stream of `/changes` (or of `path`, a collection URL) from `lastId` (none: from `origin`,
 * the store's cursor before every change; for a collection, from now) into `mirror` until `stop()`
 * says so or the server goes away.
 */
export async function follow(url: string, mirror: Mirror, stop: () => boolean, headers: Record<string, string> = {}, path?: string, origin = '0'): Promise<void> {
  const controller = new AbortController();
  let res: Response;
  try {
    res = await fetch(`${url}${path ?? `/changes${mirror.lastId === undefined ? `?since=${origin}` : ''}`}`, {
      headers: { accept: 'text/event-stream', ...headers, ...(mirror.lastId === undefined ? {} : { 'last-event-id': mirror.lastId }) },
      signal: controller.signal,
    });
  } catch {
    return; // the server is down: the caller reconnects later
  }
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const watchdog = setInterval(() => {
    if (stop()) controller.abort();
  }, 5);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += decoder.decode(value, { stream: true });
      for (let end; (end = text.indexOf('\n\n')) >= 0; text = text.slice(end + 2)) {
        const block = text.slice(0, end);
        if (!block.startsWith('id: ')) continue;
        const lines = block.split('\n');
        const field = (name: string): string => lines.find((l) => l.startsWith(`${name}: `))!.slice(name.length + 2);
        const data = JSON.parse(field('data')) as { cursor: string; type: string; resource: string; id: string; entity?: Record<string, unknown> };
        assert.equal(data.cursor, field('id'));
        mirror.apply({ id: field('id'), type: field('event'), resource: data.resource, entityId: data.id, entity: data.entity });
      }
    }
  } catch {
    // Aborted, or the connection died (a killed server): the mirror keeps what it applied.
  } finally {
    clearInterval(watchdog);
  }
}
