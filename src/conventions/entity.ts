import type { EntityRecord } from '../store/store.js';

/**
 * Members the server manages (docs/conventions.md §2): ignored in request bodies, never overwritten by a
 * client. `_deleted` marks a delete in the JSON-lines log, `_change` a line's place in the change
 * feed (src/store/changes/change-stamp.ts), so a client may set neither; `_templates` is a
 * HAL-FORMS answer's (docs/forms.md), which a stored one would stand beside.
 */
export const SERVER_MANAGED: ReadonlySet<string> = new Set(['id', 'createdAt', 'updatedAt', '_links', '_embedded', '_templates', '_deleted', '_change']);

const MANAGED_NAMES: readonly string[] = [...SERVER_MANAGED];

/** The client's fields of a record or request body. */
export type ClientFields = Readonly<Record<string, unknown>>;

/**
 * Copies an object's own members into a fresh object, dropping server-managed ones. Members are
 * defined, not assigned, so a `__proto__` member stays plain data and never reaches a prototype.
 */
export function clientFields(source: Readonly<Record<string, unknown>>): Record<string, unknown> {
  // Almost every body holds none of them: then a spread copies it (it defines members too), the
  // fastest copy V8 has, at a third of the cost of the loop below.
  if (!hasManaged(source)) return { ...source };
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(source)) {
    if (SERVER_MANAGED.has(key)) continue;
    // Assignment is the fast path; only `__proto__` needs defining to stay plain data.
    if (key === '__proto__') define(fields, key, source[key]);
    else fields[key] = source[key];
  }
  return fields;
}

/**
 * The client's fields of a request body that the caller copies anyway (into a record, or by a
 * merge): `source` itself when it holds no server-managed member, else `clientFields(source)`.
 */
export function withoutManaged(source: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  return hasManaged(source) ? clientFields(source) : source;
}

/** True when `source` has a server-managed member of its own. */
function hasManaged(source: Readonly<Record<string, unknown>>): boolean {
  return MANAGED_NAMES.some((name) => Object.hasOwn(source, name));
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * RFC 7396 §2: JSON Merge Patch — null removes a member, objects merge, anything else replaces.
 * The target's members keep their order, new ones follow in the patch's. Built without `delete`
 * (which would leave V8 a slow dictionary to serialise) and by assignment, but for `__proto__`.
 * `omit`: members of the target left out of the result (at the top level only), as if the target
 * had been copied without them first.
 */
export function mergePatch(target: unknown, patch: unknown, omit?: ReadonlySet<string>): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = {};
  const base = isObject(target) ? target : undefined;
  if (base !== undefined) {
    for (const key of Object.keys(base)) {
      if (omit?.has(key) === true) continue;
      if (!Object.hasOwn(patch, key)) put(result, key, base[key]);
      else if (patch[key] !== null) put(result, key, mergePatch(base[key], patch[key]));
    }
  }
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value !== null && (base === undefined || !Object.hasOwn(base, key))) put(result, key, mergePatch(undefined, value));
  }
  return result;
}

/** Sets a member of a fresh object; `__proto__` is defined, so that it stays plain data. */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') define(target, key, value);
  else target[key] = value;
}

/** A new entity's record: server fields first, in the seed's order, then the client's. */
export function createdRecord(id: string, now: number, fields: ClientFields): EntityRecord {
  return { id, createdAt: now, updatedAt: now, ...fields };
}

/** A record whose client fields are replaced; `id` and `createdAt` are kept. */
export function replacedRecord(current: EntityRecord, now: number, fields: ClientFields): EntityRecord {
  return { id: current.id, createdAt: current.createdAt, updatedAt: now, ...fields };
}
