import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import { StoreUnavailableError } from '../../src/store/store.js';
import { record } from '../store/store-suite.js';
import { freshDatabase, openStores, pgMissing, until } from './helpers.js';

/*
 * A connection lost as it starts (docs/storage.md §2): the network goes right after the login, at
 * the connection's first statement, and the address then refuses connections (a proxy gone, a
 * database host down). The write that wanted the connection fails with a 503; nothing else may
 * fail with nobody to hear it: in a server, an unhandled rejection ends the process.
 *
 * Found in a stress run: the idempotency test's proxy, closed before its store at the test's end,
 * cut a connection the store's new pool was starting, and the test runner reported an unhandled
 * `connect ECONNREFUSED` (postgres 3.4.9 sends a statement of its own first on every connection,
 * the array types' query, and drops its promise: porsager/postgres#1192, #1223).
 */

/**
 * A TCP proxy to `port`. Once `arm`ed (which also closes the connections it holds), the first
 * statement a new connection sends is not passed on: every connection is closed there and the proxy
 * stops listening, so connecting again is refused. `cut()` tells whether that happened.
 */
async function startCutter(port: number): Promise<{ port: number; arm(): void; cut(): boolean }> {
  const sockets: net.Socket[] = [];
  let armed = false;
  let cut = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    const fresh = armed;
    sockets.push(client, upstream);
    client.on('data', (chunk: Buffer) => {
      // The startup message begins with its length (a zero byte here); a statement with its type:
      // `Q` (a simple query) or `P` (Parse, an extended one).
      if (fresh && !cut && (chunk[0] === 0x51 || chunk[0] === 0x50)) {
        cut = true;
        server.close();
        for (const socket of sockets) socket.destroy();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => void client.write(chunk));
    for (const socket of [client, upstream]) socket.on('error', () => {}).on('close', () => [client, upstream].forEach((s) => s.destroy()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    arm() {
      armed = true;
      for (const socket of sockets) socket.destroy();
    },
    cut: () => cut,
  };
}

describe('a PostgreSQL connection lost as it starts', { skip: pgMissing }, () => {
  test('cut at its first statement, connecting again refused -> the write fails (StoreUnavailableError), no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    after(() => process.off('unhandledRejection', onUnhandled));

    const url = new URL(await freshDatabase());
    const proxy = await startCutter(Number(url.port));
    const through = new URL(url);
    through.port = String(proxy.port);
    // No poll in the test's time: the write below is what opens the new connection.
    const opened = await openStores(through.toString(), ['items'], { pollMs: 60_000 });
    const store = opened.stores.get('items')!;
    await store.create(record('a'));
    await opened.sync();

    // Connections to the proxy refused once it stopped listening, as the driver's sockets report them.
    let refused = 0;
    const connect = net.Socket.prototype.connect;
    net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
      const target = args[0];
      const port = typeof target === 'object' && target !== null ? Number((target as { port?: unknown }).port) : Number(target);
      if (port === proxy.port) this.on('error', (error: NodeJS.ErrnoException) => void (error.code === 'ECONNREFUSED' && refused++));
      return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
    } as typeof connect;
    after(() => {
      net.Socket.prototype.connect = connect;
    });
    proxy.arm();
    // A write sent before the driver saw its connection go fails with it, and the store replaces
    // its pool; a later one (or the change feed's catch-up) starts a new connection, which is cut
    // at its first statement, and the driver's connecting again is refused.
    await until(async () => {
      await assert.rejects(store.create(record('b')), StoreUnavailableError);
      return proxy.cut();
    }, 'a new connection cut at its first statement');
    assert.equal(opened.reachable, false);
    // The driver connects again (`backoff`, connection.ts) and is refused: waited for as an event,
    // however long a busy machine takes. A rejection nobody handles is reported once the turn
    // that made it has run its microtasks: a few turns later it would have been heard.
    await until(() => refused > 0, 'a connection to the proxy refused');
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(unhandled.map(String), []);
  });
});
