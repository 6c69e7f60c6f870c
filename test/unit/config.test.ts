import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, HELP, isLoopback, parseConfig, resourceNameProblem } from '../../src/config.js';

const DEFAULTS = {
  port: 8080,
  host: '127.0.0.1',
  data: './data',
  store: undefined,
  resources: [],
  tokens: [],
  jwks: undefined,
  jwtIssuer: undefined,
  jwtAudience: undefined,
  noAuth: false,
  log: 'json',
  durability: 'full',
  repair: false,
  maxBody: 1048576,
  queryBudgetMs: 5000,
  maxBodyValues: 2500,
  maxBodyMembers: 1000,
  basePath: '',
  corsOrigin: undefined,
  rateLimit: undefined,
  rateLimitBurst: undefined,
  changesRetentionMs: 7 * 86_400_000,
  maxStreams: 10_000,
  maxStreamsPerClient: 1_000,
  webhooks: [],
  webhookSecret: undefined,
  webhookResources: [],
  webhookLeaseMs: 15_000,
  idempotencyAnswers: 100_000,
  idempotencyMemory: 64 * 1024 * 1024,
  help: false,
};

const pick = (c: { idempotencyAnswers: number; idempotencyMemory: number }) => ({ idempotencyAnswers: c.idempotencyAnswers, idempotencyMemory: c.idempotencyMemory });

describe('parseConfig', () => {
  test('nothing -> defaults', () => assert.deepEqual(parseConfig([], {}), DEFAULTS));

  test('--changes-retention / HALSERVE_CHANGES_RETENTION -> milliseconds; anything but a positive whole number and s, m, h or d -> ConfigError', () => {
    assert.equal(parseConfig([], { HALSERVE_CHANGES_RETENTION: '24h' }).changesRetentionMs, 86_400_000);
    assert.equal(parseConfig(['--changes-retention=30s'], { HALSERVE_CHANGES_RETENTION: '24h' }).changesRetentionMs, 30_000);
    for (const bad of ['0d', '7', 'd', '1.5h', '7 d', '-1h', '1w', '07d', '99999999999d']) {
      assert.throws(() => parseConfig(['--changes-retention', bad], {}), { name: 'ConfigError', message: /^--changes-retention must be a whole number followed by s, m, h or d/ }, bad);
    }
  });

  test('--idempotency-answers / --idempotency-memory (and their variables) -> the file store\'s bounds; a bad value, or either with PostgreSQL -> ConfigError', () => {
    assert.deepEqual(
      pick(parseConfig(['--idempotency-answers', '2000000', '--idempotency-memory=1GiB'], {})),
      { idempotencyAnswers: 2_000_000, idempotencyMemory: 1024 ** 3 },
    );
    assert.deepEqual(
      pick(parseConfig([], { HALSERVE_IDEMPOTENCY_ANSWERS: '500', HALSERVE_IDEMPOTENCY_MEMORY: '256MiB' })),
      { idempotencyAnswers: 500, idempotencyMemory: 256 * 1024 ** 2 },
    );
    assert.equal(parseConfig(['--idempotency-memory', '2048KiB'], {}).idempotencyMemory, 2 * 1024 ** 2);
    assert.equal(parseConfig(['--idempotency-memory', '1048576'], {}).idempotencyMemory, 1024 ** 2);
    for (const bad of ['0', '-1', '1.5', '10000001', '1e6', ' 5']) {
      assert.throws(() => parseConfig(['--idempotency-answers', bad], {}), { name: 'ConfigError', message: /^--idempotency-answers must be a whole number from 1 to 10000000/ }, bad);
    }
    for (const bad of ['512KiB', '2GiB', '64MB', '1.5MiB', 'MiB', '0MiB', '64 MiB', '1048575']) {
      assert.throws(() => parseConfig([], { HALSERVE_IDEMPOTENCY_MEMORY: bad }), { name: 'ConfigError', message: /^HALSERVE_IDEMPOTENCY_MEMORY must be a size from 1MiB to 1GiB/ }, bad);
    }
    assert.throws(() => parseConfig(['--store', 'postgres://db/x', '--idempotency-answers', '5'], {}), { name: 'ConfigError', message: /^--idempotency-answers bounds the answers the file store keeps in memory; on PostgreSQL/ });
    assert.throws(() => parseConfig([], { DATABASE_URL: 'postgres://db/x', HALSERVE_IDEMPOTENCY_MEMORY: '1GiB' }), { name: 'ConfigError', message: /^HALSERVE_IDEMPOTENCY_MEMORY bounds/ });
  });

  test('DATABASE_URL -> the store; HALSERVE_STORE wins over it, --store over both', () => {
    assert.equal(parseConfig([], { DATABASE_URL: 'postgres://a/db' }).store, 'postgres://a/db');
    assert.equal(parseConfig([], { DATABASE_URL: 'postgres://a/db', HALSERVE_STORE: 'postgres://b/db' }).store, 'postgres://b/db');
    assert.equal(parseConfig(['--store=postgres://c/db'], { HALSERVE_STORE: 'postgres://b/db' }).store, 'postgres://c/db');
  });

  test('--store that is not a postgres:// URL -> ConfigError naming where it came from', () => {
    assert.throws(() => parseConfig(['--store', './data'], {}), { name: 'ConfigError', message: /^--store must be a postgres:\/\/ \(or postgresql:\/\/\) URL/ });
    assert.throws(() => parseConfig([], { DATABASE_URL: 'mysql://db/x' }), { name: 'ConfigError', message: /^DATABASE_URL must be a postgres:\/\// });
  });

  test('every flag -> its value', () => {
    const argv = ['--port', '0', '--host=0.0.0.0', '--data', '/d', '--resource', 'a', '--resource=b,c', '--token', 't1', '--token', 'read:t2', '--jwks', 'https://idp.example/jwks', '--jwt-issuer', 'https://idp.example/', '--jwt-audience', 'halserve', '--no-auth', '--log', 'off', '--durability', 'none', '--repair', '--max-body', '10', '--max-body-values', '20', '--max-body-members=3', '--query-budget', '250', '--base-path', '/api', '--cors-origin', '*', '--rate-limit', '2.5', '--rate-limit-burst', '10', '--store', 'postgres://u@db:5432/shop', '--changes-retention', '10m', '--max-streams', '3', '--max-streams-per-client', '2', '--webhook', 'https://a.example/h', '--webhook=http://b.example/h', '--webhook-secret', 'a secret of 24 characters', '--webhook-resource', 'a', '--webhook-lease', '3s', '--help'];
    assert.deepEqual(parseConfig(argv, {}), {
      port: 0,
      host: '0.0.0.0',
      data: '/d',
      store: 'postgres://u@db:5432/shop',
      resources: ['a', 'b', 'c'],
      tokens: ['t1', 'read:t2'],
      jwks: 'https://idp.example/jwks',
      jwtIssuer: 'https://idp.example/',
      jwtAudience: 'halserve',
      noAuth: true,
      log: 'off',
      durability: 'none',
      repair: true,
      maxBody: 10,
      queryBudgetMs: 250,
      maxBodyValues: 20,
      maxBodyMembers: 3,
      basePath: '/api',
      corsOrigin: '*',
      rateLimit: 2.5,
      changesRetentionMs: 600_000,
      maxStreams: 3,
      maxStreamsPerClient: 2,
      rateLimitBurst: 10,
      webhooks: ['https://a.example/h', 'http://b.example/h'],
      webhookSecret: 'a secret of 24 characters',
      webhookResources: ['a'],
      webhookLeaseMs: 3_000,
      // Bounds of the file store, refused with --store: their own test above.
      idempotencyAnswers: 100_000,
      idempotencyMemory: 64 * 1024 * 1024,
      help: true,
    });
  });

  test('every variable -> its value', () => {
    const env = {
      HALSERVE_PORT: '9000',
      HALSERVE_HOST: '::1',
      HALSERVE_DATA: '/x',
      HALSERVE_RESOURCES: 'a, b',
      HALSERVE_TOKENS: 't1,read:t2',
      HALSERVE_JWKS: '/etc/halserve/jwks.json',
      HALSERVE_JWT_ISSUER: 'iss',
      HALSERVE_JWT_AUDIENCE: 'aud',
      HALSERVE_NO_AUTH: '1',
      HALSERVE_LOG: 'off',
      HALSERVE_DURABILITY: 'none',
      HALSERVE_REPAIR: 'true',
      HALSERVE_MAX_BODY: '5',
      HALSERVE_QUERY_BUDGET: '7',
      HALSERVE_MAX_BODY_VALUES: '50',
      HALSERVE_MAX_BODY_MEMBERS: '7',
      HALSERVE_BASE_PATH: '/b',
      HALSERVE_CORS_ORIGIN: 'https://a.example',
      HALSERVE_RATE_LIMIT: '50',
      HALSERVE_RATE_LIMIT_BURST: '100',
      HALSERVE_STORE: 'postgresql://db/x',
      HALSERVE_WEBHOOKS: 'https://a.example/h, https://a.example/h,http://b.example/h',
      HALSERVE_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      HALSERVE_WEBHOOK_RESOURCES: 'a,b',
      HALSERVE_WEBHOOK_LEASE: '20s',
    };
    assert.deepEqual(parseConfig([], env), {
      ...DEFAULTS,
      port: 9000,
      host: '::1',
      data: '/x',
      store: 'postgresql://db/x',
      resources: ['a', 'b'],
      tokens: ['t1', 'read:t2'],
      jwks: '/etc/halserve/jwks.json',
      jwtIssuer: 'iss',
      jwtAudience: 'aud',
      noAuth: true,
      log: 'off',
      durability: 'none',
      repair: true,
      maxBody: 5,
      queryBudgetMs: 7,
      maxBodyValues: 50,
      maxBodyMembers: 7,
      basePath: '/b',
      corsOrigin: 'https://a.example',
      rateLimit: 50,
      rateLimitBurst: 100,
      webhooks: ['https://a.example/h', 'http://b.example/h'],
      webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      webhookResources: ['a', 'b'],
      webhookLeaseMs: 20_000,
    });
  });

  for (const [argv, message] of [
    [['--jwks', 'keys.json', '--jwt-audience', 'a'], /^--jwks needs --jwt-issuer/],
    [['--jwks', 'keys.json', '--jwt-issuer', 'i'], /^--jwks needs --jwt-audience/],
    [['--jwt-issuer', 'i'], /^--jwt-issuer needs --jwks$/],
    [['--store', 'postgres://db/x', '--webhook-lease', '5s'], /^--webhook-lease needs --webhook \(HALSERVE_WEBHOOKS\): the URLs to deliver to$/],
    [['--jwt-audience', 'a'], /^--jwt-audience needs --jwks$/],
    [['--jwks', 'http://idp.example/jwks', '--jwt-issuer', 'i', '--jwt-audience', 'a'], /^--jwks: http:\/\/idp.example is neither https nor http on a loopback address/],
    [['--jwks', 'ftp://127.0.0.1/jwks', '--jwt-issuer', 'i', '--jwt-audience', 'a'], /^--jwks: ftp:\/\/127.0.0.1 is neither https/],
  ] as const) {
    test(`${argv.join(' ')} -> ConfigError ${message}`, () => assert.throws(() => parseConfig(argv, {}), { name: 'ConfigError', message }));
  }

  for (const url of ['http://127.0.0.1:8081/jwks', 'http://localhost/jwks', 'http://[::1]:9/k', 'https://idp.example/jwks']) {
    test(`--jwks ${url} -> accepted`, () => assert.equal(parseConfig(['--jwks', url, '--jwt-issuer', 'i', '--jwt-audience', 'a'], {}).jwks, url));
  }

  test('PORT and HOST -> used when HALSERVE_ ones are absent', () => {
    const c = parseConfig([], { PORT: '1234', HOST: '0.0.0.0' });
    assert.equal(c.port, 1234);
    assert.equal(c.host, '0.0.0.0');
  });

  test('flag and variable -> the flag wins', () => {
    const c = parseConfig(['--port', '1', '--token', 'f', '--no-auth=0'], { HALSERVE_PORT: '2', HALSERVE_TOKENS: 'e', HALSERVE_NO_AUTH: '1' });
    assert.equal(c.port, 1);
    assert.deepEqual(c.tokens, ['f']);
    assert.equal(c.noAuth, false);
  });

  for (const [argv, env, message] of [
    [['--port', 'x'], {}, '--port must be a whole number from 0 to 65535, not "x"'],
    [['--port', '70000'], {}, '--port must be a whole number from 0 to 65535, not "70000"'],
    [[], { HALSERVE_PORT: '-1' }, 'HALSERVE_PORT must be a whole number from 0 to 65535, not "-1"'],
    [['--log', 'loud'], {}, '--log must be one of json, off, not "loud"'],
    [['--durability', 'some'], {}, '--durability must be one of full, none, not "some"'],
    [['--max-body', '0'], {}, '--max-body must be a whole number from 1 to 1073741824, not "0"'],
    [['--query-budget', '0'], {}, '--query-budget must be a whole number from 1 to 3600000, not "0"'],
    [['--max-body-values', '0'], {}, '--max-body-values must be a whole number from 1 to 1000000000, not "0"'],
    [[], { HALSERVE_MAX_BODY_MEMBERS: '1e3' }, 'HALSERVE_MAX_BODY_MEMBERS must be a whole number from 1 to 1000000000, not "1e3"'],
    [['--bogus'], {}, 'unknown option --bogus (see --help)'],
    [['stray'], {}, 'unexpected argument "stray" (see --help)'],
    [['--data'], {}, '--data needs a value'],
    [[], { HALSERVE_NO_AUTH: 'maybe' }, 'HALSERVE_NO_AUTH must be 1 or 0 (true or false), not "maybe"'],
    [['--cors-origin', 'https://app.example/'], {}, '--cors-origin must be * or an origin as a browser sends it, such as https://app.example.com (scheme, host and port only: no path, no trailing slash), not "https://app.example/"; did you mean "https://app.example"?'],
    [[], { HALSERVE_CORS_ORIGIN: 'notanorigin' }, 'HALSERVE_CORS_ORIGIN must be * or an origin as a browser sends it, such as https://app.example.com (scheme, host and port only: no path, no trailing slash), not "notanorigin"'],
    [['--cors-origin', 'HTTPS://App.Example:443'], {}, '--cors-origin must be * or an origin as a browser sends it, such as https://app.example.com (scheme, host and port only: no path, no trailing slash), not "HTTPS://App.Example:443"; did you mean "https://app.example"?'],
  ] as const) {
    test(`${JSON.stringify(argv)} ${JSON.stringify(env)} -> ConfigError`, () => {
      assert.throws(() => parseConfig(argv, env), (e: unknown) => e instanceof ConfigError && e.message === message);
    });
  }

  test('HELP -> names every flag and variable', () => {
    for (const word of ['--port', '--host', '--data', '--resource', '--token', '--no-auth', '--log', '--durability', '--repair', '--max-body', '--max-body-values', '--max-body-members', 'HALSERVE_MAX_BODY_VALUES', '--base-path', '--cors-origin', 'HALSERVE_TOKENS', 'PORT']) {
      assert.ok(HELP.includes(word), word);
    }
  });
});

describe('resourceNameProblem', () => {
  for (const name of ['products', 'a', 'order-lines', 'line_items2', 'x'.repeat(64)]) {
    test(`${name.slice(0, 20)} -> valid`, () => assert.equal(resourceNameProblem(name), undefined));
  }
  for (const [name, problem] of [
    ['Products', 'invalid'],
    ['1abc', 'invalid'],
    ['', 'invalid'],
    ['../etc', 'invalid'],
    ['a.b', 'invalid'],
    ['x'.repeat(65), 'invalid'],
    ['v1', 'reserved'],
    ['healthz', 'reserved'],
    ['readyz', 'reserved'],
    ['metrics', 'reserved'],
    ['ping', 'reserved'],
    ['me', 'reserved'],
  ] as const) {
    test(`${JSON.stringify(name.slice(0, 20))} -> ${problem}`, () => assert.match(resourceNameProblem(name) ?? '', new RegExp(problem)));
  }
});

describe('isLoopback', () => {
  for (const [host, loopback] of [
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['::1', true],
    ['[::1]', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['192.168.1.4', false],
    ['example.com', false],
  ] as const) {
    test(`${host} -> ${loopback}`, () => assert.equal(isLoopback(host), loopback));
  }
});

test('--help -> every option line has its help after a space, however long its name', () => {
  const lines = HELP.split('\n').filter((l) => l.startsWith('  --'));
  assert.ok(lines.length > 20);
  for (const line of lines) {
    const meta = /^ {2}--([a-z-]+)/.exec(line)![1]!.toUpperCase();
    // `--name NAME help`: the value's name in capitals, then a space.
    if (line.includes(` ${meta}`)) assert.ok(line.includes(` ${meta} `), line);
    assert.doesNotMatch(line, / VALUE[^ ]/, line);
  }
  assert.match(HELP, /--max-body-values MAX-BODY-VALUES most JSON values/);
});
