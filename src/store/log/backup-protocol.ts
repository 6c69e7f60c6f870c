/**
 * What `halserve backup` and a running server say to each other over the data directory's socket
 * (backup-socket.ts). The client sends one line, `{"backup":1}`; the server answers one line of
 * JSON, the header, then the bytes of each resource's log in the header's order, and ends. A
 * refusal is the line `{"error":"…"}` alone. Pure: text in, values out.
 */
import path from 'node:path';

/** The socket's name in the data directory (docs/storage.md §1: the store's own files start with `_`). */
export const BACKUP_SOCKET = '_backup.sock';

/** The request line. */
export const BACKUP_REQUEST = '{"backup":1}\n';

/** The longest line either side sends before its bytes: a header names every resource. */
export const MAX_HEADER_BYTES = 4 * 1024 * 1024;

/** What the server sends before the bytes. */
export interface BackupHeader {
  /** The cursor of the data set's change feed the copy is at. */
  readonly cursor: string;
  /** The forgotten horizon of the data set then (`_changes`). */
  readonly forgotten: number;
  /** How long taking the snapshot kept writes waiting, in milliseconds. */
  readonly heldMs: number;
  /** Every resource served, in the order its bytes follow, with their count. */
  readonly resources: readonly { readonly name: string; readonly bytes: number }[];
}

/**
 * Where the socket of data directory `dir` is reached from a process whose working directory is
 * `cwd`: the shorter of its absolute and relative paths, since a Unix socket's path holds at most
 * 107 bytes on Linux (`sockaddr_un`); undefined when both are longer.
 */
export function socketAddress(dir: string, cwd: string): string | undefined {
  const absolute = path.resolve(cwd, dir, BACKUP_SOCKET);
  const relative = `.${path.sep}${path.relative(cwd, absolute)}`;
  const shorter = relative.length < absolute.length ? relative : absolute;
  return Buffer.byteLength(shorter) <= 107 ? shorter : undefined;
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** The header or refusal line (without its newline); throws saying what is wrong with it. */
export function parseBackupReply(line: string): BackupHeader | { readonly error: string } {
  const value = JSON.parse(line) as Record<string, unknown> | null;
  if (typeof value !== 'object' || value === null) throw new Error('the reply is not a JSON object');
  if (typeof value['error'] === 'string') return { error: value['error'] };
  const { cursor, forgotten, heldMs, resources } = value;
  if (typeof cursor !== 'string' || cursor === '') throw new Error('the reply has no cursor');
  if (!isCount(forgotten)) throw new Error('the reply has no forgotten horizon');
  if (typeof heldMs !== 'number' || !(heldMs >= 0)) throw new Error('the reply has no heldMs');
  if (!Array.isArray(resources)) throw new Error('the reply has no resources');
  const listed = resources.map((r: unknown) => {
    const { name, bytes } = (r ?? {}) as Record<string, unknown>;
    if (typeof name !== 'string' || !isCount(bytes)) throw new Error('a resource of the reply has no name or byte count');
    return { name, bytes };
  });
  return { cursor, forgotten, heldMs, resources: listed };
}
