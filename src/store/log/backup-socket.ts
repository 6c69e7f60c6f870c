/**
 * The server's side of `halserve backup` (docs/storage.md §4): a Unix socket in the data directory,
 * `_backup.sock`, answering each request with a snapshot of every resource (`DataDir.snapshotAfterPending`),
 * cut at its cursor (log-prefix.ts) and streamed (backup-protocol.ts). The socket is the owner's
 * alone (mode 0600): whoever may connect could read the files anyway. Only the server that holds
 * the directory's lock listens there, so a socket file left by a killed server is removed first.
 */
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { BACKUP_SOCKET, BACKUP_REQUEST, socketAddress, type BackupHeader } from './backup-protocol.js';
import type { DataSnapshot } from './data-dir.js';
import { prefixThrough } from './log-prefix.js';

/** Bytes read from a log and written to the socket at a time. */
const CHUNK_BYTES = 1024 * 1024;
/** A client that has not sent its request line by then is dropped. */
const REQUEST_TIMEOUT_MS = 10_000;

export interface BackupService {
  /** Stops listening, ends the backups under way and removes the socket file. */
  close(): Promise<void>;
}

/**
 * Listens on `<dir>/_backup.sock`. Resolves undefined, after a warning, when it cannot (a path too
 * long for a socket, a file system without sockets): the server runs on, without backups.
 */
export async function serveBackups(dir: string, snapshot: () => Promise<DataSnapshot>, warn: (message: string) => void): Promise<BackupService | undefined> {
  const file = path.join(dir, BACKUP_SOCKET);
  const address = socketAddress(dir, process.cwd());
  if (address === undefined) {
    warn(`${file}: the path is too long for a Unix socket; halserve backup cannot reach this server`);
    return undefined;
  }
  const connections = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
    answer(socket, snapshot, warn);
  });
  try {
    await fs.rm(file, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(address, () => {
        server.off('error', reject);
        resolve();
      });
    });
    await fs.chmod(file, 0o600);
  } catch (error) {
    server.close();
    warn(`${file}: cannot listen for backups (${(error as Error).message}); halserve backup cannot reach this server`);
    return undefined;
  }
  server.on('error', (error) => warn(`${file}: ${error.message}`));
  return {
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of connections) socket.destroy();
      await closed;
      await fs.rm(file, { force: true }).catch(() => {});
    },
  };
}

/** Reads the request line, then sends the snapshot or a refusal. */
function answer(socket: net.Socket, snapshot: () => Promise<DataSnapshot>, warn: (message: string) => void): void {
  let received = '';
  socket.setTimeout(REQUEST_TIMEOUT_MS, () => socket.destroy());
  socket.setEncoding('latin1');
  const onData = (chunk: string): void => {
    received += chunk;
    const newline = received.indexOf('\n');
    if (newline < 0 && received.length < BACKUP_REQUEST.length) return;
    socket.off('data', onData);
    socket.setTimeout(0);
    if (received.slice(0, newline + 1) !== BACKUP_REQUEST) {
      socket.end(`${JSON.stringify({ error: 'not a request this server knows (an older or newer halserve?)' })}\n`);
      return;
    }
    snapshot().then((snap) => send(socket, snap)).catch((error: unknown) => {
      warn(`backup: ${(error as Error).message}`);
      socket.destroy();
    });
  };
  socket.on('data', onData);
  socket.on('error', () => {});
}

/** The header, then every log's bytes through the snapshot's cursor; the snapshot is released at the end. */
async function send(socket: net.Socket, snap: DataSnapshot): Promise<void> {
  try {
    const ends = await Promise.all(snap.resources.map((r) => (r.view === undefined ? 0 : prefixThrough(r.view.read, r.view.size, snap.seq))));
    const header: BackupHeader = {
      cursor: snap.cursor,
      forgotten: snap.forgotten,
      heldMs: snap.heldMs,
      resources: snap.resources.map((r, i) => ({ name: r.name, bytes: ends[i]! })),
    };
    await write(socket, Buffer.from(`${JSON.stringify(header)}\n`));
    const buffer = Buffer.alloc(CHUNK_BYTES);
    for (const [i, { view }] of snap.resources.entries()) {
      const end = ends[i]!;
      for (let at = 0; at < end; ) {
        const n = await view!.read(buffer, Math.min(CHUNK_BYTES, end - at), at);
        if (n === 0) throw new Error(`a log ended at byte ${at}, before the ${end} bytes of the snapshot`);
        // A copy: the buffer is read into again while the socket may still hold this chunk.
        await write(socket, Buffer.from(buffer.subarray(0, n)));
        at += n;
      }
    }
    await new Promise<void>((resolve) => socket.end(resolve));
  } finally {
    await snap.release();
  }
}

/** Writes `bytes`, waiting for the socket to drain when its buffer is full; rejects when it closes first. */
function write(socket: net.Socket, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (socket.destroyed) return reject(new Error('the client went away'));
    if (socket.write(bytes)) return resolve();
    const done = (error?: Error): void => {
      socket.off('drain', drained);
      socket.off('close', closed);
      if (error) reject(error);
      else resolve();
    };
    const drained = (): void => done();
    const closed = (): void => done(new Error('the client went away'));
    socket.once('drain', drained);
    socket.once('close', closed);
  });
}
