import { quotableUrl } from './quotable-url.js';

/**
 * A webhook URL as metrics and logs may show it: `scheme://host:port/path`, without user-info or
 * query, which may hold credentials. The port is always written (the scheme's default otherwise).
 */
export function webhookLabel(url: URL): string {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  return `${url.protocol}//${url.hostname.includes(':') && !url.hostname.startsWith('[') ? `[${url.hostname}]` : url.hostname}:${port}${url.pathname}`;
}

/**
 * Why `text` cannot be a webhook URL, or undefined when it is an `http(s)://` URL with a host. The
 * message quotes the URL without its user-info and query (`quotableUrl`): it goes to stderr.
 */
export function webhookUrlProblem(text: string): string | undefined {
  const quoted = JSON.stringify(quotableUrl(text));
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `${quoted} is not a URL (webhooks are http:// or https:// URLs)`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${quoted} is not an http:// or https:// URL`;
  if (url.hostname === '') return `${quoted} has no host`;
  return undefined;
}
