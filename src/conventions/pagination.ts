import { badRequest, pageOutOfRange } from './problem.js';

/** docs/conventions.md §3 defaults and the seed's maximum (docs/conventions.md §3 rule 1, docs/conventions.md §3). */
export const DEFAULT_PAGE = 1;
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 200;

/** A requested page, as parsed: `page` is not yet checked against the collection's range. */
export interface PageRequest {
  readonly page: number;
  readonly limit: number;
}

/** Where a page sits in a collection of `total` items. */
export interface PageRange {
  readonly total: number;
  readonly page: number;
  readonly limit: number;
  readonly pages: number;
  /** Position of the page's first item. */
  readonly offset: number;
  /** Items on this page. */
  readonly count: number;
}

const INTEGER = /^-?[0-9]+$/;

function parseInteger(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!INTEGER.test(value)) throw badRequest(`Query parameter ${name} must be a base-10 integer`);
  return Number(value);
}

/**
 * Parses `page` and `limit` (docs/conventions.md §3): defaults 1 and 20; a limit over 200 is clamped to 200;
 * a value that is not a base-10 integer, or a limit under 1, is a 400 problem naming the parameter.
 * A page beyond 2^53 - 1 is refused too: the 409 document could not state it as the integer it is.
 */
export function parsePageRequest(page: string | undefined, limit: string | undefined): PageRequest {
  const parsedLimit = parseInteger('limit', limit, DEFAULT_LIMIT);
  if (parsedLimit < 1) throw badRequest('Query parameter limit must be at least 1');
  const parsedPage = parseInteger('page', page, DEFAULT_PAGE);
  if (!Number.isSafeInteger(parsedPage)) throw badRequest(`Query parameter page must be at most ${Number.MAX_SAFE_INTEGER}`);
  return { page: parsedPage, limit: Math.min(parsedLimit, MAX_LIMIT) };
}

/** `max(1, ceil(total / limit))`: an empty collection still has its one, empty, page (docs/conventions.md §3). */
export function pageCount(total: number, limit: number): number {
  return Math.max(1, Math.ceil(total / limit));
}

/** Locates a page in a collection of `total` items; a page outside 1..pages is the seed's 409 (docs/conventions.md §7). */
export function pageRange(total: number, request: PageRequest): PageRange {
  const { page, limit } = request;
  const pages = pageCount(total, limit);
  if (page < 1 || page > pages) throw pageOutOfRange(pages, page);
  const offset = (page - 1) * limit;
  return { total, page, limit, pages, offset, count: Math.max(0, Math.min(limit, total - offset)) };
}
