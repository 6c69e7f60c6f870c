import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { admitsOnlyForms, FORMS_OFFERED_TYPES, isAcceptedContentType, mediaTypeOf, negotiate, parseAccept, prefersHtml } from '../../src/http/negotiation.js';

describe('negotiate', () => {
  for (const [accept, expected] of [
    [undefined, 'application/hal+json'],
    ['', 'application/hal+json'],
    ['*/*', 'application/hal+json'],
    ['application/*', 'application/hal+json'],
    ['application/hal+json', 'application/hal+json'],
    ['APPLICATION/JSON', 'application/json'],
    ['application/json', 'application/json'],
    ['application/json;q=0.9, application/hal+json;q=0.8', 'application/json'],
    ['application/hal+json;q=0.1, */*;q=0.5', 'application/json'],
    ['text/html, */*;q=0.1', 'application/hal+json'],
    ['nonsense', 'application/hal+json'],
    ['text/html', undefined],
    ['application/json;q=0', undefined],
    ['*/*;q=0', undefined],
    ['application/xml, text/*', undefined],
    ['application/json;q=2', undefined],
  ] as const) {
    test(`Accept ${JSON.stringify(accept)} -> ${expected ?? '406'}`, () => assert.equal(negotiate(accept), expected));
  }
});

describe('parseAccept', () => {
  test('ranges with q, malformed members skipped -> parsed list', () => {
    assert.deepEqual(parseAccept('text/html;level=1, application/json ;q=0.5, bogus, /x'), [
      { type: 'text', subtype: 'html', q: 1 },
      { type: 'application', subtype: 'json', q: 0.5 },
    ]);
  });
});

describe('Content-Type', () => {
  for (const [header, media] of [
    [undefined, ''],
    ['application/json', 'application/json'],
    ['Application/JSON; charset=UTF-8', 'application/json'],
    ['  application/merge-patch+json ;x=y', 'application/merge-patch+json'],
  ] as const) {
    test(`mediaTypeOf ${JSON.stringify(header)} -> ${JSON.stringify(media)}`, () => assert.equal(mediaTypeOf(header), media));
  }
  for (const [header, accepted, ok] of [
    ['application/json; charset=utf-8', ['application/json'], true],
    ['text/json', ['application/json'], false],
    [undefined, ['application/json'], false],
    ['application/merge-patch+json', ['application/json'], false],
    ['application/merge-patch+json', ['application/json', 'application/merge-patch+json'], true],
  ] as const) {
    test(`${JSON.stringify(header)} against ${accepted.join('|')} -> ${ok}`, () => assert.equal(isAcceptedContentType(header, accepted), ok));
  }
});

describe('prefersHtml (docs/conventions.md §4.1)', () => {
  for (const [accept, expected] of [
    [undefined, false],
    ['*/*', false],
    ['application/hal+json', false],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', true],
    ['text/html', true],
    ['text/*', false],
    ['text/html, application/json', false],
    ['text/html, */*', false],
    ['text/html;q=0.5, application/json;q=0.4', true],
    ['text/html;q=0', false],
    ['application/json;q=0.9, text/html', true],
  ] as const) {
    test(`${JSON.stringify(accept)} -> ${expected}`, () => assert.equal(prefersHtml(accept), expected));
  }
});

describe('negotiate where HAL-FORMS is offered too (collections and entities)', () => {
  const FORMS = 'application/prs.hal-forms+json';
  for (const [accept, expected] of [
    [undefined, 'application/hal+json'],
    ['*/*', 'application/hal+json'],
    ['application/*', 'application/hal+json'],
    ['application/json', 'application/json'],
    [`application/hal+json, ${FORMS}`, 'application/hal+json'],
    [FORMS, FORMS],
    [`${FORMS};q=1.0, application/hal+json;q=0.9, application/json;q=0.7, text/html;q=0.6`, FORMS],
    ['text/html', undefined],
  ] as const) {
    test(`Accept ${JSON.stringify(accept)} -> ${expected ?? '406'}`, () => assert.equal(negotiate(accept, FORMS_OFFERED_TYPES), expected));
  }
  for (const [accept, expected] of [
    [undefined, false],
    ['*/*', false],
    [FORMS, true],
    [`${FORMS}, text/plain`, true],
    [`${FORMS}, application/hal+json;q=0.1`, false],
    [`${FORMS}, */*;q=0.1`, false],
    ['application/json', false],
  ] as const) {
    test(`admitsOnlyForms(${JSON.stringify(accept)}) -> ${expected}`, () => assert.equal(admitsOnlyForms(accept), expected));
  }
  test('text/html preferred over HAL-FORMS only when its q is higher -> the HTML shell', () => {
    assert.equal(prefersHtml(`${FORMS}, text/html;q=0.9`), false);
    assert.equal(prefersHtml(`text/html, ${FORMS};q=0.9`), true);
  });
});
