/**
 * `HALSERVE_*` variables that nothing reads. A misspelled one (`HALSERVE_TOKEN` for
 * `HALSERVE_TOKENS`) is otherwise ignored without a word, and the operator believes the server
 * has tokens, a rate limit or full durability when it has not. Each such name is said on stderr at
 * start-up, with the known name it is closest to; start-up goes on, since a variable under the
 * prefix may be another tool's (a wrapper script's, a deployment's own): a warning is enough to
 * be seen, a refusal would break such a setup for a name halserve never needed.
 *
 * Only names are said, never a value: an unknown variable may well be a secret under a misspelled
 * name (of `HALSERVE_TOKENS`, `HALSERVE_WEBHOOK_SECRET`), and no rule on names can tell which.
 */
import { OPTIONS } from './config.js';

export const PREFIX = 'HALSERVE_';

/**
 * The `HALSERVE_*` variables read outside the server's options (`OPTIONS`, src/config.ts), each
 * with what reads it. They are in the environment a server is started from (the container's
 * entrypoint execs the server with its own; a test or a benchmark starts servers with theirs), so
 * they are known here too, or every such start would warn. `halserve backup`, `import` and
 * `export` read `HALSERVE_DATA` and `HALSERVE_STORE`, which are options already.
 * test/unit/unknown-variables.test.ts checks that every name the repository mentions is known.
 */
export const OTHER_VARIABLES: Readonly<Record<string, string>> = {
  HALSERVE_SEED: 'docker/entrypoint.sh: whether an empty volume gets the demo data',
  HALSERVE_PG_BIN: "test/helpers/pg-cluster.ts: PostgreSQL's binaries for the tests",
  HALSERVE_QA_SLOW: 'test/robustness: run the slow tests',
  HALSERVE_QA_FUZZ_SEED: "test/robustness/fuzz.test.ts: the fuzzer's seed",
  HALSERVE_QA_STORED_SEED: "test/robustness/stored-values.test.ts: the schedule's seed",
  HALSERVE_CONTAINER_TESTS: 'test/container/run.sh: which container tests run',
  HALSERVE_CONTAINER_KEEP: 'test/container/run.sh: keep the temporary directory',
  HALSERVE_TEST_IMAGE: 'test/container: the image under test',
  HALSERVE_TEST_REPO: 'test/container: the repository the image was built from',
  HALSERVE_TEST_TIMINGS: "test/container: where the tests' timings are written",
  HALSERVE_SRC: 'bench/body-shape.ts: another copy of src/ to measure',
  HALSERVE_KEEP_SCREENSHOTS: "test/browser/browser.test.ts: keep the walk-through's screenshots",
};

/** Every `HALSERVE_*` name something of halserve reads. */
export const KNOWN_VARIABLES: ReadonlySet<string> = new Set([
  ...OPTIONS.flatMap((option) => option.env.filter((name) => name.startsWith(PREFIX))),
  ...Object.keys(OTHER_VARIABLES),
]);

/**
 * The optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbours each cost 1, which covers the usual slips (`DURABILTY`, `RATELIMIT`, `TOKNES`).
 */
export function editDistance(a: string, b: string): number {
  // Three rows of the table suffice: the one being filled and the two above it (for a swap).
  let before = new Array<number>(b.length + 1).fill(0);
  let above = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      row.push(best);
    }
    before = above;
    above = row;
  }
  return above[b.length]!;
}

/**
 * The known names nearest to `name`, or none when even the nearest is too far to be a slip: at
 * most 2 edits, and at most one for every 3 characters after the prefix (so that `FOO` does not
 * suggest `LOG`). Letter case is no difference here: `HALSERVE_Tokens` is near `HALSERVE_TOKENS`.
 */
export function nearestKnown(name: string, known: Iterable<string> = KNOWN_VARIABLES): string[] {
  const wanted = name.toUpperCase().slice(PREFIX.length);
  let best = Infinity;
  let nearest: string[] = [];
  for (const candidate of known) {
    const rest = candidate.slice(PREFIX.length);
    const distance = editDistance(wanted, rest);
    if (distance > Math.min(2, Math.floor(Math.max(wanted.length, rest.length) / 3))) continue;
    if (distance < best) [best, nearest] = [distance, [candidate]];
    else if (distance === best) nearest.push(candidate);
  }
  return nearest.sort();
}

/** The longest name said as it is; a longer one is cut, so that one line stays a line. */
const MAX_SHOWN = 80;

/**
 * `name` as a warning may show it: a name is the operator's, not a secret, but it may hold any
 * character but `=` (a line break would forge a second line of the log), so one that is not plain
 * letters, digits and `_` is quoted as JSON, and a very long one is cut.
 */
function shown(name: string): string {
  const cut = name.length > MAX_SHOWN ? `${name.slice(0, MAX_SHOWN)}…` : name;
  return /^[A-Za-z0-9_]+$/.test(name) ? cut : JSON.stringify(cut);
}

/**
 * One warning per variable of `env` that starts with `HALSERVE_` and is not known, in name order
 * (without the `halserve: ` every warning starts with). Names only: no value is ever said.
 */
export function unknownVariableWarnings(env: Readonly<Record<string, string | undefined>>): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith(PREFIX) && !KNOWN_VARIABLES.has(name))
    .sort()
    .map((name) => {
      const nearest = nearestKnown(name);
      const hint = nearest.length > 0 ? `did you mean ${nearest.join(' or ')}?` : 'halserve --help lists the variables it reads';
      return `${shown(name)} is set, but halserve reads no such variable (ignored): ${hint}`;
    });
}
