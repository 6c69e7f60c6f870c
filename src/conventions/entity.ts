import type { EntityRecord } from '../store/store.js';
import { objectMembers, type JsonMember } from './json-members.js';

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

/**
 * The text of records a PATCH made from their stored text (`patchedText`), which their stores
 * write in place of the record serialised again (`recordJson`).
 */
const exactTexts = new WeakMap<EntityRecord, string>();

/** The JSON text a store writes for `record`: the text it was made with, if any; else serialised. */
export function recordJson(record: EntityRecord): string {
  return exactTexts.get(record) ?? JSON.stringify(record);
}

/** True when `recordJson(record)` is `JSON.stringify(record)`: no text was given for it. */
export function isSerialised(record: EntityRecord): boolean {
  return !exactTexts.has(record);
}

/** `record`, to be written as `text` (the same entity: the text of which the record is the parse). */
export function withText(record: EntityRecord, text: string): EntityRecord {
  exactTexts.set(record, text);
  return record;
}

/**
 * RFC 7396 merge patch of an entity's stored text, as `replacedRecord(current, now, mergePatch(…))`
 * makes its record, but with every member the patch leaves alone kept byte for byte: a record
 * parsed and serialised again changes the numbers JavaScript cannot hold (2^53 + 1,
 * 12345678901234567890, `-0`, 36 digits of π), escapes, and the order of keys that look like
 * integers (`"10"` before `"id"`), none of which the client touched. `id` and `createdAt` stay as
 * written, `updatedAt` becomes `updatedAt`, other server-managed members are left out; the
 * patch's own values are written as parsed. Undefined for a text that is not an object holding
 * each of `id`, `createdAt` and `updatedAt` once: the record is serialised then.
 */
export function patchedText(stored: string, patch: ClientFields, updatedAt: number): string | undefined {
  const members = objectMembers(stored);
  if (members === undefined) return undefined;
  for (const name of ['id', 'createdAt', 'updatedAt']) if (members.filter((m) => m.name === name).length !== 1) return undefined;
  return mergedText(stored, members, patch, (member) => {
    if (member.name === 'updatedAt') return `${stored.slice(member.start, member.keyEnd)}:${updatedAt}`;
    if (member.name === 'id' || member.name === 'createdAt') return stored.slice(member.start, member.end);
    return SERVER_MANAGED.has(member.name) ? '' : undefined;
  });
}

/**
 * `text` (an object's, its members `members`) merged with `patch` (RFC 7396). `fixed` may decide a
 * member first: its text, '' to leave it out, undefined to merge it as any other.
 */
function mergedText(text: string, members: readonly JsonMember[], patch: Record<string, unknown>, fixed?: (member: JsonMember) => string | undefined): string {
  const last = new Map<string, number>();
  members.forEach((member, i) => last.set(member.name, i));
  const parts: string[] = [];
  members.forEach((member, i) => {
    const decided = fixed?.(member);
    if (decided !== undefined) {
      if (decided !== '') parts.push(decided);
      return;
    }
    if (!Object.hasOwn(patch, member.name)) {
      parts.push(text.slice(member.start, member.end));
      return;
    }
    // A name written twice is the last one's (as JSON.parse reads it): the patch replaces both.
    const value = patch[member.name];
    if (last.get(member.name) !== i || value === null) return;
    parts.push(`${text.slice(member.start, member.keyEnd)}:${mergedValue(text.slice(member.valueStart, member.end), value)}`);
  });
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (last.has(key) || value === null) continue;
    parts.push(`${JSON.stringify(key)}:${JSON.stringify(mergePatch(undefined, value))}`);
  }
  return `{${parts.join(',')}}`;
}

/** A member's value text merged with the patch's value for it. */
function mergedValue(text: string, patch: unknown): string {
  if (!isObject(patch)) return JSON.stringify(patch);
  const members = objectMembers(text);
  return members === undefined ? JSON.stringify(mergePatch(undefined, patch)) : mergedText(text, members, patch);
}
