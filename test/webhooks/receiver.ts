import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import { Webhook } from 'standardwebhooks';

/** A test secret in Standard Webhooks' own form: `whsec_` and base64 of 32 bytes. */
export const SECRET = `whsec_${Buffer.from('halserve-webhook-test-key-32-byte').toString('base64')}`;

/** One delivery as the receiver got it, verified. */
export interface Received {
  readonly id: string;
  readonly timestamp: number;
  /** The event, parsed. */
  readonly event: { cursor: string; type: string; resource: string; id: string; at: number; entity?: Record<string, unknown> };
  /** The status the receiver answered (or 0: it never answered). */
  readonly status: number;
}

/** What the receiver does with a request: answer a status, or `hang` (never answer). */
export type Behaviour = (request: { id: string; attempt: number; url: string }) => number | 'hang';

/**
 * A local webhook receiver (node:http on port 0) that verifies every delivery with the official
 * `standardwebhooks` package, an implementation independent of halserve's, and records it. A
 * delivery that fails verification is recorded in `invalid` and answered 400.
 */
export interface Receiver {
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Every verified request, in arrival order (also those answered with a failure). */
  readonly received: Received[];
  /** Messages of requests that failed verification. */
  readonly invalid: string[];
  /** The cursors acknowledged with a 2xx, in order. */
  acknowledged(): string[];
  behave(behaviour: Behaviour): void;
  close(): Promise<void>;
}

export async function startReceiver(options: { secret?: string; raw?: boolean; port?: number; behaviour?: Behaviour } = {}): Promise<Receiver> {
  const verifier = options.raw ? new Webhook(options.secret ?? SECRET, { format: 'raw' }) : new Webhook(options.secret ?? SECRET);
  let behaviour: Behaviour = options.behaviour ?? (() => 204);
  const received: Received[] = [];
  const invalid: string[] = [];
  const attempts = new Map<string, number>();
  const hung = new Set<ServerResponse>();
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let event: Received['event'];
      try {
        event = verifier.verify(body, req.headers as Record<string, string>) as Received['event'];
        if (req.method !== 'POST' || req.headers['content-type'] !== 'application/json') throw new Error(`${req.method} ${req.headers['content-type']}`);
      } catch (error) {
        invalid.push((error as Error).message);
        res.writeHead(400).end();
        return;
      }
      const id = String(req.headers['webhook-id']);
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      const answer = behaviour({ id, attempt, url: req.url ?? '' });
      received.push({ id, timestamp: Number(req.headers['webhook-timestamp']), event, status: answer === 'hang' ? 0 : answer });
      if (answer === 'hang') {
        hung.add(res);
        res.on('close', () => hung.delete(res));
        return;
      }
      res.writeHead(answer).end();
    });
  };
  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const close = (): Promise<void> =>
    new Promise((resolve) => {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  after(close);
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    server,
    received,
    invalid,
    acknowledged: () => received.filter((r) => r.status >= 200 && r.status < 300).map((r) => r.id),
    behave: (next) => (behaviour = next),
    close,
  };
}

/** A port nothing listens on (taken from the system, then let go). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Every event of the feed at `base` (`GET /changes`, page by page from the start): the cursors in order. */
export async function feedCursors(base: string, headers: Record<string, string> = {}): Promise<string[]> {
  const cursors: string[] = [];
  let href = '/changes?limit=200';
  for (;;) {
    const res = await fetch(`${base}${href}`, { headers });
    const page = (await res.json()) as { count: number; _links: { next: { href: string } }; _embedded: { changes: { cursor: string }[] } };
    cursors.push(...page._embedded.changes.map((c) => c.cursor));
    if (page.count === 0) return cursors;
    href = page._links.next.href;
  }
}
