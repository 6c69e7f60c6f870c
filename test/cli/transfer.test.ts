/**
 * `halserve import` and `halserve export` (docs/storage.md §2) against a real PostgreSQL: a throwaway
 * cluster (test/helpers/pg-cluster.ts), one database per test. The commands run as a user runs
 * them: the CLI in a child process; the database is then read with the driver itself.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cp, mkdir, readdir, readFile, statfs, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { LAYOUT_DDL } from '../../src/store/pg/layout.js';
import { ensureLinkLayout } from '../../src/store/pg/link-layout.js';
import { findPostgres, freePort, startCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { LIVENESS_MS, spawnCli, startCli, tempDir } from '../helpers/process.js';
import { withoutStamps } from '../store/stamps.js';
import { smallDisk } from '../helpers/small-disk.js';

const found = findPostgres();
const root = fileURLToPath(new URL('../..', import.meta.url));
const demoDir = join(root, 'data');

interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
}

/** Runs `halserve …` to its end. */
async function halserve(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  const cli = spawnCli(args, env);
  const code = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

/** Asserts exit 1 with exactly one line on stderr, `halserve: …` matching `pattern`, and nothing on stdout. */
function assertOneLineFailure(run: Run, pattern: RegExp): void {
  assert.equal(run.code, 1, `exit code; stderr: ${run.stderr}`);
  assert.equal(run.stdout, '');
  const lines = run.stderr.split('\n');
  assert.equal(lines.length, 2, `one line: ${JSON.stringify(run.stderr)}`);
  assert.equal(lines[1], '');
  assert.match(lines[0]!, /^halserve: /);
  assert.match(lines[0]!, pattern);
}

const line = (fields: Record<string, unknown>): string => JSON.stringify(fields);
const entity = (id: string, extra: Record<string, unknown> = {}): string => line({ id, createdAt: 1_700_000_000, updatedAt: 1_700_000_001, ...extra });


/** Bytes a non-root writer could still put on the file system of `dir`. */
async function room(dir: string): Promise<number> {
  const stats = await statfs(dir);
  return stats.bavail * stats.bsize;
}

describe('halserve import / export against PostgreSQL (docs/storage.md §2)', { skip: 'missing' in found ? found.missing : false }, () => {
  let cluster: PgCluster;
  let databases = 0;
  const clients: postgres.Sql[] = [];

  before(async () => {
    if ('bin' in found) cluster = await startCluster(found.bin);
  });
  after(async () => {
    await Promise.all(clients.map((sql) => sql.end({ timeout: 1 })));
    await cluster?.stop();
  });

  /** A fresh database: its URL and a client on it. */
  async function database(): Promise<{ url: string; sql: postgres.Sql }> {
    const name = await cluster.createDatabase(`transfer_${++databases}`);
    const sql = postgres(cluster.url(name), { max: 1, onnotice: () => {} });
    clients.push(sql);
    return { url: cluster.url(name), sql };
  }

  async function rows(sql: postgres.Sql, resource: string): Promise<{ id: string; pos: number; rev: number; body: string | null }[]> {
    const result = await sql<{ id: string; pos: string; rev: string; body: string | null }[]>`
      SELECT id, pos, rev, body FROM halserve.entities WHERE resource = ${resource} ORDER BY pos`;
    return result.map((r) => ({ id: r.id, pos: Number(r.pos), rev: Number(r.rev), body: r.body }));
  }

  /** Imports `dir`, exports it again into a new directory; returns that directory. */
  async function roundTrip(dir: string): Promise<{ out: string; url: string; sql: postgres.Sql; imported: Run; exported: Run }> {
    const { url, sql } = await database();
    const imported = await halserve(['import', '--from', dir, '--to', url]);
    assert.equal(imported.code, 0, imported.stderr);
    const out = join(await tempDir(), 'exported');
    const exported = await halserve(['export', '--from', url, '--to', out]);
    assert.equal(exported.code, 0, exported.stderr);
    return { out, url, sql, imported, exported };
  }

  async function assertSameFiles(source: string, out: string, names: readonly string[]): Promise<void> {
    // Beside the logs, `_changes`: the export is a new data set, with a name of its own.
    assert.deepEqual((await readdir(out)).filter((f) => !f.startsWith('.')).sort(), ['_changes', ...names.map((n) => `${n}.jsonl`)].sort());
    assert.match(await readFile(join(out, '_changes'), 'utf8'), /^\{"forgotten":0,"dataset":"b[0-9a-f]{16}"\}\n$/);
    for (const name of names) {
      const [a, b] = await Promise.all([readFile(join(source, `${name}.jsonl`)), readFile(join(out, `${name}.jsonl`))]);
      // The lines' change stamps belong to the data directory's feed, not to the entities: an
      // import leaves them behind (a database numbers its own changes), byte for byte otherwise.
      assert.ok(withoutStamps(a.toString('latin1')) === b.toString('latin1'), `${name}.jsonl byte-identical after the round trip, but for its change stamps`);
    }
  }

  test('the demo data (a copy) -> import, export -> byte-identical files; rows hold each line, rev 1, positions in file order', async () => {
    const source = await tempDir();
    await cp(demoDir, source, { recursive: true });
    const { out, url, sql, imported, exported } = await roundTrip(source);
    const names = (await readdir(demoDir)).filter((f) => f.endsWith('.jsonl')).map((f) => f.slice(0, -'.jsonl'.length)).sort();
    await assertSameFiles(source, out, names);
    for (const name of names) {
      const lines = withoutStamps(await readFile(join(source, `${name}.jsonl`), 'utf8')).split('\n').filter(Boolean);
      const stored = await rows(sql, name);
      assert.deepEqual(stored.map((r) => r.body), lines);
      assert.deepEqual(stored.map((r) => r.id), lines.map((l) => (JSON.parse(l) as { id: string }).id));
      assert.ok(stored.every((r) => r.rev === 1));
      assert.ok(stored.every((r, i) => i === 0 || r.pos > stored[i - 1]!.pos), 'pos ascends in file order');
    }
    // Not a terminal: no progress line, only the summary, and the password-less URL as given.
    assert.equal(imported.stderr, '');
    assert.match(imported.stdout, new RegExp(`^halserve: imported 313 entities from ${source} into ${url.replaceAll('.', '\\.')} \\(categories: 13, products: 300\\) in \\d+\\.\\d s\\n$`));
    assert.equal(exported.stderr, '');
    assert.match(exported.stdout, /^halserve: exported 313 entities from postgres:\/\/.* into .*exported \(categories: 13, products: 300\) in \d+\.\d s\n$/);
  });

  test('unicode, escapes, odd ids, verbatim numbers and spacing, large entities, 120k entities -> byte-identical round trip', async () => {
    const source = await tempDir();
    const tricky = [
      String.raw`{"id":"u1","createdAt":1,"updatedAt":2,"name":"Ünïcødé 😀 𝄞 e\u0301 ☃","nul":"\u0000","ctl":"\u001f"}`,
      String.raw`{"id":"e1","createdAt":1,"updatedAt":1,"s":"quote \" backslash \\ newline \n tab \t cr \r slash \/ sep \u2028 astral \ud83d\ude00"}`,
      String.raw`{"zeta":1,"id":"o1","alpha":{"b":2,"a":1},"createdAt":5,"updatedAt":6}`,
      String.raw`{"id":"n1","createdAt":1,"updatedAt":1,"f":1.0,"z":-0,"e":1E+2,"big":12345678901234567890,"tiny":5e-324}`,
      `{"id":"w1", "createdAt" : 1,\t"updatedAt":1 ,"a" :[ 1 , 2 ]}`,
      String.raw`{"id":"caf\u00e9","createdAt":1,"updatedAt":1}`,
      `{"id":"naïve-✓","createdAt":1,"updatedAt":1}`,
      String.raw`{"id":"tab\tand\\back","createdAt":1,"updatedAt":1}`,
    ];
    await writeFile(join(source, 'tricky.jsonl'), tricky.join('\n') + '\n');
    // Nine entities of 2 MB each: more than one batch by size.
    const big = Array.from({ length: 9 }, (_, i) => entity(`big${i}`, { blob: `${'x'.repeat(2 << 20)}${i}`, after: 'end' }));
    await writeFile(join(source, 'large.jsonl'), big.join('\n') + '\n');
    const many = Array.from({ length: 120_000 }, (_, i) => entity(`m${i.toString(36)}`, { n: i }));
    await writeFile(join(source, 'many.jsonl'), many.join('\n') + '\n');
    const { out, sql } = await roundTrip(source);
    await assertSameFiles(source, out, ['large', 'many', 'tricky']);
    const ids = (await rows(sql, 'tricky')).map((r) => r.id);
    assert.deepEqual(ids, ['u1', 'e1', 'o1', 'n1', 'w1', 'café', 'naïve-✓', 'tab\tand\\back']);
    assert.equal((await rows(sql, 'many')).length, 120_000);
  });

  test('updates, deletes, a re-create and a torn last line -> what the file store serves, as its compaction writes it; the file unchanged', async () => {
    const source = await tempDir();
    const text = [
      entity('a', { v: 1 }),
      entity('b', { v: 1 }),
      entity('c', { v: 1 }),
      entity('a', { v: 2 }),
      '{"id":"b","_deleted":true}',
      entity('d', { v: 1 }),
      '{"id":"c","_deleted":true}',
      entity('c', { v: 'again' }),
      '{"id":"torn","crea',
    ].join('\n');
    await writeFile(join(source, 'things.jsonl'), text);
    const { url, out, sql } = await (async () => {
      const { url, sql } = await database();
      const imported = await halserve(['import', '--from', source, '--to', url]);
      assert.equal(imported.code, 0, imported.stderr);
      assert.match(imported.stderr, /^halserve: .*things\.jsonl: torn final line 9 \(18 bytes, an interrupted write\) left out; the file is not changed\n$/);
      return { url, sql, out: await tempDir() };
    })();
    assert.equal(await readFile(join(source, 'things.jsonl'), 'utf8'), text);
    const exported = await halserve(['export', '--from', url, '--to', out]);
    assert.equal(exported.code, 0, exported.stderr);
    // The file store's own answer: open a copy (it drops the torn line) and compact it.
    const copy = join(await tempDir(), 'things.jsonl');
    await writeFile(copy, text);
    const store = await openJsonlStore({ file: copy });
    assert.ok(await store.compact());
    await store.close();
    // Its live entities' lines, without the change stamps and the deletes it remembers for the
    // change feed (an export carries neither: the stores number what they load).
    const compacted = withoutStamps(await readFile(copy, 'utf8'))
      .split('\n')
      .filter((line) => !line.includes('"_deleted":true'))
      .join('\n');
    assert.equal(await readFile(join(out, 'things.jsonl'), 'utf8'), compacted);
    assert.deepEqual((await rows(sql, 'things')).map((r) => r.id), ['a', 'd', 'c']);
  });

  test('a malformed line before the last -> exit 1 naming file:line, nothing in the database', async () => {
    const source = await tempDir();
    await writeFile(join(source, 'good.jsonl'), entity('g1') + '\n');
    await writeFile(join(source, 'things.jsonl'), [entity('a'), '{not json', entity('b')].join('\n') + '\n');
    const { url, sql } = await database();
    assertOneLineFailure(await halserve(['import', '--from', source, '--to', url]), /things\.jsonl:2: /);
    const [row] = await sql<{ found: boolean }[]>`SELECT to_regclass('halserve.entities') IS NOT NULL AS found`;
    assert.equal(row?.found, false);
  });

  test('an id holding U+0000 -> exit 1 naming file:line, before the database is touched (no table made)', async () => {
    const source = await tempDir();
    await writeFile(join(source, 'good.jsonl'), entity('g1') + '\n');
    await writeFile(join(source, 'things.jsonl'), [entity('a'), entity('b\u0000c'), entity('d')].join('\n') + '\n');
    const { url, sql } = await database();
    assertOneLineFailure(
      await halserve(['import', '--from', source, '--to', url]),
      /things\.jsonl:2: the id "b\\u0000c" holds U\+0000, which PostgreSQL cannot store in an id: nothing imported; give the entity another id in the file$/,
    );
    const [row] = await sql<{ found: boolean }[]>`SELECT to_regclass('halserve.entities') IS NOT NULL AS found`;
    assert.equal(row?.found, false);
  });

  test('a body holding U+0000 in a resource whose links the database indexes -> exit 1 naming file:line, nothing imported; elsewhere kept', async () => {
    const source = await tempDir();
    await writeFile(join(source, 'aaa.jsonl'), entity('a1') + '\n');
    await writeFile(join(source, 'products.jsonl'), [entity('p1', { category: 'a1' }), entity('p2', { category: 'a1', note: 'x\u0000y' }), entity('p3')].join('\n') + '\n');
    const { url, sql } = await database();
    // As a server whose products schema links `category` leaves the database.
    for (const statement of LAYOUT_DDL) await sql.unsafe(statement);
    await ensureLinkLayout(sql as unknown as Parameters<typeof ensureLinkLayout>[0], [{ source: 'products', field: 'category', many: false }]);
    assertOneLineFailure(
      await halserve(['import', '--from', source, '--to', url]),
      /products\.jsonl:2: products "p2" holds U\+0000 at "note", which PostgreSQL's json cannot read, and the database indexes the link fields of products: nothing imported; remove it from the entity in the file$/,
    );
    assert.deepEqual(await rows(sql, 'aaa'), []);
    assert.deepEqual(await rows(sql, 'products'), []);
    // aaa has no link index: its bodies keep the character.
    await writeFile(join(source, 'products.jsonl'), entity('p1', { category: 'a1' }) + '\n');
    await writeFile(join(source, 'aaa.jsonl'), entity('a1', { note: 'x\u0000y' }) + '\n');
    const imported = await halserve(['import', '--from', source, '--to', url]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.equal((await rows(sql, 'aaa'))[0]?.body, entity('a1', { note: 'x\u0000y' }));
  });

  test('resources the database holds -> refused (nothing written); --skip-existing keeps them; --replace makes them the file, as writes', async () => {
    const source = await tempDir();
    const file = join(source, 'notes.jsonl');
    await writeFile(file, [entity('keep', { v: 1 }), entity('change', { v: 1 }), entity('drop', { v: 1 }), '{"id":"back","createdAt":1,"updatedAt":1}'].join('\n') + '\n');
    const { url, sql } = await database();
    // The URL from the environment, as in a container.
    assert.equal((await halserve(['import', '--from', source], { DATABASE_URL: url })).code, 0);
    const before = await rows(sql, 'notes');
    await sql`UPDATE halserve.entities SET body = NULL, rev = rev + 1 WHERE id = 'back'`;
    await writeFile(join(source, 'other.jsonl'), entity('o1') + '\n');

    assertOneLineFailure(await halserve(['import', '--from', source, '--to', url]), /the database already holds notes \(3 entities\): nothing imported; --replace .* --skip-existing/);
    assert.deepEqual(await rows(sql, 'other'), []);

    const skipped = await halserve(['import', '--from', source, '--to', url, '--skip-existing']);
    assert.equal(skipped.code, 0, skipped.stderr);
    assert.match(skipped.stdout, /imported 1 entity .*\(notes: skipped, the database holds 3, other: 1\)/);
    assert.equal((await rows(sql, 'notes')).filter((r) => r.body !== null).length, 3);

    const lines = [entity('new', { v: 1 }), entity('change', { v: 2 }), entity('keep', { v: 1 }), entity('back', { v: 'again' })];
    await writeFile(file, lines.join('\n') + '\n');
    const importedFrom = Math.floor(Date.now() / 1000);
    const replaced = await halserve(['import', '--from', source, '--to', url, '--replace']);
    const importedTo = Math.ceil(Date.now() / 1000);
    assert.equal(replaced.code, 0, replaced.stderr);
    assert.match(replaced.stdout, /notes: 4, replacing 3, other: 1, replacing 1/);
    const after = new Map((await rows(sql, 'notes')).map((r) => [r.id, r]));
    const old = new Map(before.map((r) => [r.id, r]));
    assert.deepEqual(after.get('keep'), old.get('keep'), 'unchanged: untouched');
    assert.deepEqual(after.get('change'), { ...old.get('change')!, rev: 2, body: lines[1] }, 'replaced in place');
    assert.deepEqual(after.get('drop'), { ...old.get('drop')!, rev: 2, body: null }, 'deleted: a tombstone');
    // The delete's second, as a DELETE records it (its change's `at`), not 0; a re-create clears it.
    const [times] = await sql<{ drop: string | null; back: string | null }[]>`SELECT (SELECT deleted_at::text FROM halserve.entities WHERE id = 'drop') AS drop, (SELECT deleted_at::text FROM halserve.entities WHERE id = 'back') AS back`;
    assert.ok(Number(times!.drop) >= importedFrom && Number(times!.drop) <= importedTo, `deleted_at ${times!.drop} within the import's seconds ${importedFrom}..${importedTo}`);
    assert.equal(times!.back, null);
    assert.equal(after.get('back')?.rev, 3, 're-created over its tombstone');
    assert.equal(after.get('new')?.rev, 1);
    const maxBefore = Math.max(...before.map((r) => r.pos));
    assert.ok(after.get('new')!.pos > maxBefore && after.get('back')!.pos > after.get('new')!.pos, 'created at the end, in file order');

    const out = await tempDir();
    assert.equal((await halserve(['export', '--from', url, '--to', out])).code, 0);
    assert.equal(await readFile(join(out, 'notes.jsonl'), 'utf8'), [lines[2], lines[1], lines[0], lines[3]].join('\n') + '\n');
  });

  test('links (x-link) an import would leave dangling -> refused in one line (count, examples), nothing written; --allow-dangling-links imports and says so', async () => {
    // The demo catalogue: products link categories (data/products.schema.json).
    const source = await tempDir();
    await cp(demoDir, source, { recursive: true });
    const { url, sql } = await database();
    assert.equal((await halserve(['import', '--from', source, '--to', url])).code, 0);
    const live = async (resource: string): Promise<string[]> => (await rows(sql, resource)).filter((r) => r.body !== null).map((r) => r.id);
    const linked = (await readFile(join(demoDir, 'products.jsonl'), 'utf8')).split('\n').filter((l) => l.includes('"category":"audio"')).length;
    assert.ok(linked > 3, 'more products link audio than a refusal names');

    // 1. --replace of the linked-to resource without one of its ids, its schema file beside it.
    const replacing = await tempDir();
    await cp(join(demoDir, 'products.schema.json'), join(replacing, 'products.schema.json'));
    const categories = (await readFile(join(demoDir, 'categories.jsonl'), 'utf8')).split('\n').filter((l) => l !== '' && !l.includes('"id":"audio"'));
    await writeFile(join(replacing, 'categories.jsonl'), categories.join('\n') + '\n');
    const before = await rows(sql, 'categories');
    const href = String.raw`/products/[\w-]+ category -> /categories/audio`;
    assertOneLineFailure(
      await halserve(['import', '--from', replacing, '--to', url, '--replace']),
      new RegExp(`^halserve: the import would leave ${linked} links dangling \\(${href}, ${href}, ${href}, …\\): nothing imported; import the entities they name with it, or --allow-dangling-links to import anyway$`),
    );
    assert.deepEqual(await rows(sql, 'categories'), before, 'nothing written');

    // 2. The linking resource's file naming ids nowhere, the schemas from --data (the servers' directory):
    // an array field, an id with odd characters (named as its URL), the database's own categories counted.
    const schemas = await tempDir();
    await writeFile(join(schemas, 'posts.schema.json'), JSON.stringify({ type: 'object', properties: { tags: { type: 'array', items: { type: 'string' }, 'x-link': 'categories' } } }));
    const posts = await tempDir();
    await writeFile(join(posts, 'posts.jsonl'), [entity('p1', { tags: ['audio', 'kitchen'] }), entity('p2', { tags: ['audio', 'nö/pe', 7] })].join('\n') + '\n');
    assertOneLineFailure(
      await halserve(['import', '--from', posts, '--to', url, '--data', schemas]),
      /^halserve: the import would leave 1 link dangling \(\/posts\/p2 tags -> \/categories\/n%C3%B6%2Fpe\): nothing imported; /,
    );
    assert.deepEqual(await live('posts'), []);
    // Without --data the schema is looked for beside the file: none there, no link known.
    assert.equal((await halserve(['import', '--from', posts, '--to', url])).code, 0);
    // Now the database's posts name audio through an array field (p2's link to nö/pe dangles
    // already: not the import's doing). With --data, only its schemas count (not the products
    // schema beside the file): two links.
    assertOneLineFailure(
      await halserve(['import', '--from', replacing, '--to', url, '--replace', '--data', schemas]),
      /^halserve: the import would leave 2 links dangling \(\/posts\/p[12] tags -> \/categories\/audio, \/posts\/p[12] tags -> \/categories\/audio\): nothing imported; /,
    );
    assert.deepEqual(await rows(sql, 'categories'), before, 'nothing written');

    // 3. Accepted: imported, and one line on stderr says what was left.
    const accepted = await halserve(['import', '--from', replacing, '--to', url, '--replace', '--allow-dangling-links']);
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stderr, new RegExp(`^halserve: --allow-dangling-links: the import left ${linked} links dangling \\(${href}, .*\\); they lead to a 404 until the entities holding them are written again\n$`));
    assert.match(accepted.stdout, /\(categories: 12, replacing 13\)/);
    assert.ok(!(await live('categories')).includes('audio'));

    // 4. A schema file a server would refuse: its links cannot be checked, nothing imported.
    await writeFile(join(schemas, 'posts.schema.json'), '{"type":"object","properties":{"tags":{"x-link":"categories"}}');
    assertOneLineFailure(await halserve(['import', '--from', posts, '--to', url, '--data', schemas, '--replace']), /posts\.schema\.json: not valid JSON: .*: its links cannot be checked, nothing imported$/);
  });

  test('the database fails the second resource -> exit 1 with its reason, the first resource not imported either', async () => {
    const source = await tempDir();
    await writeFile(join(source, 'aaa.jsonl'), entity('a1') + '\n' + entity('a2') + '\n');
    await writeFile(join(source, 'zzz.jsonl'), entity('z1') + '\n');
    const { url, sql } = await database();
    for (const statement of LAYOUT_DDL) await sql.unsafe(statement);
    await sql.unsafe(`CREATE FUNCTION refuse_zzz() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.resource = 'zzz' THEN RAISE EXCEPTION 'zzz is refused by this test'; END IF; RETURN NEW; END $$`);
    await sql.unsafe('CREATE TRIGGER refuse_zzz BEFORE INSERT ON halserve.entities FOR EACH ROW EXECUTE FUNCTION refuse_zzz()');
    assertOneLineFailure(await halserve(['import', '--from', source, '--to', url]), /^halserve: import failed, nothing imported: zzz is refused by this test$/);
    assert.deepEqual(await rows(sql, 'aaa'), []);
  });

  /** A data directory of one large resource (200,000 entities): an import of it stages for a while. */
  async function bigSource(): Promise<string> {
    const source = await tempDir();
    const lines = Array.from({ length: 200_000 }, (_, i) => entity(`k${i}`, { pad: 'x'.repeat(100) }));
    await writeFile(join(source, 'big.jsonl'), lines.join('\n') + '\n');
    return source;
  }

  /**
   * Waits until an import's session sends rows to its staging table (or `ended`): how many such
   * sessions there are, each terminated first when `terminate`.
   */
  async function whileStaging(sql: postgres.Sql, ended: () => boolean, terminate: boolean): Promise<number> {
    const deadline = Date.now() + LIVENESS_MS;
    while (!ended() && Date.now() < deadline) {
      const [row] = terminate
        ? await sql<{ n: string }[]>`SELECT count(pg_terminate_backend(pid))::text AS n FROM pg_stat_activity WHERE query LIKE 'INSERT INTO halserve_import%' AND pid <> pg_backend_pid()`
        : await sql<{ n: string }[]>`SELECT count(*)::text AS n FROM pg_stat_activity WHERE query LIKE 'INSERT INTO halserve_import%' AND pid <> pg_backend_pid()`;
      const n = Number(row?.n);
      if (n > 0) return n;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return 0;
  }

  test('the import\'s connection killed while it stages -> one line, exit 1 (no crash), nothing in the table', async () => {
    const source = await bigSource();
    const { url, sql } = await database();
    const run = halserve(['import', '--from', source, '--to', url]);
    let ended = false;
    void run.then(() => (ended = true));
    // The import's session, once it is sending rows to its staging table: terminated.
    assert.equal(await whileStaging(sql, () => ended, true), 1, 'the import was caught staging');
    assertOneLineFailure(await run, /^halserve: import failed, nothing imported: /);
    assert.deepEqual(await rows(sql, 'big'), []);
  });

  test('import interrupted (SIGINT) while it stages -> one line, exit 130, the data directory\'s lock let go, nothing in the table', async () => {
    const source = await bigSource();
    const { url, sql } = await database();
    const run = spawnCli(['import', '--from', source, '--to', url]);
    let ended = false;
    void run.exited.then(() => (ended = true));
    assert.ok((await whileStaging(sql, () => ended, false)) > 0, 'the import was caught staging');
    run.child.kill('SIGINT');
    assert.equal(await run.exited, 130);
    assert.equal(run.stderr().split('\n').filter((line) => line.startsWith('halserve: ')).at(-1), 'halserve: import interrupted (SIGINT): the database holds none of it (or all of it, if its last statement had been sent)');
    assert.deepEqual(await readdir(source), ['big.jsonl']);
    assert.deepEqual(await rows(sql, 'big'), []);
  });

  test('export over a file that holds data -> refused, file kept; --replace -> overwritten; an empty file is simply filled', async () => {
    const source = await tempDir();
    await writeFile(join(source, 'a.jsonl'), entity('a1') + '\n');
    await writeFile(join(source, 'b.jsonl'), entity('b1') + '\n');
    const { url } = await database();
    assert.equal((await halserve(['import', '--from', source, '--to', url])).code, 0);
    const out = await tempDir();
    await writeFile(join(out, 'a.jsonl'), 'precious\n');
    await writeFile(join(out, 'b.jsonl'), '');
    assertOneLineFailure(await halserve(['export', '--from', url, '--to', out]), /a\.jsonl already holds data: nothing exported; --replace overwrites$/);
    assert.equal(await readFile(join(out, 'a.jsonl'), 'utf8'), 'precious\n');
    assert.equal(await readFile(join(out, 'b.jsonl'), 'utf8'), '');
    assert.equal((await halserve(['export', '--from', url, '--to', out, '--replace'])).code, 0);
    await assertSameFiles(source, out, ['a', 'b']);
  });

  test('export --replace into a directory a server once served -> a new data set: that server\'s cursors are 410 on the new one, its own resume', async () => {
    const source = await tempDir();
    await writeFile(join(source, 'a.jsonl'), entity('a1') + '\n');
    const { url } = await database();
    assert.equal((await halserve(['import', '--from', source, '--to', url])).code, 0);
    const out = await tempDir();
    await writeFile(join(out, 'a.jsonl'), entity('old1') + '\n' + entity('old2') + '\n');
    const first = await startCli(['--port', '0', '--log', 'off', '--data', out]);
    const old = ((await (await fetch(`${first.url}/changes?limit=1`)).json()) as { cursor: string }).cursor;
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);
    assert.equal((await halserve(['export', '--from', url, '--to', out, '--replace'])).code, 0);
    const second = await startCli(['--port', '0', '--log', 'off', '--data', out]);
    assert.equal((await fetch(`${second.url}/changes?since=${old}`)).status, 410);
    const page = (await (await fetch(`${second.url}/changes`)).json()) as { cursor: string; _embedded: { changes: { id: string }[] } };
    assert.deepEqual(page._embedded.changes.map((c) => c.id), ['a1']);
    assert.equal((await fetch(`${second.url}/changes?since=${page.cursor}`)).status, 200);
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });

  test('export --replace onto a disk with room for part of the new file -> one line (ENOSPC), exit 1, the old file kept, no file cut short', async (t) => {
    const disk = await smallDisk('halserve-transfer-full-');
    if (disk === undefined) {
      t.skip('needs root and mount(8) for a tmpfs');
      return;
    }
    const source = await tempDir();
    // About 100 KB: one write of the export's, of which the disk takes about half.
    await writeFile(join(source, 'a.jsonl'), Array.from({ length: 40 }, (_, i) => entity(`a${i}`, { pad: 'x'.repeat(2_500) })).join('\n') + '\n');
    const { url } = await database();
    assert.equal((await halserve(['import', '--from', source, '--to', url])).code, 0);
    const out = join(disk, 'data');
    await cp(source, out, { recursive: true });
    await writeFile(join(out, 'a.jsonl'), 'precious\n');
    const before = await readdir(out);
    // A write(2) that meets the full disk writes what fits and says how much: only the next one
    // fails. Ignoring the count kept a file cut short, renamed into place, and exit 0.
    await writeFile(join(disk, 'ballast'), Buffer.alloc((await room(disk)) - 48 * 1024));
    const full = await halserve(['export', '--from', url, '--to', out, '--replace']);
    assertOneLineFailure(full, /^halserve: export failed, nothing exported: ENOSPC/);
    assert.equal(await readFile(join(out, 'a.jsonl'), 'utf8'), 'precious\n');
    assert.deepEqual(await readdir(out), before);
  });

  test('export --replace whose new data set name cannot be written -> one line, exit 1, the old files and their name kept (never new files under the old name)', async () => {
    const source = await tempDir();
    await writeFile(join(source, 'a.jsonl'), entity('a1') + '\n');
    const { url } = await database();
    assert.equal((await halserve(['import', '--from', source, '--to', url])).code, 0);
    const out = await tempDir();
    await writeFile(join(out, 'a.jsonl'), 'precious\n');
    await writeFile(join(out, '_changes'), '{"forgotten":0,"dataset":"boldname"}\n');
    // `_changes` is replaced through `_changes.tmp`: a directory there fails that write, as a full
    // disk or a failing one would. The export used to rename the new files into place first, say
    // "nothing exported", and leave them under the old name, whose cursors then resumed on them.
    await mkdir(join(out, '_changes.tmp'));
    assertOneLineFailure(await halserve(['export', '--from', url, '--to', out, '--replace']), /^halserve: export failed, nothing exported: EISDIR/);
    assert.equal(await readFile(join(out, 'a.jsonl'), 'utf8'), 'precious\n');
    assert.equal(await readFile(join(out, '_changes'), 'utf8'), '{"forgotten":0,"dataset":"boldname"}\n');
    assert.deepEqual((await readdir(out)).sort(), ['_changes', '_changes.tmp', 'a.jsonl']);
  });

  test('a server running on the data directory -> import and export refuse it (its lock), exit 1', async () => {
    const source = await tempDir();
    await writeFile(join(source, 'a.jsonl'), entity('a1') + '\n');
    const server = await startCli(['--port', '0', '--data', source, '--log', 'off']);
    const { url } = await database();
    assertOneLineFailure(await halserve(['import', '--from', source, '--to', url]), /data directory .* is in use by process \d+/);
    assertOneLineFailure(await halserve(['export', '--from', url, '--to', source]), /data directory .* is in use by process \d+/);
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  });

  test('errors -> one line, exit 1: unreachable database, no such directory, no halserve data, unknown flag, missing or wrong arguments', async () => {
    const source = await tempDir();
    await writeFile(join(source, 'a.jsonl'), entity('a1') + '\n');
    const nowhere = `postgres://postgres:secret@127.0.0.1:${await freePort()}/none`;
    const unreachable = await halserve(['import', '--from', source, '--to', nowhere]);
    // The URL as every message of the PostgreSQL store shows it: without the password.
    assertOneLineFailure(unreachable, /^halserve: cannot reach the database postgres:\/\/postgres@127\.0\.0\.1:\d+\/none: connection refused$/);
    assert.doesNotMatch(unreachable.stderr, /secret/);
    // An export that cannot reach its database leaves nothing behind: not even the directory, nor a parent it made.
    const outside = await tempDir();
    assertOneLineFailure(await halserve(['export', '--from', nowhere, '--to', join(outside, 'new', 'copy')]), /cannot reach the database/);
    assert.deepEqual(await readdir(outside), []);
    const { url } = await database();
    assertOneLineFailure(await halserve(['import', '--from', join(source, 'nope'), '--to', url]), /data directory .*nope does not exist/);
    assertOneLineFailure(await halserve(['import', '--from', await tempDir(), '--to', url]), /holds no <name>\.jsonl file: nothing to import/);
    assertOneLineFailure(await halserve(['export', '--from', url, '--to', await tempDir()]), /holds no halserve data \(no table halserve\.entities\): nothing to export/);
    assertOneLineFailure(await halserve(['export', '--from', url, '--to', join(source, 'a.jsonl')]), /cannot use .*a\.jsonl as the data directory/);
    assertOneLineFailure(await halserve(['import', '--from', source, '--to', url, '--force']), /unknown option "--force" for halserve import \(see halserve import --help\)/);
    assertOneLineFailure(await halserve(['export', '--from', url, '--to', source, '--skip-existing']), /unknown option "--skip-existing" for halserve export/);
    assertOneLineFailure(await halserve(['import', source]), /unexpected argument/);
    assertOneLineFailure(await halserve(['import', '--to', url]), /needs --from <data-dir>/);
    assertOneLineFailure(await halserve(['import', '--from', source], { DATABASE_URL: '', HALSERVE_STORE: '' }), /needs --to postgres:\/\//);
    assertOneLineFailure(await halserve(['import', '--from', source, '--to', 'mysql://x']), /--to must be a postgres:\/\/ URL/);
    assertOneLineFailure(await halserve(['import', '--from', '--to', url]), /--from needs a value|unexpected argument/);
    assertOneLineFailure(await halserve(['import', '--from', source, '--to', url, '--replace', '--skip-existing']), /exclude each other/);
    await writeFile(join(source, 'Bad Name.jsonl'), '');
    assertOneLineFailure(await halserve(['import', `--from=${source}`, `--to=${url}`]), /Bad Name\.jsonl: invalid resource name/);
  });

  test('the driver not installed -> one line saying what to install, exit 1', async () => {
    // The sources seen through a directory with no node_modules above it: `postgres` cannot be found.
    const bare = await tempDir();
    await symlink(join(root, 'src'), join(bare, 'src'));
    await cp(join(root, 'package.json'), join(bare, 'package.json'));
    const source = await tempDir();
    await writeFile(join(source, 'a.jsonl'), entity('a1') + '\n');
    const child = spawn(
      process.execPath,
      ['--preserve-symlinks', '--preserve-symlinks-main', '--import', import.meta.resolve('tsx'), join(bare, 'src', 'cli.ts'), 'import', '--from', source, '--to', 'postgres://postgres@127.0.0.1:1/x'],
      { cwd: bare, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assertOneLineFailure({ code: code ?? -1, stdout, stderr }, /needs the PostgreSQL driver: npm install postgres/);
  });

  test('--help -> the usage of halserve (naming import and export), of import and of export, exit 0', async () => {
    const main = await halserve(['--help']);
    assert.equal(main.code, 0);
    assert.match(main.stdout, /halserve import --from <data-dir> --to postgres:\/\//);
    assert.match(main.stdout, /halserve export --from postgres:\/\/… --to <data-dir>/);
    const imp = await halserve(['import', '--help']);
    assert.equal(imp.code, 0);
    assert.match(imp.stdout, /^Usage: halserve import --from <data-dir> --to postgres:\/\/… \[--replace \| --skip-existing\]/);
    const exp = await halserve(['export', '-h']);
    assert.equal(exp.code, 0);
    assert.match(exp.stdout, /^Usage: halserve export --from postgres:\/\/… --to <data-dir> \[--replace\]/);
  });
});
