import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { MAX_PIPELINED_AHEAD, pipelineBounded } from '../../src/http/server.js';
import { eventually } from '../helpers/process.js';

/** Starts `server` on a free port and connects a client that reads nothing until resumed. */
async function pausedClient(server: Server): Promise<Socket> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.pause();
  return socket;
}

async function closeBoth(server: Server, socket: Socket): Promise<void> {
  socket.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

test(`sixty pipelined GETs in one write, answers of 1 MiB, read only later -> at most ${MAX_PIPELINED_AHEAD} under way at once, the rest not even begun meanwhile; then all sixty answered in order`, async () => {
  let active = 0;
  let most = 0;
  let started = 0;
  const body = Buffer.alloc(1024 * 1024, 'x');
  const server = createServer(
    pipelineBounded((req: IncomingMessage, res: ServerResponse) => {
      started++;
      most = Math.max(most, ++active);
      res.once('close', () => active--);
      // Answered a moment later, as a page built from the store would be.
      setImmediate(() => {
        res.setHeader('x-path', req.url ?? '');
        res.end(body);
      });
    }),
  );
  const socket = await pausedClient(server);
  try {
    socket.write(Array.from({ length: 60 }, (_, i) => `GET /p${i} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
    // Nothing read: 60 MiB of answers cannot all fit in the sockets' buffers, so the answers not
    // yet begun wait unbuilt (without the bound, all sixty would be built at once).
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(started < 60, `${started} begun before any answer was read`);
    const received: Buffer[] = [];
    let length = 0;
    await new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        received.push(chunk);
        length += chunk.length;
        if (length >= 60 * body.length && (Buffer.concat(received).toString('latin1').match(/x-path: /g) ?? []).length === 60) resolve();
      });
      socket.resume();
    });
    const paths = [...Buffer.concat(received).toString('latin1').matchAll(/x-path: (\/p\d+)/g)].map((m) => m[1]);
    assert.deepEqual(paths, Array.from({ length: 60 }, (_, i) => `/p${i}`));
    assert.equal(started, 60);
    assert.ok(most <= MAX_PIPELINED_AHEAD, `${most} at once`);
  } finally {
    await closeBoth(server, socket);
  }
});

test('thousands of small pipelined GETs, none read -> the connection is no longer read once one waits: at most one read of requests is held, not every request sent; then all are answered in order', async () => {
  const count = 4000;
  const request = (i: number): string => `GET /p${String(i).padStart(4, '0')} HTTP/1.1\r\nHost: x\r\n\r\n`;
  let seen = 0;
  let release: (() => void) | undefined;
  const server = createServer(
    pipelineBounded((req: IncomingMessage, res: ServerResponse) => {
      res.setHeader('x-path', req.url ?? '');
      // The first answer waits for the test: every later one queues behind it, as behind a client that reads nothing.
      if (req.url === '/p0000') release = () => res.end('ok');
      else res.end('ok');
    }),
  );
  server.on('request', () => seen++);
  let serverSocket: Socket | undefined;
  server.on('connection', (socket: Socket) => (serverSocket = socket));
  const socket = await pausedClient(server);
  try {
    // Small answers: the eight under way hold far less than the socket's high-water mark, so Node's
    // own pause (on answers queued) never comes; without the pipeline's, every request is parsed.
    socket.write(Array.from({ length: count }, (_, i) => request(i)).join(''));
    await eventually(() => serverSocket?.isPaused() === true || seen === count, 'the connection to stop being read, or every request to be parsed');
    // One read of the socket (64 KiB) is parsed whole once the parse has begun.
    const oneRead = Math.ceil((64 * 1024) / request(0).length);
    assert.ok(seen <= MAX_PIPELINED_AHEAD + oneRead, `${seen} of ${count} requests parsed while one answer was held`);
    release!();
    let received = '';
    await new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        if ((received.match(/\r\n\r\nok/g) ?? []).length === count) resolve();
      });
      socket.resume();
    });
    const paths = [...received.matchAll(/x-path: \/p(\d+)/g)].map((m) => Number(m[1]));
    assert.deepEqual(paths, Array.from({ length: count }, (_, i) => i));
    assert.equal(seen, count);
  } finally {
    await closeBoth(server, socket);
  }
});
