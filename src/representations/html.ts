import { createHash, type Hash } from 'node:crypto';
import { BROWSER_SCRIPT } from './browser/script.js';
import { BROWSER_STYLE } from './browser/style.js';

/**
 * The HAL browser (docs/conventions.md §4.1): one HTML shell for every resource URL, and its script and style.
 * The shell holds no data; the script fetches the JSON of the page's own URL, with the token of
 * the session in `Authorization`, and renders it.
 */

export const HTML_MEDIA_TYPE = 'text/html; charset=utf-8';

/** The first path segment of the browser's assets: `_` can never start a resource name (docs/conventions.md §1). */
export const ASSET_SEGMENT = '_browser';

/**
 * Nothing from anywhere else, nothing inline: scripts, styles and fetches from this origin only;
 * forms are handled by the script, never submitted by the browser; the page is never framed.
 */
export const BROWSER_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

/** A static representation: its bytes, media type and strong tag, made once. */
export interface StaticRepresentation {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A strong tag from the content itself, so that a new release is never served stale from a cache. */
export function contentTag(body: Buffer | string): string {
  return digestTag(createHash('sha256').update(body));
}

/** `contentTag` of the bytes a SHA-256 `hash` was given, for a body hashed as it was made. */
export function digestTag(hash: Hash): string {
  return `"${hash.digest('base64url').slice(0, 22)}"`;
}

export function staticRepresentation(body: string, type: string): StaticRepresentation {
  const bytes = Buffer.from(body);
  return { body: bytes, type, etag: contentTag(bytes) };
}

/** The shell: the base path goes in a data attribute for the script, escaped like every value in HTML. */
export function browserShell(basePath: string): StaticRepresentation {
  const base = escapeHtml(basePath);
  const html = `<!doctype html>
<html lang="en" data-base="${base}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>halserve</title>
<link rel="stylesheet" href="${base}/${ASSET_SEGMENT}/app.css">
<link rel="icon" href="${base}/${ASSET_SEGMENT}/icon.svg" type="image/svg+xml">
<script src="${base}/${ASSET_SEGMENT}/app.js" defer></script>
</head>
<body>
<header>
<a class="home" href="${base}/">halserve</a>
<nav id="crumbs" aria-label="Breadcrumbs"></nav>
<form id="token-form" autocomplete="off">
<label for="token">Token</label>
<input id="token" name="token" type="password" placeholder="bearer token (kept for this tab)">
<button type="submit">Use</button>
</form>
</header>
<main id="main"><p>Loading…</p></main>
<noscript><p>This HAL browser needs JavaScript. Any HTTP client gets the same resources as JSON: send <code>Accept: application/hal+json</code>.</p></noscript>
</body>
</html>
`;
  return staticRepresentation(html, HTML_MEDIA_TYPE);
}

/**
 * The page's icon. A page without one has the browser ask for /favicon.ico on every view, a
 * request without a token: a 401 in the access log and the metrics, and a request of the
 * address's rate limit, each time a person opens a page.
 */
const BROWSER_ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2457c5"/><path d="M4 3v10M12 3v10M4 8h8" stroke="#fff" stroke-width="2"/></svg>\n';

/** The assets, by file name. */
export const BROWSER_ASSETS: ReadonlyMap<string, StaticRepresentation> = new Map([
  ['app.js', staticRepresentation(BROWSER_SCRIPT, 'text/javascript; charset=utf-8')],
  ['app.css', staticRepresentation(BROWSER_STYLE, 'text/css; charset=utf-8')],
  ['icon.svg', staticRepresentation(BROWSER_ICON, 'image/svg+xml')],
]);
