/**
 * How long making a limited `/openapi.json` holds the event loop, in one process without HTTP:
 * `node --import tsx bench/openapi-hold.ts [resources=80] [sets=12]`.
 *
 * The resources of bench/openapi-cost.ts (the demo catalogue's schema, two links each); `sets`
 * sets of about half of them. Made whole, as before 2026-12-02 (`JSON.stringify(openApiDocument())`
 * and its tag: the time is the hold), and made by `OpenApiDocuments` a resource at a time, one set
 * after another and all at once, while a `setImmediate` chain records the longest gap between two
 * turns of the loop (collections and the machine's other load included).
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { relationGraph, relationsAmong } from '../src/conventions/relations.js';
import { OpenApiDocuments } from '../src/http/openapi-documents.js';
import { staticRepresentation } from '../src/representations/html.js';
import { openApiDocument } from '../src/representations/openapi.js';

const RESOURCES = Number(process.argv[2] ?? 80);
const SETS = Number(process.argv[3] ?? 12);
const base = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '..', 'data', 'products.schema.json'), 'utf8')) as { properties: Record<string, Record<string, unknown>> };
const name = (i: number): string => `r${String(i % RESOURCES).padStart(3, '0')}`;
const resources = Array.from({ length: RESOURCES }, (_, i) => {
  const schema = structuredClone(base);
  schema.properties['category'] = { ...schema.properties['category'], 'x-link': name(i + 1) };
  schema.properties['owner'] = { type: 'string', description: 'Another resource this one links to.', 'x-link': name(i + 7) };
  return { name: name(i), schema };
});
const relations = relationGraph(resources);
const sets = Array.from({ length: SETS }, (_, s) => new Set(resources.filter((_, i) => ((i * 2654435761 + (s + 1) * 40503) >>> 7) % 2 === 0).map((r) => r.name)));
const fmt = (ms: number): string => ms.toFixed(1);
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

console.log(`${RESOURCES} resources, ${SETS} sets; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
const whole: number[] = [];
for (const set of sets) {
  const started = performance.now();
  const readable = resources.filter((r) => set.has(r.name));
  staticRepresentation(JSON.stringify(openApiDocument({ resources: readable, relations: relationsAmong(relations, set), basePath: '', authenticated: true, version: '1' })), 'application/json');
  whole.push(performance.now() - started);
}
console.log(`made whole (before): median ${fmt(median(whole))} ms, max ${fmt(Math.max(...whole))} ms, each held in one stretch`);

for (const together of [false, true]) {
  // A fresh cache each time, so that every set is made.
  const documents = new OpenApiDocuments({ resources, relations, basePath: '', authenticated: true, version: '1' });
  // The whole document is made in the background from here: not part of what is measured.
  await documents.whole;
  let last = performance.now();
  let longest = 0;
  let done = false;
  const tick = (): void => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (!done) setImmediate(tick);
  };
  setImmediate(tick);
  const started = performance.now();
  const each: number[] = [];
  if (together) await Promise.all(sets.map((set) => documents.of((n) => set.has(n))));
  else
    for (const set of sets) {
      const at = performance.now();
      await documents.of((n) => set.has(n));
      each.push(performance.now() - at);
    }
  done = true;
  console.log(`sliced (now), ${together ? `${SETS} at once` : 'one after another'}: ${fmt(performance.now() - started)} ms in all${together ? '' : `, median ${fmt(median(each))} ms a set`}; longest hold ${fmt(longest)} ms`);
}
