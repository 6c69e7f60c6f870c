import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import type { HandlerOptions } from '../../src/http/app.js';
import { createHalServer } from '../../src/http/server.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { Validator } from '../../src/conventions/schema.js';
import type { EntityRecord, LocalStore } from '../../src/store/store.js';

/** A fetch Response whose JSON the tests inspect freely (assertions check its shape). */
export interface TestResponse extends Response {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test bodies are asserted, not trusted
  json(): Promise<any>;
}

export interface TestServer {
  readonly url: string;
  readonly server: Server;
  /** `fetch` relative to the server. */
  request(path: string, init?: RequestInit): Promise<TestResponse>;
  close(): Promise<void>;
}

/** Starts `createHalServer(options)` on a free loopback port; it is closed after the test file. */
export async function startServer(options: HandlerOptions): Promise<TestServer> {
  const server = createHalServer(options);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const close = (): Promise<void> =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  after(close);
  return { url, server, request: (path, init) => fetch(`${url}${path}`, init) as Promise<TestResponse>, close };
}

/** `count` records of a resource, created one second apart, with ids e000, e001, … */
export function records(count: number, fields: (i: number) => Record<string, unknown> = (i) => ({ n: i })): EntityRecord[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `e${String(i).padStart(3, '0')}`,
    createdAt: 1_700_000_000 + i,
    updatedAt: 1_700_000_000 + i,
    ...fields(i),
  }));
}

/** A server over one memory-stored resource named `items`. */
export async function startItems(
  initial: EntityRecord[] = [],
  { validate, ...extra }: Partial<HandlerOptions> & { validate?: Validator } = {},
): Promise<TestServer & { store: LocalStore }> {
  const store = createMemoryStore(initial);
  const server = await startServer({ resources: [validate ? { name: 'items', store, validate } : { name: 'items', store }], ...extra });
  return { ...server, store };
}

/** The seed's problem type (docs/conventions.md §7). */
export const RFC2616 = 'http://www.w3.org/Protocols/rfc2616/rfc2616-sec10.html';
