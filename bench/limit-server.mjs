// The limit: a bare node:http server that answers each request with the exact status line, headers
// and body halserve sent for the same method and URL, captured just before. Whatever it does per
// request is the least any server on this runtime must do to send that response.
//
//
// With `--durable <file>` it is the durable limit: the body of each request that has one is parsed
// as JSON and appended to <file> as a line, and the answer goes out only once that line is on disk.
// Writes that arrive while an fdatasync is under way wait for the next one and share it (a group
// commit): one write and one fdatasync per batch of concurrent requests (the durable limit the
// "as fast as deployed" issue defines). With `--dsync` as well, the file is opened with O_DSYNC
// and each batch is one write that returns once on disk, no fdatasync (as halserve's log does):
// one trip to the thread pool per batch instead of two, a reference for what that saves.
//
// Usage: node bench/limit-server.mjs <capture.json> [--durable <file> [--dsync]]
// <capture.json>: [{ method, url, status, statusMessage, rawHeaders: [name, value, ...], body: base64 }]
// Prints `limit listening on http://127.0.0.1:<port>` once ready.
import { createServer } from 'node:http';
import { constants, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';

const file = process.argv[2];
if (!file) {
  console.error('usage: node bench/limit-server.mjs <capture.json> [--durable <file>]');
  process.exit(1);
}
const durableAt = process.argv.indexOf('--durable');
const dsync = process.argv.includes('--dsync');
const log = durableAt > 0 ? await open(process.argv[durableAt + 1], dsync ? constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC : 'a') : undefined;

/** Lines waiting for the next fdatasync, and their requests' answers. */
let waiting = [];
let syncing = false;

/** Appends `line` and calls `done` once it is on disk. */
function append(line, done) {
  waiting.push({ line, done });
  if (!syncing) void commit();
}

async function commit() {
  syncing = true;
  while (waiting.length > 0) {
    const batch = waiting;
    waiting = [];
    await log.write(batch.map((w) => w.line).join(''));
    if (!dsync) await log.datasync();
    for (const w of batch) w.done();
  }
  syncing = false;
}

const NODE_MANAGED = new Set(['date', 'connection', 'keep-alive']);

/** @type {Map<string, { status: number, message: string, headers: string[], body: Buffer }>} */
const replies = new Map();
for (const entry of JSON.parse(readFileSync(file, 'utf8'))) {
  // Date, Connection and Keep-Alive are written by node:http itself (Date from a once-a-second
  // cache), for halserve as for this server: leaving them to it puts them in the same place with
  // the same values, where replaying them would send a stale Date in another position.
  const headers = [];
  for (let i = 0; i < entry.rawHeaders.length; i += 2) {
    if (!NODE_MANAGED.has(entry.rawHeaders[i].toLowerCase())) headers.push(entry.rawHeaders[i], entry.rawHeaders[i + 1]);
  }
  replies.set(`${entry.method} ${entry.url}`, {
    status: entry.status,
    message: entry.statusMessage,
    headers,
    body: Buffer.from(entry.body, 'base64'),
  });
}

const server = createServer((req, res) => {
  const reply = replies.get(`${req.method} ${req.url}`);
  const send = () => {
    if (!reply) {
      // Never expected during a run: the harness counts non-2xx answers and rejects the run.
      res.writeHead(599, 'Not Captured');
      res.end();
      return;
    }
    res.writeHead(reply.status, reply.message, reply.headers);
    res.end(reply.body);
  };
  // A request with a body is answered once the body has been read, as any real server must.
  if (req.method === 'GET' || req.method === 'HEAD') send();
  else if (!log) req.on('end', send).resume();
  else {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => append(`${JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')))}\n`, send));
  }
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`limit listening on http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}\n`);
});

const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
