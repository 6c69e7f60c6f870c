/**
 * The defaults of the limits docs/conventions.md sets, which the server applies and its
 * configuration (`--max-body`, `--max-body-values`, `--max-body-members`, `--query-budget`) may
 * change: plain values, so that the configuration takes them without depending on the HTTP layer.
 */

/** docs/conventions.md §5: bodies are at most 1 MiB unless `--max-body` says otherwise. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/**
 * docs/conventions.md §8: values (objects, arrays, strings, numbers, literals) a body may hold. The costliest
 * request these limits admit, a PATCH of 2 objects of 1,000 members onto an entity of that shape,
 * holds the event loop 5–7 ms at least (6–11 ms median) on the 2-core VM, about what a 1 MiB string does
 * (`bench/body-shape.ts`); at 5,000 values it took 9–19 ms, at 10,000 24 ms and more, and one
 * object of 121,838 members 220 ms and more. Members are what cost: each is a named property.
 */
export const DEFAULT_MAX_BODY_VALUES = 2_500;
/** Members of any one object: a member costs V8 far more than an array element (a named property). */
export const DEFAULT_MAX_BODY_MEMBERS = 1_000;
/** docs/conventions.md §8: a query that cannot finish within this many milliseconds ends in a 503 problem. */
export const DEFAULT_QUERY_BUDGET_MS = 5000;
