import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SpareRows } from '../../src/store/index/spare-rows.js';

test('a buffer given back is lent again to a borrower it fits, and never to two at once', () => {
  const spare = new SpareRows(2);
  const a = spare.borrow(1000);
  assert.equal(a.length, 1000);
  a.fill(7);
  const b = spare.borrow(1000);
  assert.notEqual(b.buffer, a.buffer, 'a lent buffer is lent to no one else');
  spare.give(a);
  const again = spare.borrow(1010);
  assert.equal(again.buffer, a.buffer, 'room to grow: a range a few rows longer fits the same buffer');
  assert.equal(again.length, 1010);
  assert.equal(spare.size, 0);
  const larger = spare.borrow(5000);
  assert.notEqual(larger.buffer, a.buffer, 'a buffer too small is not lent');
});

test('the smallest spare that fits is lent, and at most `keep` wait, the largest kept', () => {
  const spare = new SpareRows(2);
  const [small, middle, large] = [spare.borrow(100), spare.borrow(1000), spare.borrow(10_000)];
  for (const rows of [small, middle, large]) spare.give(rows);
  assert.equal(spare.size, 2);
  assert.equal(spare.borrow(50).buffer, middle.buffer, 'the small one went: the middle one is the smallest that fits');
  assert.equal(spare.borrow(50).buffer, large.buffer);
  assert.equal(spare.size, 0);
});
