import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { chromium, type Page } from 'playwright-core';
import { compileSchema } from '../../src/conventions/schema.js';
import { LocalChangeLog } from '../../src/store/changes/local-feed.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord } from '../../src/store/store.js';
import { startServer } from '../helpers/server.js';

/**
 * The HAL browser in a real browser (docs/conventions.md §4.1): Debian's chromium driven by playwright-core,
 * over the demo catalogue (read from data/, served from memory: nothing is written there).
 */

const CHROMIUM = '/usr/bin/chromium';
/** The flags these machines need (shared/container/README.md); playwright adds --headless. */
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const TOKEN = 'browser-test-token';

const dataFile = (name: string): string => readFileSync(new URL(`../../data/${name}`, import.meta.url), 'utf8');
const products = dataFile('products.jsonl').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as EntityRecord);
const categories = dataFile('categories.jsonl').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as EntityRecord);
const schema = JSON.parse(dataFile('products.schema.json')) as Record<string, unknown>;

/** Chromium with a profile of its own in a temporary directory, closed and removed after the test; its first page. */
async function openChromium(viewport?: { width: number; height: number }): Promise<Page> {
  const profile = await mkdtemp(join(tmpdir(), 'halserve-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, ...(viewport ? { viewport } : {}) });
  after(async () => {
    await context.close();
    await rm(profile, { recursive: true, force: true });
  });
  return context.pages()[0] ?? (await context.newPage());
}

describe('HAL browser in Chromium (docs/conventions.md §4.1)', () => {
  test('open /, enter a token, click into a collection, page to the last page, open an entity, edit a field, see a validation problem beside its field, delete one', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('needs Debian chromium at /usr/bin/chromium (.ci/run installs it)');
      return;
    }
    const store = createMemoryStore(products);
    const s = await startServer({
      resources: [
        { name: 'products', store, validate: compileSchema(schema, 'products.schema.json'), schema },
        { name: 'categories', store: createMemoryStore(categories) },
      ],
      tokens: [TOKEN],
    });
    const shots = await mkdtemp(join(tmpdir(), 'halserve-browser-'));
    const page = await openChromium({ width: 1280, height: 860 });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    page.on('console', (message) => {
      if (message.type() === 'error' && !/status of 40[0-9]/.test(message.text())) errors.push(message.text());
    });
    let transferred = 0;
    page.on('requestfinished', (request) => {
      void request.sizes().then((sizes) => (transferred += sizes.responseBodySize + sizes.responseHeadersSize), () => {});
    });
    const shot = (name: string): Promise<Buffer> => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
    const json = async (path: string): Promise<{ status: number; body: Record<string, unknown> }> => {
      const res = await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    // 1. The entry point, cold: no token yet, so the 401 problem is shown readably.
    await page.goto(`${s.url}/`);
    await page.locator('.problem h2').filter({ hasText: '401 Unauthorized' }).waitFor();
    await page.waitForLoadState('networkidle');
    assert.ok(transferred > 0 && transferred < 100 * 1024, `first load transferred ${transferred} bytes`);
    t.diagnostic(`first load, cold: ${transferred} bytes transferred`);
    await shot('1-unauthorized');
    await page.fill('#token', TOKEN);
    await page.click('#token-form button');
    await page.locator('main h1', { hasText: 'Collections' }).waitFor();
    assert.equal(await page.evaluate('sessionStorage.getItem("halserve.token")'), TOKEN);
    await shot('2-index');

    // 2. Into the collection: a table of entities with page links.
    await page.click('main a[rel="products"]');
    await page.waitForURL(`${s.url}/products`);
    await page.locator('table.entities tbody tr').first().waitFor();
    assert.equal(await page.locator('table.entities tbody tr').count(), 20);
    assert.equal(await page.locator('p.summary').textContent(), '300 in all; page 1 of 15, 20 shown');
    await shot('3-collection');

    // 3. To the last page through its link.
    await page.locator('nav.pager a[rel="last"]').first().click();
    await page.waitForURL(`${s.url}/products?page=15&limit=20`);
    await page.locator('p.summary', { hasText: 'page 15 of 15' }).waitFor();
    assert.equal(await page.locator('nav.pager a[rel="next"]').count(), 0);
    await shot('4-last-page');

    // 4. Into an entity of that page.
    const link = page.locator('table.entities tbody tr a.entity-link').first();
    const id = (await link.textContent()) ?? '';
    await link.click();
    await page.waitForURL(`${s.url}/products/${id}`);
    await page.locator('main h1', { hasText: `products ${id}` }).waitFor();
    await shot('5-entity');

    // 5. Edit a field through the form (a merge patch of what changed), then check it through the JSON API.
    await page.fill('#f-stock', '777');
    await page.click('button[name="patch"]');
    await page.locator('p.notice', { hasText: 'Saved.' }).waitFor();
    assert.equal(await page.locator('dd[data-field="stock"]').textContent(), '777');
    assert.equal((await json(`/products/${id}`)).body['stock'], 777);
    await shot('6-saved');

    // 6. A value the schema refuses: the problem, and its message beside the field.
    await page.fill('#f-price', '-5');
    await page.click('button[name="patch"]');
    await page.locator('.field[data-field="price"] .error', { hasText: 'must be >= 0' }).waitFor();
    assert.equal(await page.locator('.form-problem .problem h2').textContent(), '400 Bad Request');
    assert.equal(await page.locator('.field.invalid').count(), 1);
    assert.notEqual((await json(`/products/${id}`)).body['price'], -5);
    await shot('7-validation');

    // 7. Delete it (after the browser's confirmation); back on the collection; gone from the JSON API.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('button.delete');
    await page.waitForURL(`${s.url}/products`);
    await page.locator('p.summary', { hasText: '299 in all' }).waitFor();
    assert.equal((await json(`/products/${id}`)).status, 404);

    // 8. The create form: required fields left empty, each message beside its field.
    await page.fill('#f-name', 'A lamp');
    await page.click('form.entity button[type="submit"]');
    await page.locator('.field[data-field="sku"] .error', { hasText: 'is required' }).waitFor();
    assert.ok((await page.locator('.field.invalid').count()) >= 5);
    await shot('8-create-validation');

    // 9. Relations (docs/relations.md): from a product to its category through the link in the table,
    // then through the category's reverse link to every product of it.
    await page.goto(`${s.url}/products?limit=5`);
    const relation = page.locator('table.entities tbody tr a.relation[rel="category"]').first();
    const slug = (await relation.textContent()) ?? '';
    await relation.click();
    await page.waitForURL(`${s.url}/categories/${slug}`);
    await page.locator('main h1', { hasText: `categories ${slug}` }).waitFor();
    await shot('9-category');
    await page.click('main ul.links a[rel="products"]');
    await page.waitForURL(`${s.url}/products?category=${slug}`);
    const inCategory = products.filter((p) => p['category'] === slug).length;
    await page.locator('p.summary', { hasText: `${inCategory} in all` }).waitFor();
    assert.equal(await page.locator('table.entities tbody tr a.relation', { hasText: slug }).count(), Math.min(20, inCategory));
    // An entity shown with embed lists what it embeds, each a link.
    await page.goto(`${s.url}/categories/${slug}?embed=products`);
    await page.locator('main h2', { hasText: 'Embedded' }).waitFor();
    await page.click('main ul.links a[rel="products"][href^="/products?page=1"]');
    await page.waitForURL(`${s.url}/products?page=1&limit=20&category=${slug}`);
    await page.locator('p.summary', { hasText: `${inCategory} in all` }).waitFor();
    await shot('10-reverse');

    // 10. The server's times as dates, the number in the tooltip.
    const first = (await json('/products?limit=1')).body as { _embedded: { products: { id: string; createdAt: number; category: string }[] } };
    const shown = first._embedded.products[0]!;
    await page.goto(`${s.url}/products/${shown.id}`);
    const created = page.locator('dd[data-field="createdAt"] time');
    await created.waitFor();
    assert.equal(await created.getAttribute('title'), String(shown.createdAt));
    assert.equal(await created.textContent(), `${new Date(shown.createdAt * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC`);

    // 11. An x-link field is a choice among the target's entities (the template's options.link): change it, saved.
    const choice = page.locator('select#f-category[data-loaded]');
    await choice.waitFor();
    const values = await choice.locator('option').evaluateAll((options) => options.map((o) => o.getAttribute('value') ?? ''));
    assert.deepEqual([...values].sort(), categories.map((c) => c.id).sort());
    const other = categories.find((c) => c.id !== shown.category)!;
    await choice.selectOption(other.id);
    await page.click('button[name="patch"]');
    await page.locator('p.notice', { hasText: 'Saved.' }).waitFor();
    assert.equal((await json(`/products/${shown.id}`)).body['category'], other.id);
    await shot('11-link-choice');

    // 12. The search box: q, the other parameters kept; the same total as the JSON API.
    await page.goto(`${s.url}/products?limit=5`);
    await page.fill('#q', 'lamp');
    await page.click('form.search button');
    await page.waitForURL(`${s.url}/products?limit=5&q=lamp`);
    const searched = (await json('/products?q=lamp')).body['total'] as number;
    assert.ok(searched > 0 && searched < 299);
    await page.locator('p.summary', { hasText: `${searched} in all` }).waitFor();
    await shot('12-search');

    // 13. Facets: a sidebar of values with counts; the counts of a required field add up to the total; a click narrows to one.
    await page.goto(`${s.url}/products`);
    await page.locator('aside.facets[data-loaded]').waitFor();
    const status = page.locator('aside.facets section[data-facet="status"] a.facet-value');
    const counts = (await status.evaluateAll((links) => links.map((a) => Number(a.getAttribute('data-count')))));
    assert.equal(counts.reduce((a, b) => a + b, 0), 299);
    assert.ok((await page.locator('aside.facets section[data-facet="brand"] a.facet-value').count()) > 1);
    const value = (await status.first().textContent()) ?? '';
    await status.first().click();
    await page.waitForURL((url) => url.searchParams.get('status') === value);
    await page.locator('p.summary', { hasText: `${counts[0]} in all` }).waitFor();
    await page.locator('aside.facets[data-loaded] section[data-facet="status"] a.facet-clear').waitFor();
    await shot('13-facets');

    assert.deepEqual(errors, []);
    // Kept for a look when asked for, or when an assertion above failed; otherwise each run would
    // leave a folder of screenshots behind.
    if (process.env.HALSERVE_KEEP_SCREENSHOTS === '1') t.diagnostic(`screenshots in ${shots}`);
    else await rm(shots, { recursive: true, force: true });
  });

  test('an edit form saved after changing one field -> the patch names that field only: a field the form does not show, an empty string, an unset checkbox stay; a member taken out of an object or a schemaless entity is removed', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('needs Debian chromium at /usr/bin/chromium (.ci/run installs it)');
      return;
    }
    // A schema that allows members it does not list (JSON Schema's default), as most do.
    const notesSchema = { type: 'object', properties: { title: { type: 'string' }, done: { type: 'boolean' }, tags: { type: 'array', items: { type: 'string' } }, size: { type: 'object' } } };
    const at = { createdAt: 1_700_000_000, updatedAt: 1_700_000_000 };
    const s = await startServer({
      resources: [
        { name: 'notes', store: createMemoryStore([{ id: 'n1', ...at, title: '', tags: ['a'], size: { width: 1, weight: 2 }, legacy: 'kept' }]), validate: compileSchema(notesSchema, 'notes.schema.json'), schema: notesSchema },
        { name: 'free', store: createMemoryStore([{ id: 'f1', ...at, a: 1, b: 2 }]) },
      ],
      tokens: [TOKEN],
    });
    const page = await openChromium();
    const sent: unknown[] = [];
    page.on('request', (request) => {
      if (request.method() === 'PATCH') sent.push(request.postDataJSON());
    });
    const json = async (path: string): Promise<Record<string, unknown>> => (await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json() as Promise<Record<string, unknown>>;
    await page.goto(`${s.url}/`);
    await page.evaluate(`sessionStorage.setItem("halserve.token", ${JSON.stringify(TOKEN)})`);

    await page.goto(`${s.url}/notes/n1`);
    await page.fill('#f-tags', '["a","b"]');
    await page.click('button[name="patch"]');
    await page.locator('p.notice', { hasText: 'Saved.' }).waitFor();
    assert.deepEqual(sent.pop(), { tags: ['a', 'b'] });
    const { _links, createdAt, updatedAt, ...note } = await json('/notes/n1');
    assert.deepEqual(note, { id: 'n1', title: '', tags: ['a', 'b'], size: { width: 1, weight: 2 }, legacy: 'kept' });

    await page.fill('#f-size', '{"width": 1}');
    await page.click('button[name="patch"]');
    await page.locator('p.notice', { hasText: 'Saved.' }).waitFor();
    assert.deepEqual((await json('/notes/n1'))['size'], { width: 1 });

    await page.goto(`${s.url}/free/f1`);
    await page.fill('#f-_body', '{"a": 1}');
    await page.click('button[name="patch"]');
    await page.locator('p.notice', { hasText: 'Saved.' }).waitFor();
    assert.deepEqual(sent.pop(), { b: null });
    assert.equal((await json('/free/f1'))['b'], undefined);
  });

  test('a member named __proto__ (schemaless), a schema property named constructor -> the form shows what the entity holds, Replace keeps it, a PATCH that changes it sends and saves it (never a prototype, never Object.prototype\'s members)', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('needs Debian chromium at /usr/bin/chromium (.ci/run installs it)');
      return;
    }
    // JSON.parse keeps "__proto__" an own member, as the server's stores and every JSON client do.
    const record = JSON.parse('{"id":"p1","createdAt":1700000000,"updatedAt":1700000000,"__proto__":{"kept":true},"a":1}') as EntityRecord;
    // A schema may name a field like a member of Object.prototype (a car's constructor).
    const carsSchema = { type: 'object', properties: { name: { type: 'string' }, constructor: { type: 'string' } } };
    const s = await startServer({
      resources: [
        { name: 'free', store: createMemoryStore([record]) },
        { name: 'cars', store: createMemoryStore([{ id: 'c1', createdAt: 1_700_000_000, updatedAt: 1_700_000_000, name: 'A' }]), validate: compileSchema(carsSchema, 'cars.schema.json'), schema: carsSchema },
      ],
      tokens: [TOKEN],
    });
    const page = await openChromium();
    const sent: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'PUT' || request.method() === 'PATCH') sent.push(`${request.method()} ${request.postData() ?? ''}`);
    });
    const stored = async (path = '/free/p1'): Promise<string> => {
      const { _links, createdAt, updatedAt, ...fields } = (await (await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as Record<string, unknown>;
      return JSON.stringify(fields);
    };
    await page.goto(`${s.url}/`);
    await page.evaluate(`sessionStorage.setItem("halserve.token", ${JSON.stringify(TOKEN)})`);

    await page.goto(`${s.url}/free/p1`);
    assert.deepEqual(JSON.parse(await page.inputValue('#f-_body')), JSON.parse('{"__proto__":{"kept":true},"a":1}'));
    await page.click('button.replace');
    await page.locator('p.notice', { hasText: 'Saved.' }).waitFor();
    assert.deepEqual(sent.splice(0), ['PUT {"__proto__":{"kept":true},"a":1}']);
    assert.equal(await stored(), '{"id":"p1","__proto__":{"kept":true},"a":1}');

    await page.fill('#f-_body', '{"__proto__": {"kept": false}, "a": 1}');
    await page.click('button[name="patch"]');
    await page.locator('p.notice', { hasText: 'Saved.' }).waitFor();
    assert.deepEqual(sent.splice(0), ['PATCH {"__proto__":{"kept":false}}']);
    assert.equal(await stored(), '{"id":"p1","__proto__":{"kept":false},"a":1}');

    await page.goto(`${s.url}/cars/c1`);
    assert.equal(await page.inputValue('#f-constructor'), '');
    await page.click('button.replace');
    await page.locator('p.notice', { hasText: 'Saved.' }).waitFor();
    assert.deepEqual(sent.splice(0), ['PUT {"name":"A"}']);
    assert.equal(await stored('/cars/c1'), '{"id":"c1","name":"A"}');
  });

  test('a collection whose entities hold constructor and toString fields -> their facets are judged as any field\'s (names held once are left out; no filter is taken as set), their values shown as text, not links', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('needs Debian chromium at /usr/bin/chromium (.ci/run installs it)');
      return;
    }
    const at = { createdAt: 1_700_000_000, updatedAt: 1_700_000_000 };
    const cars = ['Alpine', 'Bugatti', 'Citroën', 'Delage', 'Exelmans', 'Facel Vega'].map((maker, i) => ({ id: `c${i}`, ...at, constructor: maker, toString: `car ${i}`, body: i % 2 ? 'coupe' : 'saloon' }));
    const s = await startServer({ resources: [{ name: 'cars', store: createMemoryStore(cars) }], tokens: [TOKEN] });
    const page = await openChromium();
    await page.goto(`${s.url}/`);
    await page.evaluate(`sessionStorage.setItem("halserve.token", ${JSON.stringify(TOKEN)})`);
    await page.goto(`${s.url}/cars`);
    await page.locator('aside.facets[data-loaded]').waitFor();
    assert.deepEqual(await page.locator('aside.facets section').evaluateAll((sections) => sections.map((e) => e.getAttribute('data-facet'))), ['body']);
    assert.equal(await page.locator('aside.facets a.facet-clear').count(), 0);
    assert.equal(await page.locator('table.entities td', { hasText: 'Citroën' }).count(), 1);
    assert.equal(await page.locator('a.relation').count(), 0);
  });

  test('an entity changed by another client while its form is being filled in -> Replace is refused (412) with a way to reload, nothing is overwritten; after the reload it saves', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('needs Debian chromium at /usr/bin/chromium (.ci/run installs it)');
      return;
    }
    const shown = products[0]!;
    const s = await startServer({
      resources: [
        { name: 'products', store: createMemoryStore([shown]), validate: compileSchema(schema, 'products.schema.json'), schema },
        { name: 'categories', store: createMemoryStore(categories) },
      ],
      tokens: [TOKEN],
    });
    const page = await openChromium();
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const json = async (): Promise<Record<string, unknown>> => (await fetch(`${s.url}/products/${shown.id}`, { headers })).json() as Promise<Record<string, unknown>>;
    await page.goto(`${s.url}/`);
    await page.evaluate(`sessionStorage.setItem("halserve.token", ${JSON.stringify(TOKEN)})`);
    await page.goto(`${s.url}/products/${shown.id}`);
    await page.fill('#f-name', 'Renamed here');
    const other = await fetch(`${s.url}/products/${shown.id}`, { method: 'PATCH', headers, body: '{"price":1234.5}' });
    assert.equal(other.status, 200);
    await page.click('button.replace');
    await page.locator('.form-problem .problem h2', { hasText: '412 Precondition Failed' }).waitFor();
    assert.deepEqual([(await json())['name'], (await json())['price']], [shown['name'], 1234.5]);
    await page.click('.form-problem a.reload');
    await page.locator('dd[data-field="price"]', { hasText: '1234.5' }).waitFor();
    await page.fill('#f-name', 'Renamed here');
    await page.click('button.replace');
    await page.locator('p.notice', { hasText: 'Saved.' }).waitFor();
    assert.deepEqual([(await json())['name'], (await json())['price']], ['Renamed here', 1234.5]);
  });

  test('--base-path /api: a collection opened with the prefix and without it (the server takes both) -> the same page, its name and entities', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('needs Debian chromium at /usr/bin/chromium (.ci/run installs it)');
      return;
    }
    const s = await startServer({ resources: [{ name: 'categories', store: createMemoryStore(categories) }], tokens: [TOKEN], basePath: '/api' });
    const page = await openChromium();
    await page.goto(`${s.url}/`);
    await page.evaluate(`sessionStorage.setItem("halserve.token", ${JSON.stringify(TOKEN)})`);
    for (const path of ['/api/categories', '/categories', '/api/v1/categories', '/v1/categories']) {
      await page.goto(`${s.url}${path}`);
      await page.locator('p.summary', { hasText: `${categories.length} in all` }).waitFor();
      assert.equal(await page.locator('main h1').textContent(), 'categories', path);
      assert.equal(await page.locator('table.entities tbody tr').count(), Math.min(20, categories.length), path);
      assert.equal(await page.locator('#crumbs a').last().getAttribute('href'), '/api/categories', path);
    }
  });

  test('a page opened -> the browser takes its icon from the assets, never asks for /favicon.ico (a 401 on every page view, counted against the address)', { timeout: 60_000 }, async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('needs Debian chromium at /usr/bin/chromium (.ci/run installs it)');
      return;
    }
    const s = await startServer({ resources: [{ name: 'categories', store: createMemoryStore(categories) }], tokens: [TOKEN] });
    const paths: string[] = [];
    const icon = new Promise<void>((resolve) => {
      s.server.on('request', (req: { url?: string }) => {
        paths.push(req.url ?? '');
        if (req.url === '/_browser/icon.svg') resolve();
      });
    });
    const page = await openChromium();
    await page.goto(`${s.url}/categories`);
    await icon;
    await page.locator('main .problem').waitFor();
    assert.deepEqual(paths.filter((path) => path.startsWith('/favicon')), []);
    const answer = await fetch(`${s.url}/_browser/icon.svg`);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('content-type'), 'image/svg+xml');
  });

  test('a page opened at //other.example with a token in the tab -> every request goes to this server, none to the other host (the CSP aside)', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('needs Debian chromium at /usr/bin/chromium (.ci/run installs it)');
      return;
    }
    const s = await startServer({ resources: [{ name: 'categories', store: createMemoryStore(categories) }], tokens: [TOKEN] });
    const page = await openChromium();
    const origin = new URL(s.url).origin;
    const requested: string[] = [];
    // The CSP is taken off the shell, so that the page's own code is what is tested.
    await page.route('**/*', async (route) => {
      requested.push(route.request().url());
      if (!route.request().url().startsWith(origin)) return route.abort();
      const response = await route.fetch();
      const headers = { ...response.headers() };
      delete headers['content-security-policy'];
      return route.fulfill({ response, headers });
    });
    await page.goto(`${s.url}/`);
    await page.evaluate(`sessionStorage.setItem("halserve.token", ${JSON.stringify(TOKEN)})`);
    await page.goto(`${s.url}//other.example`);
    await page.waitForLoadState('networkidle');
    assert.ok(requested.length > 0);
    assert.deepEqual(requested.filter((url) => !url.startsWith(origin)), []);
  });

  test('a collection page and an entity page open -> each updates itself when another client writes (its stream read with fetch and the token)', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('needs Debian chromium at /usr/bin/chromium (.ci/run installs it)');
      return;
    }
    const changes = new LocalChangeLog();
    const store = createMemoryStore(products.slice(0, 5), { resource: 'products', changes });
    const s = await startServer({ resources: [{ name: 'products', store }], tokens: [TOKEN], changes, newId: () => 'watched-1' });
    const page = await openChromium();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    await page.goto(`${s.url}/`);
    await page.fill('#token', TOKEN);
    await page.click('#token-form button');
    await page.goto(`${s.url}/products`);
    await page.locator('p.summary', { hasText: '5 in all' }).waitFor();
    // Another client creates one: the open page shows it without being reloaded by anyone.
    const created = await fetch(`${s.url}/products`, { method: 'POST', headers, body: JSON.stringify({ ...products[0], sku: 'WATCH-1', name: 'Watched lamp' }) });
    assert.equal(created.status, 201);
    await page.locator('p.summary', { hasText: '6 in all' }).waitFor();
    await page.locator('table.entities td', { hasText: 'Watched lamp' }).waitFor();
    // An entity page: another client's PATCH shows.
    await page.goto(`${s.url}/products/watched-1`);
    await page.locator('dd[data-field="name"]', { hasText: 'Watched lamp' }).waitFor();
    const patched = await fetch(`${s.url}/products/watched-1`, { method: 'PATCH', headers, body: '{"name":"Renamed lamp"}' });
    assert.equal(patched.status, 200);
    await page.locator('dd[data-field="name"]', { hasText: 'Renamed lamp' }).waitFor();
    assert.deepEqual(errors, []);
  });
});
