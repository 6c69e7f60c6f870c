import assert from 'node:assert/strict';

/** Every entity of a collection on the server at `url`, by following `next` from a page of `limit`. */
export async function everything(url: string, name: string, limit: number): Promise<{ id: string; category?: string }[]> {
  const out: { id: string; category?: string }[] = [];
  for (let next: string | undefined = `/${name}?limit=${limit}`; next !== undefined; ) {
    const res = await fetch(`${url}${next}`);
    assert.equal(res.status, 200);
    const page = (await res.json()) as { _embedded: Record<string, { id: string; category?: string }[]>; _links: { next?: { href: string } } };
    out.push(...(page._embedded[name] ?? []));
    next = page._links.next?.href;
  }
  return out;
}
