import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { records, RFC2616, startItems } from '../helpers/server.js';

/** What Chromium and Firefox send for a page. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

describe('HAL browser negotiation (docs/conventions.md §4.1)', () => {
  test('curl, */*, JSON types and HAL clients -> exactly the JSON they got before', async () => {
    const s = await startItems(records(3));
    for (const path of ['/', '/items', '/items/e001', '/v1/items?page=1&limit=2']) {
      const reference = await s.request(path);
      const bytes = await reference.text();
      assert.equal(reference.headers.get('content-type'), 'application/hal+json');
      for (const accept of ['*/*', 'application/hal+json', 'application/*', 'application/hal+json, text/html;q=0.9', 'text/html;q=0.5, */*', 'text/html, application/hal+json']) {
        const res = await s.request(path, { headers: { accept } });
        assert.equal(res.status, 200, `${path} ${accept}`);
        assert.equal(res.headers.get('content-type'), 'application/hal+json', `${path} ${accept}`);
        assert.equal(await res.text(), bytes, `${path} ${accept}`);
      }
      const plain = await s.request(path, { headers: { accept: 'application/json' } });
      assert.equal(plain.headers.get('content-type'), 'application/json');
      assert.equal(await plain.text(), bytes);
    }
  });

  test('a browser on any resource URL, even without a token -> the HTML shell with a strict CSP and no data', async () => {
    const s = await startItems(records(3), { tokens: ['secret'] });
    for (const path of ['/', '/items', '/items/e001', '/v1/items?page=2', '/items/unknown-id']) {
      const res = await s.request(path, { headers: { accept: BROWSER_ACCEPT } });
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(res.headers.get('content-security-policy'), CSP);
      assert.equal(res.headers.get('vary'), 'Accept');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      const html = await res.text();
      assert.match(html, /^<!doctype html>/);
      assert.match(html, /<script src="\/_browser\/app\.js" defer><\/script>/);
      assert.ok(!html.includes('e001') && !html.includes('"n"'), 'the shell holds no data');
      assert.ok(!/<script>|style=/.test(html), 'nothing inline');
    }
    // The data itself still needs the token.
    assert.equal((await s.request('/items', { headers: { accept: 'application/hal+json' } })).status, 401);
  });

  test('a problem where a browser would get the shell -> Vary: Accept, so that no cache serves one for the other', async () => {
    // A 404 is cacheable by default (RFC 9110 §15.1): without Vary a cache would hand a JSON
    // client's 404 to the browser that opens the same URL, or the browser's shell to the client.
    const open = await startItems(records(3));
    for (const path of ['/items/unknown-id', '/nothing', '/items?page=9', '/items?limit=x', '/v1/items/unknown-id']) {
      for (const method of ['GET', 'HEAD']) {
        const res = await open.request(path, { method, headers: { accept: 'application/json' } });
        assert.ok(res.status >= 400, `${method} ${path}`);
        assert.equal(res.headers.get('vary'), 'Accept', `${method} ${path}`);
        assert.equal((await open.request(path, { method, headers: { accept: BROWSER_ACCEPT } })).status, 200, `${method} ${path}`);
      }
    }
    const guarded = await startItems(records(3), { tokens: ['secret'] });
    const refused = await guarded.request('/items/e001');
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('vary'), 'Accept');
    // Where no shell is served, a problem depends on nothing but the request's method and target.
    assert.equal((await open.request('/items/e001/more')).headers.get('vary'), null);
    assert.equal((await open.request('/items', { method: 'DELETE' })).headers.get('vary'), null);
  });

  test('the shell under a base path -> its assets under the base path too', async () => {
    const s = await startItems([], { basePath: '/api' });
    const html = await (await s.request('/api/items', { headers: { accept: BROWSER_ACCEPT } })).text();
    assert.match(html, /<link rel="stylesheet" href="\/api\/_browser\/app\.css">/);
    assert.equal((await s.request('/api/_browser/app.css')).status, 200);
  });

  test('assets -> served without a token, with a tag; If-None-Match -> 304; an unknown one -> 404 problem', async () => {
    const s = await startItems([], { tokens: ['secret'] });
    const script = await s.request('/_browser/app.js');
    assert.equal(script.status, 200);
    assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.match(await script.text(), /^'use strict';/);
    const etag = script.headers.get('etag') ?? '';
    assert.equal((await s.request('/_browser/app.js', { headers: { 'if-none-match': etag } })).status, 304);
    const style = await s.request('/_browser/app.css', { method: 'HEAD' });
    assert.equal(style.status, 200);
    assert.equal(style.headers.get('content-type'), 'text/css; charset=utf-8');
    // The page's icon, so that a browser never asks for /favicon.ico (a 401 on each page view).
    assert.equal((await s.request('/_browser/icon.svg')).headers.get('content-type'), 'image/svg+xml');
    const missing = await s.request('/_browser/nope.js');
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { type: RFC2616, title: 'Not Found', detail: 'There is no browser asset named "nope.js"', status: 404 });
    assert.equal((await s.request('/_browser/app.js', { method: 'POST' })).status, 401);
  });

  test('a write from a browser-like Accept -> JSON as always, never the shell', async () => {
    const s = await startItems();
    const res = await s.request('/items', { method: 'POST', headers: { accept: BROWSER_ACCEPT, 'content-type': 'application/json' }, body: '{"a":1}' });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('content-type'), 'application/hal+json');
  });
});
