/**
 * A minimal PostgreSQL client for the benchmark: one persistent connection over the cluster's Unix
 * socket, trust authentication, the simple query protocol (protocol 3.0, "Q" messages), every value
 * as text. Enough to time queries from the client's side exactly as halserve is timed over HTTP:
 * one round trip per request, the rows received and decoded. No npm dependency.
 *
 * Protocol reference: https://www.postgresql.org/docs/15/protocol-message-formats.html
 */
import net from 'node:net';
import { once } from 'node:events';

/** The rows of one statement, every value as text (null for NULL), and its command tag. */
export interface PgResult {
  readonly rows: (string | null)[][];
  readonly command: string;
}

export class PgError extends Error {
  override readonly name = 'PgError';
}

export class PgClient {
  readonly #socket: net.Socket;
  #buffer: Buffer = Buffer.alloc(0);
  #results: PgResult[] = [];
  #rows: (string | null)[][] = [];
  #error: PgError | undefined;
  #waiting: { resolve: (r: PgResult[]) => void; reject: (e: Error) => void } | undefined;
  #closed = false;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => this.#data(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () => {
      this.#closed = true;
      this.#fail(new PgError('connection closed'));
    });
  }

  /** Connects to `<socketDir>/.s.PGSQL.<port>` as `user`, database `database`. */
  static async connect(socketDir: string, port: number, user = 'postgres', database = 'postgres'): Promise<PgClient> {
    const socket = net.connect(`${socketDir}/.s.PGSQL.${port}`);
    await once(socket, 'connect');
    socket.setNoDelay(true);
    const client = new PgClient(socket);
    const params = Buffer.from(`user\0${user}\0database\0${database}\0client_encoding\0UTF8\0\0`);
    const startup = Buffer.alloc(8 + params.length);
    startup.writeInt32BE(startup.length, 0);
    startup.writeInt32BE(196608, 4); // protocol 3.0
    params.copy(startup, 8);
    await client.#send(startup);
    return client;
  }

  /** Sends one simple query (which may hold several statements) and resolves each statement's rows. */
  query(sql: string): Promise<PgResult[]> {
    const text = Buffer.from(sql + '\0');
    const message = Buffer.alloc(5 + text.length);
    message.write('Q', 0, 'latin1');
    message.writeInt32BE(4 + text.length, 1);
    text.copy(message, 5);
    return this.#send(message);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    const terminate = Buffer.from([0x58, 0, 0, 0, 4]); // 'X'
    this.#socket.end(terminate);
    await once(this.#socket, 'close').catch(() => undefined);
  }

  #send(message: Buffer): Promise<PgResult[]> {
    if (this.#waiting) return Promise.reject(new PgError('one query at a time per connection'));
    if (this.#closed) return Promise.reject(new PgError('connection closed'));
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      this.#results = [];
      this.#rows = [];
      this.#error = undefined;
      this.#socket.write(message);
    });
  }

  #fail(error: Error): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.reject(error);
  }

  #data(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    let at = 0;
    const buffer = this.#buffer;
    while (buffer.length - at >= 5) {
      const length = buffer.readInt32BE(at + 1);
      if (buffer.length - at < 1 + length) break;
      this.#message(buffer[at]!, buffer.subarray(at + 5, at + 1 + length));
      at += 1 + length;
    }
    this.#buffer = at === buffer.length ? Buffer.alloc(0) : buffer.subarray(at);
  }

  #message(type: number, body: Buffer): void {
    switch (String.fromCharCode(type)) {
      case 'R': {
        const kind = body.readInt32BE(0);
        if (kind !== 0) this.#fail(new PgError(`authentication method ${kind} is not supported (the bench cluster uses trust)`));
        return;
      }
      case 'T': // RowDescription: a statement with rows starts
        this.#rows = [];
        return;
      case 'D': {
        const count = body.readInt16BE(0);
        const row: (string | null)[] = new Array<string | null>(count);
        let at = 2;
        for (let i = 0; i < count; i++) {
          const length = body.readInt32BE(at);
          at += 4;
          if (length < 0) row[i] = null;
          else {
            row[i] = body.toString('utf8', at, at + length);
            at += length;
          }
        }
        this.#rows.push(row);
        return;
      }
      case 'C': {
        const command = body.toString('utf8', 0, body.length - 1);
        this.#results.push({ rows: this.#rows, command });
        this.#rows = [];
        return;
      }
      case 'E': {
        const fields: Record<string, string> = {};
        let at = 0;
        while (at < body.length && body[at] !== 0) {
          const code = String.fromCharCode(body[at]!);
          const end = body.indexOf(0, at + 1);
          fields[code] = body.toString('utf8', at + 1, end);
          at = end + 1;
        }
        this.#error = new PgError(`${fields['S'] ?? 'ERROR'}: ${fields['M'] ?? 'unknown error'}${fields['D'] ? ` (${fields['D']})` : ''}`);
        return;
      }
      case 'Z': {
        // ReadyForQuery: the query (or the start-up) is over.
        const waiting = this.#waiting;
        this.#waiting = undefined;
        if (this.#error) waiting?.reject(this.#error);
        else waiting?.resolve(this.#results);
        return;
      }
      default:
        // 'S' ParameterStatus, 'K' BackendKeyData, 'N' notice, 'I' empty query, 'G'/'H' copy (unused).
        return;
    }
  }
}
