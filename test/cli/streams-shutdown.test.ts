import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startServer } from '../store/crash-harness.js';
import { tempDir } from '../store/helpers.js';

test('SIGTERM with open event streams -> each stream ends (its last chunk sent) and the process exits 0', async () => {
  const dir = await tempDir();
  const server = await startServer(dir);
  const streams = await Promise.all(
    ['/changes', '/items?status=active'].map(async (path) => {
      const res = await fetch(`${server.url}${path}`, { headers: { accept: 'text/event-stream' } });
      assert.equal(res.status, 200);
      return res.body!.getReader();
    }),
  );
  // The preamble has arrived: the streams are open.
  for (const reader of streams) assert.equal((await reader.read()).done, false);
  server.child.kill('SIGTERM');
  for (const reader of streams) {
    let done = false;
    while (!done) ({ done } = await reader.read());
  }
  assert.equal(await server.exited, 0);
});
