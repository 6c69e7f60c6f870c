/**
 * The least a keyed JSON-lines POST could cost, whatever its design (issue 17's keyed row;
 * bench/proposals/lean-keyed-path.md): `node bench/keyed-minimum.mjs` after `npm run build`
 * (`SRC=<dir>` for another build's `dist/`).
 *
 * Times, each alone in a loop, the pieces no design of a remembered answer can leave out, with
 * this codebase's own functions where it has them: the key parsed and named with its principal,
 * method and target; the digest of the body (SHA-256); a look-up in a full table of 100,000
 * answers (a miss: a fresh key); the answer's headers as JSON; the answer's entry (the body by
 * reference to its change's line, the rest escaped) written as bytes into an append; and the
 * synced write of those extra bytes (an `O_DSYNC` append of a batch of 24 POSTs, 272 bytes a POST
 * unkeyed against 660 keyed, the sizes the deployed servers write). Prints the CPU µs a call of
 * each, the median of five runs, and their sum.
 *
 * Left out, so the sum is below any real design's: the table's record of the answer, what the key
 * makes the collector do, and the request's way through the handler (a promise or two). The 0.9×
 * target gives a key ~5 µs beside a ~47 µs POST on a quiet host (bench/NOTES.md, 2026-12-03).
 * Plain JavaScript, run without tsx, like bench/keyed-cost.mjs. CPU time still moves with the
 * host's neighbours: compare its sum with a run of bench/keyed-cost.mjs made just before or after.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { postBodyBytes } from './post-body.mjs';

const D = process.env['SRC'] ?? new URL('../dist', import.meta.url).pathname;
const { parseIdempotencyKey, ledgerName, requestFingerprint } = await import(`${D}/conventions/idempotency-key.js`);
const { entityHeadersJson } = await import(`${D}/http/answer-headers.js`);
const { sharedWithLine, HeldAnswer, entryOf } = await import(`${D}/store/log/answer-lines.js`);
const { AnswerRing } = await import(`${D}/store/log/answer-ring.js`);
// The body every POST workload of `npm run bench` sends (bench/dataset.ts).
const body = postBodyBytes();
const record = `{"id":"15ZrbX8EMGJekpG1","createdAt":1796287819,"updatedAt":1796287819,${body.toString().slice(1, -1)}}`;
const line = `${record.slice(0, -1)},"_change":"1.c.1796287819"}`;
const answerBody = `${record.slice(0, -1)},"_links":{"self":{"href":"/items/15ZrbX8EMGJekpG1"}}}`;
const headers = { 'content-type': 'application/hal+json', vary: 'Accept', etag: '"1tl09uger50:7rezijju"', 'last-modified': 'Thu, 03 Dec 2026 08:50:19 GMT', location: '/items/15ZrbX8EMGJekpG1' };
/** CPU µs a call of `f`, the median of five runs of `n` calls after a warm-up; printed under `name`. */
function time(name, n, f) {
  for (let i = 0; i < n / 10; i++) f(i);
  const runs = [];
  for (let r = 0; r < 5; r++) {
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) f(i);
    const used = process.cpuUsage(before);
    runs.push((used.user + used.system) / n);
  }
  runs.sort((a, b) => a - b);
  console.log(`${name.padEnd(58)} ${runs[2].toFixed(3)} µs`);
  return runs[2];
}
/** Read at the end, so that no loop's work is optimised away. */
let sink = 0;
const keys = Array.from({ length: 4096 }, (_, i) => `k-${process.pid}-${i.toString(36)}-abcdef`);
const total = [];
total.push(
  time('parse key + ledger name', 200000, (i) => {
    const name = ledgerName('token:6661bfad7c436291', 'POST', '/items', parseIdempotencyKey(keys[i & 4095]));
    sink += name.key.length + name.json.length;
  }),
);
total.push(time('SHA-256 of the body (requestFingerprint)', 200000, () => (sink += requestFingerprint(body).length)));
const ring = new AnswerRing({ maxAnswers: 100000, maxBytes: 64 * 1024 * 1024 });
const fullKeys = Array.from({ length: 200000 }, (_, i) => `["token:6661bfad7c436291","POST","/items","fill-${i}"]`);
const rem = { fingerprint: 'b.x', at: Date.now(), answer: { status: 201, headers, body: answerBody } };
for (let i = 0; i < 100000; i++) ring.put(fullKeys[i], new HeldAnswer(entryOf(fullKeys[i], rem)), 0, true);
let probe = 100000;
// The keys looked up are not in the table: a fresh key's claim.
total.push(time('hash + probe of a full 100,000-answer table (a miss)', 100000, () => (sink += ring.peek(fullKeys[100000 + (probe++ % 100000)]) === undefined ? 1 : 0)));
total.push(time('headers JSON (entityHeadersJson)', 200000, () => (sink += entityHeadersJson(headers, '/items').length)));
const headersJson = entityHeadersJson(headers, '/items');
const buf = Buffer.allocUnsafe(1 << 20);
let at = 0;
total.push(
  time('entry: shared prefix, rest escaped, written as bytes', 200000, () => {
    const shared = sharedWithLine(answerBody, line, record);
    const text = `{"k":"[\\"token:6661bfad7c436291\\",\\"POST\\",\\"/items\\",\\"abc-1\\"]","f":"b.kTovrVlwGghRd1IEiekcGfxe07RqjEMUdzpW2qdp5h4","t":1796287819114,"s":201,"h":${headersJson},"bp":${shared},"bx":${JSON.stringify(answerBody.slice(shared))},"n":1}`;
    if (at + 1000 > buf.length) at = 0;
    at += buf.latin1Write(text, at);
  }),
);
// The extra bytes' synced write: what a batch of 24 POSTs costs a POST, keyed less unkeyed.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'halserve-keyed-minimum-'));
try {
  const synced = (perPost) => {
    const fd = fs.openSync(path.join(dir, `${perPost}.jsonl`), fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_APPEND | fs.constants.O_DSYNC);
    const batch = Buffer.alloc(24 * perPost, 0x61);
    const t = time(`synced append of a batch of 24 POSTs, ${perPost} bytes each`, 400, () => fs.writeSync(fd, batch)) / 24;
    fs.closeSync(fd);
    return t;
  };
  const extra = synced(660) - synced(272);
  console.log(`${'  the extra bytes, a POST'.padEnd(58)} ${extra.toFixed(3)} µs`);
  total.push(extra);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`sum ${total.reduce((a, b) => a + b, 0).toFixed(2)} µs (sink ${sink > 0})`);
