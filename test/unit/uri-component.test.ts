import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeComponent } from '../../src/conventions/uri-component.js';

test('encodeComponent -> encodeURIComponent for well-formed text; a lone surrogate (either half) as U+FFFD, pairs kept', () => {
  for (const text of ['', 'a b/c?d', 'é', '😀', 'a,b[c]']) assert.equal(encodeComponent(text), encodeURIComponent(text));
  assert.equal(encodeComponent('\ud800'), '%EF%BF%BD');
  assert.equal(encodeComponent('a\udc00b'), 'a%EF%BF%BDb');
  assert.equal(encodeComponent('\udc00\ud83d\ude00\ud83d'), '%EF%BF%BD%F0%9F%98%80%EF%BF%BD');
});
