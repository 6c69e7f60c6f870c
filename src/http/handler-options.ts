import { basePathProblem, corsOriginProblem, resourceNameProblem } from '../config.js';
import type { HandlerOptions } from './app.js';

/**
 * The checks `createHandler` makes of an embedder's options before it builds anything (README,
 * "Embedding"): what the CLI's `parseConfig` refuses for its flags, refused here too, with an error
 * that names the option, rather than a server that shadows a resource, writes links no client can
 * follow, or refuses every request. Pure: throws, or returns nothing.
 */
export function checkHandlerOptions(options: HandlerOptions): void {
  const served = new Set<string>();
  for (const { name } of options.resources) {
    const problem = resourceNameProblem(name);
    if (problem !== undefined) throw new TypeError(`createHandler: ${problem}`);
    if (served.has(name)) throw new TypeError(`createHandler: resource name ${JSON.stringify(name)} is given twice`);
    served.add(name);
  }
  if (options.basePath !== undefined) {
    const problem = basePathProblem(options.basePath);
    if (problem !== undefined) throw new TypeError(`createHandler: ${problem}`);
  }
  if (options.corsOrigin !== undefined) {
    const problem = corsOriginProblem(options.corsOrigin);
    if (problem !== undefined) throw new TypeError(`createHandler: corsOrigin ${problem}`);
  }
  for (const key of ['maxBodyBytes', 'maxBodyValues', 'maxBodyMembers'] as const) {
    const value = options[key];
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 1)) throw new RangeError(`createHandler: ${key} must be a whole number of at least 1, not ${String(value)}`);
  }
  const budget = options.queryBudgetMs;
  if (budget !== undefined && !(Number.isFinite(budget) && budget > 0)) throw new RangeError(`createHandler: queryBudgetMs must be a number of milliseconds greater than 0, not ${String(budget)}`);
  const rate = options.rateLimit;
  if (rate !== undefined && !(rate > 0)) throw new RangeError(`createHandler: rateLimit must be a number of requests per second greater than 0, not ${String(rate)}`);
  const burst = options.rateLimitBurst;
  if (burst !== undefined) {
    if (rate === undefined) throw new TypeError('createHandler: rateLimitBurst needs rateLimit');
    // A bucket that never holds a whole request refuses every one.
    if (!(Number.isFinite(burst) && burst >= 1)) throw new RangeError(`createHandler: rateLimitBurst must be a number of requests of at least 1, not ${String(burst)}`);
  }
  if (options.authenticator !== undefined && typeof (options.authenticator as { authenticate?: unknown }).authenticate !== 'function') {
    throw new TypeError('createHandler: authenticator must be an object with an authenticate(headers) method');
  }
}
