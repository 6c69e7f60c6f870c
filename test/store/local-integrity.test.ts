import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { relationGraph } from '../../src/conventions/relations.js';
import { DanglingLinkError, StillLinkedError } from '../../src/store/integrity.js';
import { localLinkIntegrity } from '../../src/store/local-integrity.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord, LocalStore } from '../../src/store/store.js';

/*
 * The in-process link guard, with each interleaving of a link and a delete forced by holding one
 * of them half-way: the outcome must never leave a link to a missing entity.
 */

const SCHEMA = { properties: { category: { type: 'string', 'x-link': 'categories' } } };
const CATEGORY_SCHEMA = { properties: { parent: { type: 'string', 'x-link': 'categories' } } };
const record = (id: string, fields: Record<string, unknown> = {}): EntityRecord => ({ id, createdAt: 1, updatedAt: 1, ...fields });

function setup(categories: EntityRecord[] = [record('x'), record('y')], products: EntityRecord[] = []): {
  categories: LocalStore;
  products: LocalStore;
  guard: ReturnType<typeof localLinkIntegrity>;
} {
  const stores = { categories: createMemoryStore(categories), products: createMemoryStore(products) };
  const graph = relationGraph([
    { name: 'categories', schema: CATEGORY_SCHEMA },
    { name: 'products', schema: SCHEMA },
  ]);
  return { ...stores, guard: localLinkIntegrity(graph, new Map(Object.entries(stores))) };
}

/** A promise and the functions that settle it, to hold a write half-way. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

const target = (id: string): { resource: string; id: string; path: string } => ({ resource: 'categories', id, path: 'category' });
/** Lets every pending promise callback run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('localLinkIntegrity (docs/relations.md)', () => {
  test('a link to an existing entity -> the write runs, its result returned', async () => {
    const { products, guard } = setup();
    const created = await guard.linking([target('x')], () => products.create(record('p1', { category: 'x' })));
    assert.equal(created.id, 'p1');
  });

  test('a link to a missing entity -> DanglingLinkError naming it, the write never runs', async () => {
    const { guard } = setup();
    let ran = false;
    await assert.rejects(
      guard.linking([target('x'), target('nope'), { resource: 'categories', id: 'gone', path: 'tags.1' }], async () => (ran = true)),
      (error: unknown) => {
        assert.ok(error instanceof DanglingLinkError);
        assert.deepEqual(error.missing, [target('nope'), { resource: 'categories', id: 'gone', path: 'tags.1' }]);
        return true;
      },
    );
    assert.equal(ran, false);
  });

  test('delete of an entity nothing links to -> deleted', async () => {
    const { categories, guard } = setup();
    assert.equal(await guard.removing('categories', 'x', () => categories.delete('x')), true);
    assert.equal(categories.get('x'), undefined);
  });

  test('delete of an entity linked to by stored entities -> StillLinkedError with how many, per field; not deleted', async () => {
    const { categories, guard } = setup(
      [record('x', { parent: 'x' }), record('y', { parent: 'x' })],
      [record('p1', { category: 'x' }), record('p2', { category: 'x' }), record('p3', { category: 'y' })],
    );
    await assert.rejects(guard.removing('categories', 'x', () => categories.delete('x')), (error: unknown) => {
      assert.ok(error instanceof StillLinkedError);
      assert.equal(error.resource, 'categories');
      assert.equal(error.id, 'x');
      // x's link to itself does not count; y's does.
      assert.deepEqual(error.referrers, [
        { source: 'categories', field: 'parent', count: 1 },
        { source: 'products', field: 'category', count: 2 },
      ]);
      assert.equal(error.total, 3);
      return true;
    });
    assert.ok(categories.get('x'));
  });

  test('an entity that links only to itself -> may be deleted', async () => {
    const { categories, guard } = setup([record('x', { parent: 'x' })]);
    assert.equal(await guard.removing('categories', 'x', () => categories.delete('x')), true);
  });

  test('a delete while a link to its entity is being written -> waits for the write, then refuses: the link holds', async () => {
    const { categories, products, guard } = setup();
    const held = gate();
    const linking = guard.linking([target('x')], async () => {
      await held.opened;
      return products.create(record('p1', { category: 'x' }));
    });
    await settle();
    let removed = false;
    const removing = guard.removing('categories', 'x', async () => {
      removed = true;
      return categories.delete('x');
    });
    await settle();
    assert.equal(removed, false, 'the delete waits for the write in flight');
    held.open();
    assert.equal((await linking).id, 'p1');
    await assert.rejects(removing, StillLinkedError);
    assert.equal(removed, false);
    assert.ok(categories.get('x'));
  });

  test('a delete while a failing link write is in flight -> waits, then deletes', async () => {
    const { categories, guard } = setup();
    const held = gate();
    const linking = guard.linking([target('x')], async () => {
      await held.opened;
      throw new Error('disk full');
    });
    await settle();
    const removing = guard.removing('categories', 'x', () => categories.delete('x'));
    held.open();
    await assert.rejects(linking, /disk full/);
    assert.equal(await removing, true);
  });

  test('a link written while its target is being deleted -> waits for the delete, then finds it gone: 400, never written', async () => {
    const { categories, guard } = setup();
    const held = gate();
    const removing = guard.removing('categories', 'x', async () => {
      await held.opened;
      return categories.delete('x');
    });
    await settle();
    let wrote = false;
    const linking = guard.linking([target('y'), target('x')], async () => (wrote = true));
    await settle();
    assert.equal(wrote, false, 'the link waits for the delete in flight');
    held.open();
    assert.equal(await removing, true);
    await assert.rejects(linking, (error: unknown) => error instanceof DanglingLinkError && error.missing.length === 1 && error.missing[0]?.id === 'x');
    assert.equal(wrote, false);
  });

  test('a link written while a delete of its target fails -> waits, then is written', async () => {
    const { products, guard } = setup();
    const held = gate();
    const removing = guard.removing('categories', 'x', async () => {
      await held.opened;
      throw new Error('If-Match does not match');
    });
    await settle();
    const linking = guard.linking([target('x')], () => products.create(record('p1', { category: 'x' })));
    held.open();
    await assert.rejects(removing, /If-Match/);
    assert.equal((await linking).id, 'p1');
  });

  test('two deletes of one id -> take turns: the second finds it gone', async () => {
    const { categories, guard } = setup();
    const held = gate();
    const order: string[] = [];
    const first = guard.removing('categories', 'x', async () => {
      order.push('first');
      await held.opened;
      return categories.delete('x');
    });
    const second = guard.removing('categories', 'x', async () => {
      order.push('second');
      return categories.delete('x');
    });
    await settle();
    assert.deepEqual(order, ['first']);
    held.open();
    assert.deepEqual([await first, await second], [true, false]);
  });

  test('deletes of two targets while one write links both -> no deadlock: the write settles, then both deletes refuse', async () => {
    const { categories, products, guard } = setup();
    const held = gate();
    const linking = guard.linking([target('x'), target('y')], async () => {
      await held.opened;
      await products.create(record('p1', { category: 'x' }));
      return products.create(record('p2', { category: 'y' }));
    });
    await settle();
    const removals = [guard.removing('categories', 'x', () => categories.delete('x')), guard.removing('categories', 'y', () => categories.delete('y'))];
    held.open();
    await linking;
    for (const removal of removals) await assert.rejects(removal, StillLinkedError);
  });

  test('a resource with no store -> an internal error, not a silent pass', async () => {
    const guard = localLinkIntegrity(relationGraph([{ name: 'categories' }, { name: 'products', schema: SCHEMA }]), new Map());
    await assert.rejects(guard.linking([target('x')], async () => 1), /no store for resource categories/);
  });
});
