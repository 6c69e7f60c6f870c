import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { stampedLine } from '../../src/store/changes/change-stamp.js';
import { AnswerLines, answersLine, entryOf, entryText, isAnswersLine, type AnswerEntry } from '../../src/store/log/answer-lines.js';
import { prefixThrough } from '../../src/store/log/log-prefix.js';

const answer = (k: string, t: number, n?: number): AnswerEntry => entryOf(k, { fingerprint: 'f', at: t, answer: { status: n === undefined ? 404 : 201, headers: { a: '"quoted"' }, body: '{"id":"x"}\n' } }, n);
const entity = (id: string, seq: number): string => stampedLine(JSON.stringify({ id }), { seq, type: 'created', at: 1 });

/** Feeds `lines` to an `AnswerLines` as start-up does; the keys it keeps. */
function kept(lines: readonly string[], since?: number): string[] {
  const keys: string[] = [];
  const collector = new AnswerLines((e) => keys.push(e.k), since);
  for (const line of lines) {
    const buf = Buffer.from(line);
    if (isAnswersLine(buf, 0, buf.length)) assert.ok(collector.answers(buf, 0, buf.length));
    else collector.change(Number(/"_change":"(\d+)\./.exec(line)![1]));
  }
  collector.end();
  return keys;
}

describe('answers lines of the log (answer-lines.ts)', () => {
  const batch = [answersLine([answer('a', 10, 5), answer('none', 10), answer('c', 10, 6)], 6), entity('a', 5), entity('c', 6)];

  test('a line round-trips its answers, bodies and headers with quotes and newlines included', () => {
    const line = batch[0]!;
    assert.ok(!line.includes('\n'));
    assert.ok(isAnswersLine(Buffer.from(line), 0, line.length));
    assert.ok(!isAnswersLine(Buffer.from(entity('a', 1)), 0, entity('a', 1).length));
    const kept: AnswerEntry[] = [];
    const collector = new AnswerLines((e) => kept.push(e));
    collector.answers(Buffer.from(line), 0, Buffer.byteLength(line));
    collector.change(5);
    collector.change(6);
    collector.end();
    assert.deepEqual(kept, [answer('a', 10, 5), answer('none', 10), answer('c', 10, 6)]);
  });

  test('an entry is written as JSON.stringify writes it, whatever its strings hold, and the line as one JSON object', () => {
    const awkward = ['', 'plain', '"quoted" \\ back\nslash', '\u2028\u2029 é 𝄞', '\ud800 lone', '\u0000\u001f\u007f', '</script>'];
    for (const text of awkward) {
      for (const n of [undefined, 0, 7]) {
        const e = entryOf(`["p","POST","/x",${JSON.stringify(text)}]`, { fingerprint: text, at: 1_795_742_908_771, answer: { status: 201, headers: { [text || 'h']: text }, body: text } }, n);
        assert.equal(entryText(e), JSON.stringify(e));
      }
    }
    const entries = [answer('a', 10, 5), answer('b', 30), answer('c', 20, 6)];
    assert.deepEqual(JSON.parse(answersLine(entries, 6)), { _answers: 30, last: 6, a: entries });
    assert.deepEqual(JSON.parse(answersLine([], 0)), { _answers: 0, last: 0, a: [] });
  });

  test('a whole batch keeps every answer; a cut one those of the changes read, not those that wrote nothing', () => {
    assert.deepEqual(kept(batch), ['a', 'none', 'c']);
    assert.deepEqual(kept(batch.slice(0, 2)), ['a']);
    assert.deepEqual(kept(batch.slice(0, 1)), []);
    // A later batch without answers closes it as whole.
    assert.deepEqual(kept([...batch, entity('d', 7)]), ['a', 'none', 'c']);
    // A batch of answers alone (no change) stands by itself.
    assert.deepEqual(kept([answersLine([answer('alone', 10)], 0), ...batch.slice(0, 2)]), ['alone', 'a']);
  });

  test('a line whose answers all expired is skipped; of a live line only its live answers are kept', () => {
    assert.deepEqual(kept(batch, 10), []);
    assert.deepEqual(kept([answersLine([answer('old', 5, 5), answer('new', 20, 6)], 6), entity('a', 5), entity('c', 6)], 10), ['new']);
  });

  test('a line that only begins like one (no "a" array) is no answers line: the caller refuses it as a line without an id', () => {
    const line = Buffer.from('{"_answers":1,"note":"hand-written"}');
    assert.equal(new AnswerLines(() => {}).answers(line, 0, line.length), false);
  });

  test('a cut of the log at a cursor never ends on an answers line', async () => {
    const lines = [entity('x', 1), ...batch.map((l) => l.replace('"_change":"5.', '"_change":"2.').replace('"_change":"6.', '"_change":"3.')), answersLine([answer('alone', 10)], 0)];
    const text = Buffer.from(lines.join('\n') + '\n');
    const read = async (buffer: Buffer, length: number, position: number): Promise<number> => text.copy(buffer, 0, position, position + length);
    const endOf = (i: number): number => Buffer.byteLength(lines.slice(0, i + 1).join('\n') + '\n');
    assert.equal(await prefixThrough(read, text.length, 1), endOf(0), 'not the answers line of the batch after it');
    assert.equal(await prefixThrough(read, text.length, 2), endOf(2));
    assert.equal(await prefixThrough(read, text.length, 3), endOf(3), 'not the answers-alone line at the end');
  });
});
