import http from 'node:http';
import https from 'node:https';

/** Why a delivery failed: a `/metrics` label, so a small fixed set, each at 0 from the start (webhook-metrics.ts). */
export const FAILURE_CAUSES = ['status', 'timeout', 'connection'] as const;
export type FailureCause = (typeof FAILURE_CAUSES)[number];

/** What one attempt came to: a 2xx, or a failure and why. */
export type Outcome = { readonly ok: true; readonly status: number } | { readonly ok: false; readonly cause: FailureCause; readonly detail: string };

/** POSTs one delivery to one URL. */
export type Send = (body: string, headers: Readonly<Record<string, string>>, signal: AbortSignal) => Promise<Outcome>;

/** How long an attempt may take to get a complete answer before the connection is dropped. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** RFC 9110 §15.3: only a 2xx acknowledges a delivery; a 3xx is not followed. */
const isSuccess = (status: number): boolean => status >= 200 && status <= 299;

/**
 * A `Send` to `url` over `node:http`/`node:https`, on an agent of its own with one socket (kept
 * alive between deliveries): one URL holds at most one connection, whatever its receiver does. An
 * attempt that has no complete answer within `timeoutMs` — status, headers and body, which is read
 * and dropped — is a `timeout` and its connection is destroyed; so is one aborted by `signal`.
 */
export function httpSender(url: URL, timeoutMs = DELIVERY_TIMEOUT_MS): { send: Send; close(): void } {
  const secure = url.protocol === 'https:';
  const agent = secure ? new https.Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 }) : new http.Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 });
  const request = secure ? https.request : http.request;
  const send: Send = (body, headers, signal) =>
    new Promise<Outcome>((resolve) => {
      let settled = false;
      const finish = (outcome: Outcome): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      const payload = Buffer.from(body);
      const req = request(url, {
        method: 'POST',
        agent,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': payload.length },
      });
      const timer = setTimeout(() => {
        finish({ ok: false, cause: 'timeout', detail: `no complete answer within ${timeoutMs} ms` });
        req.destroy();
      }, timeoutMs);
      const onAbort = (): void => {
        finish({ ok: false, cause: 'connection', detail: 'abandoned: shutting down' });
        req.destroy();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      req.on('error', (error: NodeJS.ErrnoException) => finish({ ok: false, cause: 'connection', detail: error.code ?? error.message }));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        res.on('error', (error) => finish({ ok: false, cause: 'connection', detail: error.message }));
        // The answer counts once it is complete; its body is not kept.
        res.on('data', () => {});
        res.on('end', () => finish(isSuccess(status) ? { ok: true, status } : { ok: false, cause: 'status', detail: `answered ${status}` }));
      });
      if (signal.aborted) onAbort();
      else req.end(payload);
    });
  return { send, close: () => agent.destroy() };
}
