/**
 * The remembered answers of keyed writes alone (`AnswerBook`, src/store/idempotency.ts): the cost
 * of recording one answer once the book is full and every new answer pushes the oldest out, at
 * 1,000, 10,000 and 100,000 answers held (100,000 is the default bound). A flat line is the goal.
 *
 *   node --import tsx bench/answer-book.ts
 */
import { AnswerBook } from '../src/store/idempotency.js';

const answer = { status: 201, headers: { location: '/items/x', etag: '"abc"' }, body: 'x'.repeat(300) };
const PUTS = 200_000;
console.log('| answers held | µs per answer recorded, book full |');
console.log('|---:|---:|');
for (const held of [1_000, 10_000, 100_000]) {
  const book = new AnswerBook({ maxAnswers: held });
  let n = 0;
  for (; n < held; n++) book.put(`key-${n}`, { fingerprint: 'fp', at: Date.now(), answer });
  const started = process.hrtime.bigint();
  for (let i = 0; i < PUTS; i++, n++) book.put(`key-${n}`, { fingerprint: 'fp', at: Date.now(), answer });
  const ns = Number(process.hrtime.bigint() - started) / PUTS;
  console.log(`| ${held.toLocaleString('en-US')} | ${(ns / 1000).toFixed(3)} |`);
}
