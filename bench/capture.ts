/**
 * Capturing halserve's responses for the limit server, and checking that the limit sends the same
 * bytes: the comparison is only fair if the replay is byte for byte what halserve sent.
 */
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { once } from 'node:events';

/** One request of a workload, as the load generator sends it. */
export interface BenchRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

/** One captured response (the file format `bench/limit-server.mjs` reads). */
export interface Captured {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly statusMessage: string;
  readonly rawHeaders: readonly string[];
  /** Base64. */
  readonly body: string;
}

/** Sends each distinct request once and records the response exactly as it came. */
export async function capture(port: number, requests: readonly BenchRequest[]): Promise<Captured[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const seen = new Set<string>();
  const out: Captured[] = [];
  try {
    for (const r of requests) {
      const key = `${r.method} ${r.path}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const req = request({ host: '127.0.0.1', port, method: r.method, path: r.path, headers: r.headers, agent });
      req.end(r.body);
      const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
      const chunks: Buffer[] = [];
      for await (const chunk of res) chunks.push(chunk as Buffer);
      if ((res.statusCode ?? 0) >= 300) {
        throw new Error(`capture: ${key} answered ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`);
      }
      out.push({
        method: r.method,
        url: r.path,
        status: res.statusCode ?? 0,
        statusMessage: res.statusMessage ?? '',
        rawHeaders: res.rawHeaders,
        body: Buffer.concat(chunks).toString('base64'),
      });
    }
  } finally {
    agent.destroy();
  }
  return out;
}

/** The bytes of a request as autocannon writes them. */
function requestBytes(port: number, r: BenchRequest): Buffer {
  const body = r.body === undefined ? Buffer.alloc(0) : Buffer.from(r.body);
  let head = `${r.method} ${r.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`;
  for (const [name, value] of Object.entries(r.headers)) head += `${name}: ${value}\r\n`;
  if (r.body !== undefined) head += `Content-Length: ${body.length}\r\n`;
  return Buffer.concat([Buffer.from(`${head}\r\n`), body]);
}

/** The raw bytes of one response on a keep-alive connection (Content-Length or chunked framing). */
export async function rawExchange(port: number, r: BenchRequest): Promise<Buffer> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(requestBytes(port, r));
  let data = Buffer.alloc(0);
  try {
    for await (const chunk of socket) {
      data = Buffer.concat([data, chunk as Buffer]);
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) continue;
      const head = data.subarray(0, end).toString('latin1');
      const length = /^content-length:\s*(\d+)/im.exec(head);
      if (length?.[1] !== undefined && data.length >= end + 4 + Number(length[1])) break;
      if (/^transfer-encoding:\s*chunked/im.test(head) && data.subarray(end).includes('\r\n0\r\n\r\n')) break;
      if (!length && !/^transfer-encoding/im.test(head) && /^HTTP\/1\.1 (204|304)/.test(head)) break;
    }
  } finally {
    socket.destroy();
  }
  return data;
}

/** The Date header's value is the one byte sequence that may rightly differ between two answers. */
export function maskDate(bytes: Buffer): string {
  return bytes.toString('latin1').replace(/^(date:).*$/im, '$1 <masked>');
}
