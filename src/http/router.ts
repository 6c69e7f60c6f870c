/** Path parameters of a match, by name. */
export type Params = Readonly<Record<string, string>>;

/** A matched path: the handler for the method (undefined → 405) and the methods the path allows. */
export interface Match<H> {
  readonly handler: H | undefined;
  readonly params: Params;
  /** Methods allowed on the path, for `Allow` (RFC 9110 §10.2.1): HEAD with GET, and OPTIONS. */
  readonly allow: readonly string[];
  /** The pattern that matched (`/:name/:id`): a bounded label for metrics, never the raw path. */
  readonly pattern: string;
}

export interface Router<H> {
  /** Registers `handler` for `method` on `pattern` (`/`, `/healthz`, `/:name/:id`). */
  add(method: string, pattern: string, handler: H): void;
  /** The route for a decoded path split into segments, or undefined when no pattern fits (→ 404). */
  match(method: string, segments: readonly string[]): Match<H> | undefined;
}

interface Route<H> {
  readonly pattern: string;
  readonly segments: readonly string[];
  /** Per segment, the parameter's name (without `:`), or undefined for a literal segment: made once, so a match slices no name. */
  readonly names: readonly (string | undefined)[];
  readonly handlers: Map<string, H>;
  allow: readonly string[];
}

const isParam = (segment: string): boolean => segment.startsWith(':');

/** Splits a path into segments: `/` → [], `/a/b` → ['a', 'b']. */
export function splitPath(path: string): string[] {
  return path === '/' || path === '' ? [] : path.slice(1).split('/');
}

/**
 * A router over a handful of patterns. Patterns with fewer parameters are tried first, so a static
 * path (`/healthz`) wins over a parameter (`/:name`) whatever the order of registration.
 */
export function createRouter<H>(): Router<H> {
  const routes: Route<H>[] = [];
  return {
    add(method, pattern, handler) {
      const segments = splitPath(pattern);
      let route = routes.find((r) => r.segments.join('/') === segments.join('/'));
      if (!route) {
        route = { pattern: `/${segments.join('/')}`, segments, names: segments.map((s) => (isParam(s) ? s.slice(1) : undefined)), handlers: new Map(), allow: [] };
        routes.push(route);
        routes.sort((a, b) => a.segments.filter(isParam).length - b.segments.filter(isParam).length);
      }
      route.handlers.set(method, handler);
      const methods = [...route.handlers.keys()];
      // HEAD goes with GET (RFC 9110 §9.3.2), OPTIONS with every path.
      route.allow = methods.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])).concat('OPTIONS');
    },
    match(method, segments) {
      for (const route of routes) {
        if (route.segments.length !== segments.length) continue;
        const params: Record<string, string> = {};
        let fits = true;
        for (let i = 0; i < segments.length && fits; i++) {
          const segment = segments[i] ?? '';
          const name = route.names[i];
          if (name !== undefined) params[name] = segment;
          else fits = route.segments[i] === segment;
        }
        if (!fits) continue;
        const handler = route.handlers.get(method) ?? (method === 'HEAD' ? route.handlers.get('GET') : undefined);
        return { handler, params, allow: route.allow, pattern: route.pattern };
      }
      return undefined;
    },
  };
}
