import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import { StoreUnavailableError } from '../../src/store/store.js';
import { record } from '../store/store-suite.js';
import { freshDatabase, openStores, pgMissing, until, untilWritten } from './helpers.js';

/*
 * A connection that dies silently (a network that drops packets, a host gone without a reset):
 * queries sent on it never answer, and postgres 3.4.9 would keep them pending for ever. Between
 * the stores and the database runs a proxy that can go silent: the connections it holds then
 * carry nothing, ever again, and those opened while it is silent carry nothing either.
 */

/** A TCP proxy to `port` that can drop every byte of the connections it holds (`silence`). */
async function silentProxy(port: number): Promise<{ port: number; silence(): void; restore(): void }> {
  const pairs: { dead: boolean; sockets: net.Socket[] }[] = [];
  let silent = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    const pair = { dead: silent, sockets: [client, upstream] };
    pairs.push(pair);
    client.on('data', (chunk) => void (pair.dead || upstream.write(chunk)));
    upstream.on('data', (chunk) => void (pair.dead || client.write(chunk)));
    for (const socket of pair.sockets) socket.on('error', () => {}).on('close', () => pair.sockets.forEach((s) => pair.dead || s.destroy()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    for (const pair of pairs) pair.sockets.forEach((s) => s.destroy());
    server.close();
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    silence() {
      silent = true;
      for (const pair of pairs) pair.dead = true;
    },
    restore() {
      silent = false;
    },
  };
}

describe('a PostgreSQL connection that never answers (docs/storage.md §2)', { skip: pgMissing }, () => {
  test('a write on it -> 503 (StoreUnavailableError) within the deadline, not never; the pool replaced: writes and the change feed go on once the network is back', async () => {
    const url = new URL(await freshDatabase());
    const proxy = await silentProxy(Number(url.port));
    const through = new URL(url);
    through.port = String(proxy.port);
    const opened = await openStores(through.toString(), ['items'], { deadlineMs: 400, pollMs: 200 });
    const direct = await openStores(url.toString(), ['items']);
    const items = opened.stores.get('items')!;
    // On a loaded machine a write may pass the short deadline before the network is cut: tried until in.
    await untilWritten(() => items.create(record('a', { n: 1 })), 'the first write');

    proxy.silence();
    // Refused with the deadline's own message: without the deadline, the write would wait forever
    // (and the test's timeout would end it).
    await assert.rejects(items.update('a', (current) => ({ ...current.record, n: 2 })), (error: unknown) => {
      assert.ok(error instanceof StoreUnavailableError, String(error));
      // Its own deadline, or the change feed's poll, whichever passed first: either replaces the
      // pool, and the other statement then ends with its connection.
      assert.match(error.message, /no answer from PostgreSQL within 400 ms|CONNECTION_DESTROYED/);
      return true;
    });
    await until(() => !opened.reachable, 'the store to count the database as away');
    assert.ok(opened.warnings.some((w) => /unreachable \(.*no answer from PostgreSQL within 400 ms\)/.test(w)), opened.warnings.join('\n'));

    proxy.restore();
    await until(() => opened.reachable, 'the database reachable again through new connections');
    await untilWritten(() => items.update('a', (current) => ({ ...current.record, n: 3 })), 'a write once the network is back');
    assert.equal(items.get('a')?.record['n'], 3);
    // Changes made elsewhere arrive again (the catch-up runs on the new pool).
    await direct.stores.get('items')!.create(record('b', { n: 1 }));
    await until(() => items.get('b') !== undefined, 'the change feed to bring b');
  });
});
