import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { stampedLine } from '../../src/store/changes/change-stamp.js';
import { AnswerLines, answersLine, entryOf, entryText, HeldAnswer, heldLine, isAnswersLine, locateAnswers, rememberedOf, sharedWithLine, type AnswerEntry } from '../../src/store/log/answer-lines.js';
import { sharedPrefix } from '../../src/store/answer-prefix.js';
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
    else collector.change(Number(/"_change":"(\d+)\./.exec(line)![1]), buf, 0, buf.length);
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
    for (const [i, seq] of [[1, 5], [2, 6]] as const) collector.change(seq, Buffer.from(batch[i]!), 0, Buffer.byteLength(batch[i]!));
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

  describe('a body given by reference to the line of its change', () => {
    /** A batch of one keyed create: its answers line (entry by reference) and its change's line; the answer sent. */
    const create = (record: Record<string, unknown>, seq: number, links = ',"_links":{"self":{"href":"/items/x"}}}') => {
      const line = stampedLine(JSON.stringify(record), { seq, type: 'created', at: 1 });
      const body = JSON.stringify(record).slice(0, -1) + links;
      const remembered = { fingerprint: 'f', at: 10, answer: { status: 201, headers: { location: '/items/x' }, body } };
      const entry = entryOf('k', remembered, seq, line);
      return { lines: [answersLine([entry], seq), line], entry, remembered };
    };
    /** What start-up keeps of `lines`, entries whole. */
    const read = (lines: readonly string[]): AnswerEntry[] => {
      const out: AnswerEntry[] = [];
      const collector = new AnswerLines((e) => out.push(e));
      for (const line of lines) {
        const buf = Buffer.from(line);
        if (isAnswersLine(buf, 0, buf.length)) collector.answers(buf, 0, buf.length);
        else collector.change(Number(/"_change":"(\d+)\./.exec(line)![1]), buf, 0, buf.length);
      }
      collector.end();
      return out;
    };

    test('the log holds the start of the body once, in the line of its change, and start-up joins the body byte for byte', () => {
      for (const text of ['plain', '"quoted" \\ back\nslash', '\u2028 é 𝄞 ✓', '</script>']) {
        const { lines, entry, remembered } = create({ id: 'x', description: `a long enough description: ${text}`, n: 1 }, 7);
        assert.equal(entry.b, undefined, 'given by reference');
        assert.ok(entry.bp! >= 32 && entry.bx!.length < 40, entry.bx);
        assert.equal(entryText(entry), JSON.stringify(entry));
        const [back] = read(lines);
        assert.deepEqual(rememberedOf(back!), remembered);
        const whole = answersLine([entryOf('k', remembered, 7)], 7);
        assert.ok(Buffer.byteLength(lines[0]!) <= Buffer.byteLength(whole) - entry.bp! + 16, 'the shared start is not written twice');
      }
    });

    test('a prefix never ends between the halves of a surrogate pair, and the body comes back whole when they differ there', () => {
      assert.equal(sharedPrefix('ab\ud834\udd1e', 'ab\ud834\udd1f'), 2);
      assert.equal(sharedPrefix('same', 'same and more'), 4);
      const record = { id: 'x', description: 'a long enough description, then a symbol: 𝄞' };
      const line = stampedLine(JSON.stringify(record), { seq: 3, type: 'created', at: 1 });
      const body = JSON.stringify(record).slice(0, -3) + '𝄟"}';
      const entry = entryOf('k', { fingerprint: 'f', at: 10, answer: { status: 201, headers: {}, body } }, 3, line);
      assert.equal(body.slice(0, entry.bp).length, entry.bp);
      assert.equal(read([answersLine([entry], 3), line])[0]!.b, body);
    });

    test('the shared start is what a comparison character by character finds, on 20,000 generated pairs (a fixed seed)', () => {
      let seed = 17;
      const next = (n: number): number => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
      const pieces = ['a', 'b', ',"', '"', '𝄞', '\ud834', '}'];
      const text = (): string => Array.from({ length: next(30) }, () => pieces[next(pieces.length)]).join('');
      const byCharacter = (a: string, b: string): number => {
        let i = 0;
        while (i < Math.min(a.length, b.length) && a.charCodeAt(i) === b.charCodeAt(i)) i++;
        return i > 0 && a.charCodeAt(i - 1) >= 0xd800 && a.charCodeAt(i - 1) <= 0xdbff ? i - 1 : i;
      };
      for (let n = 0; n < 20_000; n++) {
        const common = text();
        const [a, b] = [common + text(), common + text()];
        assert.equal(sharedPrefix(a, b), byCharacter(a, b), JSON.stringify([a, b]));
      }
    });

    test('a body that shares little with its line, and one of a write that made no change, are written whole', () => {
      const line = stampedLine(JSON.stringify({ id: 'x' }), { seq: 2, type: 'created', at: 1 });
      const short = entryOf('k', { fingerprint: 'f', at: 10, answer: { status: 201, headers: {}, body: '{"id":"x","_links":{}}' } }, 2, line);
      assert.equal(short.bp, undefined);
      assert.equal(short.b, '{"id":"x","_links":{}}');
      assert.equal(entryOf('k', { fingerprint: 'f', at: 10, answer: { status: 404, headers: {}, body: 'x'.repeat(100) } }).b, 'x'.repeat(100));
    });

    test('an answer whose line was not read (a torn batch, a line a repair dropped) is not kept, nor a malformed reference', () => {
      const { lines } = create({ id: 'x', description: 'a long enough description for a reference' }, 4);
      assert.deepEqual(read(lines.slice(0, 1)), []);
      // The line of the change replaced by another of the batch (its line lost): the reference has nothing to join.
      const other = stampedLine(JSON.stringify({ id: 'y' }), { seq: 4, type: 'created', at: 1 }).replace('"_change":"4.', '"_change":"4.');
      const wrongSeq = lines[0]!.replace('"n":4', '"n":3');
      assert.deepEqual(read([wrongSeq, other]), []);
      const tooLong = lines[0]!.replace(/"bp":\d+/, '"bp":100000');
      assert.deepEqual(read([tooLong, lines[1]!]), []);
      assert.equal(read(lines).length, 1);
    });
  });
  describe('answers held in memory as their entries (HeldAnswer)', () => {
    const texts = ['plain', '"quoted" \\ back\nslash', '\u2028 é 𝄞 ✓', '</script>', '\ud800 lone', ''];
    /** An answer to the create of `record`, its line, and the answer held by reference to the entity's line. */
    const held = (record: Record<string, unknown>, status = 201): { remembered: { fingerprint: string; at: number; answer: { status: number; headers: Record<string, string>; body: string } }; line: string; held: HeldAnswer; json: string } => {
      const json = JSON.stringify(record);
      const line = stampedLine(json, { seq: 9, type: 'created', at: 1 });
      const remembered = { fingerprint: 'fp-\u00e9"', at: 1_764_000_000_123, answer: { status, headers: { location: '/items/x', etag: '"9.abc"' }, body: `${json.slice(0, -1)},"_links":{"self":{"href":"/items/x"}}}` } };
      // The entity (anything with the line) is what the store passes: it gives the line again on a replay.
      return { remembered, line, json, held: new HeldAnswer(entryOf('["p","POST","/items","k"]', remembered, 9, line, json), { line: () => line }) };
    };

    test('a held answer gives the answer, the fingerprint and the time it was recorded with, byte for byte, its body given by reference', () => {
      for (const text of texts) {
        const { remembered, held: h } = held({ id: 'x', description: `a long enough description: ${text}`, n: 1 });
        assert.match(h.text, /"bp":\d+,"bx":/, 'the body by reference');
        assert.deepEqual(h.answer, remembered.answer);
        assert.equal(h.fingerprint, remembered.fingerprint);
        assert.equal(h.at, remembered.at);
        // What the ring keeps of it (answer-ring.ts): the line's shared start and the text's rest join as the body.
        assert.equal(h.prefix() + (JSON.parse(h.text) as { bx: string }).bx, remembered.answer.body);
        assert.equal(h.prefix().length, h.shared);
      }
    });

    test("its text is the entry the log's answers line holds, and the answers file's text its entry with the body whole", () => {
      for (const text of texts) {
        for (const status of [201, 404]) {
          const { remembered, line, json, held: h } = held({ id: 'x', description: `a long enough description: ${text}` }, status);
          const entry = status === 404 ? entryOf('["p","POST","/items","k"]', remembered) : entryOf('["p","POST","/items","k"]', remembered, 9, line, json);
          const alone = status === 404 ? new HeldAnswer(entry) : h;
          assert.equal(alone.text, JSON.stringify(entry));
          // Built independently of heldLine (answersLine itself goes through it): the line as JSON.stringify writes it.
          assert.equal(heldLine([alone, alone], 9), JSON.stringify({ _answers: remembered.at, last: 9, a: [entry, entry] }));
          assert.equal(alone.wholeText(), entryText(entryOf('["p","POST","/items","k"]', remembered)), `${text}, ${status}`);
          assert.deepEqual(JSON.parse(alone.wholeText()), { k: '["p","POST","/items","k"]', f: remembered.fingerprint, t: remembered.at, s: remembered.answer.status, h: remembered.answer.headers, b: remembered.answer.body });
        }
      }
    });

    test("answers located in an append's bytes -> each text and body's start where the bytes hold them; an append that is not ASCII -> none located", () => {
      for (const text of ['plain ascii', 'é not ascii']) {
        // As held(), with a fingerprint of ASCII (a digest is base64url).
        const ascii = (record: Record<string, unknown>, key: string): ReturnType<typeof held> => {
          const h = held(record);
          const remembered = { ...h.remembered, fingerprint: 'fp-ascii' };
          return { ...h, remembered, held: new HeldAnswer(entryOf(key, remembered, 9, h.line, h.json), { line: () => h.line }) };
        };
        const a = ascii({ id: 'x', description: `a long enough description: ${text}` }, '["p","POST","/items","a"]');
        const b = ascii({ id: 'y', description: 'another long enough description, ascii' }, '["p","POST","/items","b"]');
        const alone = new HeldAnswer(entryOf('["p","POST","/items","z"]', { ...a.remembered, answer: { ...a.remembered.answer, status: 404 } }));
        const answers = [a.held, alone, b.held];
        assert.ok(a.held.shared > 0 && b.held.shared > 0, 'bodies by reference');
        // As the store lays out an append: the answers line, then the changes' lines (b's first, then a's).
        const lines = [heldLine(answers, 10), b.line, a.line];
        const bytes = Buffer.from(`${lines.join('\n')}\n`);
        const located = locateAnswers(answers, lines, bytes, (i) => [2, undefined, 1][i]);
        assert.equal(located, !text.includes('é'), text);
        for (const h of answers) {
          if (!located) {
            assert.equal(h.bytes, undefined);
            continue;
          }
          assert.equal(h.bytes, bytes);
          assert.equal(bytes.toString('latin1', h.textAt, h.textAt + h.text.length), h.text);
          if (h.shared > 0) assert.equal(bytes.toString('latin1', h.prefixAt, h.prefixAt + h.shared), h.prefix());
        }
      }
      // A body by reference whose line the append does not name: that answer is left to be encoded, the others located.
      const a = held({ id: 'x', description: 'a long enough description, ascii' });
      const byReference = new HeldAnswer(entryOf('["p","POST","/items","a"]', { ...a.remembered, fingerprint: 'fp' }, 9, a.line, a.json), { line: () => a.line });
      const whole = new HeldAnswer(entryOf('["p","POST","/items","z"]', { ...a.remembered, fingerprint: 'fp' }));
      const lines = [heldLine([byReference, whole], 9), a.line];
      const bytes = Buffer.from(`${lines.join('\n')}\n`);
      assert.ok(locateAnswers([byReference, whole], lines, bytes, () => undefined));
      assert.equal(byReference.bytes, undefined);
      assert.equal(whole.bytes, bytes);
      assert.equal(bytes.toString('latin1', whole.textAt, whole.textAt + whole.text.length), whole.text);
    });

    test('the shared start found through the JSON a line was made from is the one found in the line itself, on 20,000 generated pairs (a fixed seed)', () => {
      let seed = 7;
      const next = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
      const alphabet = ['a', 'b', '"', '\\', '}', ',', 'é', '\ud834\udd1e', '\ud834', '_change'];
      const text = (): string => Array.from({ length: next(12) }, () => alphabet[next(alphabet.length)]).join('');
      for (let n = 0; n < 20_000; n++) {
        const json = JSON.stringify({ id: text(), v: text() });
        const line = next(4) === 0 ? json : stampedLine(json, { seq: 1 + next(50), type: 'created', at: 1 });
        const cut = next(line.length + 1);
        // A quarter of them as a representation is made: the record's JSON up to its closing brace, then more members.
        const shape = next(4);
        const body = shape === 0 ? line.slice(0, cut) + text() : shape === 1 ? `${json.slice(0, -1)},"_${text()}` : json.slice(0, cut) + text();
        assert.equal(sharedWithLine(body, line, json), sharedPrefix(body, line), JSON.stringify([body, line]));
      }
    });
  });
});
