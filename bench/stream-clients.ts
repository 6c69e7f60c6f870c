/**
 * The stream clients of `bench/streams.ts`, in a process of their own (forked, IPC): the server's
 * cost per stream is measured without clients in its process. Opens streams of `/changes`, counts
 * each event id over all of them, and tells the parent when an id has reached every open stream.
 *
 * Messages from the parent: `{ type: 'open', url, count }` → `{ type: 'opened', count }` once every
 * stream has its response head; `{ type: 'close' }` → `{ type: 'closed' }`. To the parent, unasked:
 * `{ type: 'all', id }` when event `id` has arrived on every open stream.
 */
import http from 'node:http';

interface Open {
  readonly type: 'open';
  readonly url: string;
  readonly count: number;
}
type Message = Open | { readonly type: 'close' };

const send = (message: unknown): void => void process.send?.(message);
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const requests: http.ClientRequest[] = [];
/** Arrivals per event id, until it has reached every stream. */
const arrivals = new Map<string, number>();
/** At most this many connections being opened at once (the server's accept queue is finite). */
const OPENING = 200;

function onEvent(id: string): void {
  const n = (arrivals.get(id) ?? 0) + 1;
  if (n >= requests.length) {
    arrivals.delete(id);
    send({ type: 'all', id });
  } else arrivals.set(id, n);
}

function openOne(url: URL): Promise<void> {
  return new Promise((resolve, reject) => {
    let headed = false;
    const req = http.get({ host: url.hostname, port: url.port, path: '/changes', agent, headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`stream answered ${res.statusCode}`));
        return;
      }
      let text = '';
      res.setEncoding('latin1');
      res.on('data', (chunk: string) => {
        text += chunk;
        for (let end; (end = text.indexOf('\n\n')) >= 0; text = text.slice(end + 2)) {
          if (text.startsWith('id: ')) onEvent(text.slice(4, text.indexOf('\n')));
        }
      });
      res.on('error', () => {});
      headed = true;
      resolve();
    });
    // Once streaming, an error is the end of the run (the parent closes everything).
    req.on('error', (error) => {
      if (!headed) reject(error);
    });
    requests.push(req);
  });
}

process.on('message', (message: Message) => {
  void (async () => {
    if (message.type === 'open') {
      const url = new URL(message.url);
      for (let opened = 0; opened < message.count; ) {
        const batch = Math.min(OPENING, message.count - opened);
        await Promise.all(Array.from({ length: batch }, () => openOne(url)));
        opened += batch;
      }
      send({ type: 'opened', count: requests.length });
    } else {
      for (const req of requests.splice(0)) req.destroy();
      arrivals.clear();
      send({ type: 'closed' });
    }
  })().catch((error: unknown) => {
    process.stderr.write(`stream clients: ${(error as Error).message}\n`);
    process.exit(1);
  });
});
