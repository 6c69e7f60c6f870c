/**
 * Copies of `dist/` with pieces of the keyed write cut out, for measuring what each piece costs
 * (issue 17's keyed row; bench/NOTES.md): `node bench/keyed-variants.mjs <dir>` after `npm run build`
 * writes them under `<dir>`, one folder each, for `SRC=<dir>/<variant> node bench/keyed-instructions.mjs`
 * (or `keyed-cost.mjs`, `keyed-alloc.mjs`); `bench/keyed-floor.mjs` imports them to run as deployed.
 *
 * - `minimal-entry`: a keyed write's entry in the log's answers line is written without the
 *   answer's headers and body (what would be left if a replay were rebuilt from the change's line
 *   instead of recorded, which the contract's "the first answer exactly as it was sent" rules out);
 * - `no-ledger`: no claim and no answer recorded: the key's parse and digest and the keyed path
 *   through the handler and the write batcher are left (the batcher still looks the key up);
 * - `essentials`: a keyed POST does only what no design of a remembered answer can leave out before
 *   its write — the key parsed and named, the body kept as bytes and digested, the key claimed (a
 *   miss in the table of answers) and released — then takes the unkeyed path: nothing recorded;
 * - `key-parsed`: the key parsed (as every copy does), then the unkeyed path exactly: what a key
 *   costs before anything is done with it;
 * - `key-digested`: the key parsed, the body kept as bytes and digested with the one-shot
 *   `crypto.hash` (as src/structures/sha256.ts does), then the unkeyed path;
 * - `lean-essentials`: `essentials` written as leanly as one place allows: the name one
 *   concatenation, the claim one module-level `Map` (`has`, `set`, `delete`) and the look-up a miss
 *   in another, the digest as `key-digested`, one closure more than the unkeyed path; nothing
 *   recorded. What the key's essentials cost on a whole request, whatever the design around them.
 *
 * The copies are wrong on purpose (a retry of them writes twice): a measurement of what each piece
 * costs, never a server to run. Each cut is a text substitution in the compiled JavaScript; if a
 * place it cuts has changed, it says which and stops rather than measure something else.
 */
import fs from 'node:fs';
import path from 'node:path';

const root = new URL('..', import.meta.url).pathname;
export const dist = path.join(root, 'dist');

/** The start of the keyed branch of the compiled POST route (src/http/resource-routes.ts), where a copy puts its own. */
const KEYED_POST =
  "        const answer = (entity) => answerReply(reply(entity), resource);\n        return readJsonRequest(req, res, JSON_BODY_TYPES, maxBody).then((body) => keyed({ req, principal, key, body, resource, reply: answer, id: '' }";
/** The import of resource-routes.js that a copy's cut adds to. */
const KEY_IMPORT = "import { ledgerTarget } from '../conventions/idempotency-key.js';";

/** A cut that puts `lines` at the start of the POST route's keyed branch: they return, so the branch as built is left unreached. */
function keyedPost(lines) {
  return ['http/resource-routes.js', KEYED_POST, [...lines, KEYED_POST].join('\n')];
}

/** A cut that imports the one-shot digest (`hashOnce`) into resource-routes.js, and `more` after it. */
function addedImports(more) {
  return ['http/resource-routes.js', KEY_IMPORT, `${KEY_IMPORT}\nimport { hash as hashOnce } from 'node:crypto';${more}`];
}

/** The cuts of each variant: [file under dist/, text to find, its replacement]. */
const VARIANTS = {
  'minimal-entry': [
    [
      'store/log/answer-lines.js',
      'const shared = line === undefined ? 0 : sharedWithLine(body, line, json);',
      "return { k: key, f: remembered.fingerprint, t: remembered.at, s: answer.status, h: {}, bp: 0, bx: '', n };",
    ],
  ],
  'no-ledger': [
    ['http/idempotent-write.js', 'const claimed = ledger.claim(key, fingerprint, legacy);', "const claimed = { kind: 'fresh', release() {} };"],
    ['http/idempotent-write.js', 'return given === undefined ? undefined : storedAnswer(given);', 'return undefined;'],
  ],
  essentials: [
    keyedPost([
      '        return readJsonRequest(req, res, JSON_BODY_TYPES, maxBody).then((body) => {',
      '            const name = ledgerName(clientKey(req, principal), req.method, ledgerTarget(resource.name), key);',
      '            const claim = resource.store.idempotency.claim(name.key, () => requestFingerprint(body.bytes));',
      '            globalThis.__keyedVariantDigest = requestFingerprint(body.bytes);',
      '            return resource.create(body.value, now(), newId, undefined, writeConditions(req)).then((entity) => {',
      '                claim.release();',
      '                return reply(entity);',
      '            });',
      '        });',
    ]),
    ['http/resource-routes.js', KEY_IMPORT, "import { ledgerTarget, ledgerName, requestFingerprint } from '../conventions/idempotency-key.js';"],
  ],
  'key-parsed': [
    keyedPost([
      '        return readJsonBody(req, res, JSON_BODY_TYPES, maxBody).then((body) => resource.create(body, now(), newId, undefined, writeConditions(req)).then(reply));',
    ]),
  ],
  'key-digested': [
    keyedPost([
      '        return readJsonRequest(req, res, JSON_BODY_TYPES, maxBody).then((body) => {',
      "            globalThis.__keyedVariantDigest = hashOnce('sha256', body.bytes, 'base64url');",
      '            return resource.create(body.value, now(), newId, undefined, writeConditions(req)).then(reply);',
      '        });',
    ]),
    addedImports(''),
  ],
  'lean-essentials': [
    keyedPost([
      '        return readJsonRequest(req, res, JSON_BODY_TYPES, maxBody).then((body) => {',
      "            const name = (principal === undefined ? '' : principal.key) + '\\u0000POST\\u0000/' + resource.name + '\\u0000' + key;",
      '            if (LEAN_HELD.has(name) || LEAN_TABLE.get(name) !== undefined) throw new Error(name);',
      '            LEAN_HELD.set(name, 1);',
      "            globalThis.__keyedVariantDigest = hashOnce('sha256', body.bytes, 'base64url');",
      '            return resource.create(body.value, now(), newId, undefined, writeConditions(req)).then((entity) => {',
      '                LEAN_HELD.delete(name);',
      '                return reply(entity);',
      '            });',
      '        });',
    ]),
    addedImports('\nconst LEAN_HELD = new Map();\nconst LEAN_TABLE = new Map();'),
  ],
};

/**
 * Writes the variants named in `names` (default: every one) under `dir`, a folder each, with the
 * `package.json` that makes its files modules; returns their `cli.js` by name.
 */
export function writeVariants(dir, names = Object.keys(VARIANTS)) {
  if (!fs.existsSync(path.join(dist, 'cli.js'))) throw new Error('keyed-variants: run `npm run build` first');
  const written = {};
  for (const name of names) {
    const cuts = VARIANTS[name];
    if (cuts === undefined) throw new Error(`keyed-variants: no variant ${name}`);
    const copy = path.join(dir, name);
    fs.cpSync(dist, copy, { recursive: true });
    fs.writeFileSync(path.join(copy, 'package.json'), '{"type":"module"}\n');
    for (const [file, find, replace] of cuts) {
      const at = path.join(copy, file);
      const text = fs.readFileSync(at, 'utf8');
      if (!text.includes(find)) throw new Error(`keyed-variants: ${file} no longer holds ${JSON.stringify(find)}: update this script's cuts`);
      fs.writeFileSync(at, text.replace(find, replace));
    }
    written[name] = path.join(copy, 'cli.js');
  }
  return written;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = process.argv[2];
  if (dir === undefined) {
    console.error('usage: node bench/keyed-variants.mjs <dir>');
    process.exit(2);
  }
  for (const [name, cli] of Object.entries(writeVariants(path.resolve(dir)))) console.log(`${name}: SRC=${path.dirname(cli)}`);
}
