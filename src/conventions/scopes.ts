/**
 * What a JWT may do, from its `scope` claim (RFC 8693 §4.2: space-separated) or `scp` (an array,
 * as Entra ID and Okta send it, or one space-separated string). Pure: claims in, permissions out.
 *
 * `read` and `write` apply to every resource, `<resource>:read` and `<resource>:write` to one;
 * `write` includes `read`. Values halserve does not know (`openid`, `profile`, a scope of a
 * resource that is not served) are ignored.
 */

/** What a credential may do: `write` includes `read`. */
export type Access = 'read' | 'write';

/** The permissions a token's scopes give. */
export interface Permissions {
  /** Over every resource; undefined for none. */
  readonly access: Access | undefined;
  /** Per resource, beyond `access`. */
  readonly grants: ReadonlyMap<string, Access>;
  /** The values applied, in the token's order, each once. */
  readonly applied: readonly string[];
}

const stronger = (a: Access | undefined, b: Access): Access => (a === 'write' || b === 'write' ? 'write' : 'read');

/** The scope values of a claims set, or a message saying why the claims are malformed. */
export function scopeValues(claims: Readonly<Record<string, unknown>>): string[] | string {
  const values: string[] = [];
  const { scope, scp } = claims;
  if (scope !== undefined) {
    if (typeof scope !== 'string') return 'its scope claim is not a string';
    values.push(...scope.split(' '));
  }
  if (scp !== undefined) {
    if (typeof scp === 'string') values.push(...scp.split(' '));
    else if (Array.isArray(scp) && scp.every((v) => typeof v === 'string')) values.push(...(scp as string[]));
    else return 'its scp claim is neither a string nor an array of strings';
  }
  return values.filter((v) => v !== '');
}

/** The permissions `values` give over the served `resources`. */
export function scopePermissions(values: readonly string[], resources: ReadonlySet<string>): Permissions {
  let access: Access | undefined;
  const grants = new Map<string, Access>();
  const applied: string[] = [];
  for (const value of values) {
    if (value === 'read' || value === 'write') {
      access = stronger(access, value);
    } else {
      const colon = value.lastIndexOf(':');
      const name = value.slice(0, colon);
      const level = value.slice(colon + 1);
      if (colon <= 0 || (level !== 'read' && level !== 'write') || !resources.has(name)) continue;
      grants.set(name, stronger(grants.get(name), level));
    }
    if (!applied.includes(value)) applied.push(value);
  }
  return { access, grants, applied };
}
