import { QueryTimeoutError } from '../store.js';

/**
 * Work that could hold the event loop (an index build, a large query) runs as a generator that
 * yields whenever its slice of time is used up: the runner returns at once when the work fits in
 * one slice, and otherwise goes on in later turns of the event loop, so that other requests are
 * served in between (docs/conventions.md §8: no request holds the loop for more than about 10 ms). A
 * generator may also yield a Promise to wait for (an index another query is building).
 */
export const SLICE_MS = 0.5;

/** How often a loop looks at the clock: reading it costs more than one step of a loop. */
export const CHECK_EVERY = 1024;

/**
 * What the works started in one turn of the event loop may run, in all, before they first yield
 * while others wait their turn: enough for a few cheap queries to finish at once. Without this
 * bound, eight heavy requests arriving in one turn would each hold the loop for a slice.
 */
const FIRST_SLICES_MS = 0.25;

/** Milliseconds, monotonic: `performance.now()` unless a test drives time itself. */
export type Clock = () => number;

const systemClock: Clock = () => performance.now();

export class Slice {
  readonly #clock: Clock;
  #end: number;

  constructor(ms = SLICE_MS, clock: Clock = systemClock) {
    this.#clock = clock;
    this.#end = clock() + ms;
  }

  /** True when the work should yield. */
  get due(): boolean {
    return this.#clock() > this.#end;
  }

  renew(): void {
    this.#end = this.#clock() + SLICE_MS;
  }
}

export type Work<T> = Generator<Promise<unknown> | undefined, T, undefined>;

/**
 * Sliced works take turns: one slice per turn of the event loop, whatever the number of works, so
 * that a request arriving meanwhile waits for at most one slice, not one slice of every work.
 */
const waiting: (() => void)[] = [];
/**
 * Works nobody waits for (an index built ahead of need): a turn goes to one of them only when no
 * other work waits, or when `BACKGROUND_EVERY` turns in a row went to others, so that they end
 * even while requests keep the queue busy.
 */
const background: (() => void)[] = [];
const BACKGROUND_EVERY = 8;
/** Turns given to other works while a background work waited. */
let sinceBackground = 0;
let scheduled = false;

/** How a sliced work shares the loop: `background` works take the turns others leave (see above). */
export type Priority = 'foreground' | 'background';

function nextTurn(priority: Priority = 'foreground'): Promise<void> {
  return new Promise((resolve) => {
    (priority === 'background' ? background : waiting).push(resolve);
    if (!scheduled) {
      scheduled = true;
      setImmediate(runOne);
    }
  });
}

/** Time spent in first slices since the queue last ran a slice (or since the loop was idle). */
let firstSpent = 0;
let resetScheduled = false;

function resetFirst(): void {
  firstSpent = 0;
  resetScheduled = false;
}

function runOne(): void {
  scheduled = false;
  firstSpent = 0;
  // Its slice runs in this turn's microtasks; it queues itself again for a later turn if needed.
  if (background.length > 0 && (waiting.length === 0 || sinceBackground >= BACKGROUND_EVERY)) {
    sinceBackground = 0;
    background.shift()!();
  } else {
    // Counted only while a background work waits for a turn.
    sinceBackground = background.length > 0 ? sinceBackground + 1 : 0;
    waiting.shift()?.();
  }
  if (waiting.length + background.length > 0 && !scheduled) {
    scheduled = true;
    setImmediate(runOne);
  }
}

/**
 * Restarts of a work whose `revision` moved while it waited before it runs its next attempt
 * without giving up the loop between slices (`runSliced`).
 */
export const RESTARTS_BEFORE_WHOLE = 2;

/**
 * The longest an attempt runs whole (docs/conventions.md §8: no request holds the loop for more
 * than about 10 ms). One that needs more gives up turns again, and is not started over after it.
 */
export const WHOLE_MAX_MS = 10;

/**
 * Runs `start(slice)` to completion: synchronously if it never yields, else asynchronously. Past
 * `deadline` (a time of `clock`) it stops with `QueryTimeoutError`. When `layout()` changes while
 * the work waits (row numbers were renumbered), the work starts over. A `background` work never
 * runs synchronously: its first slice, like every other, waits for a turn others leave. `priority`
 * may be a function, read before each turn: a work someone comes to wait for is promoted.
 *
 * `revision`, when given, makes the answer one of a single state of the data as far as the loop
 * allows: when it moved while the work waited (a write landed between two slices), the work starts
 * over, since what it read before no longer holds together with what it would read after (a row
 * moved in an order it walks by position is skipped or met twice; an entity read at the end may no
 * longer match). A work started over `RESTARTS_BEFORE_WHOLE` times runs its next attempt whole, its
 * slices back to back in one turn (waiting only for what it yields to wait for, an index another
 * work builds), for at most `WHOLE_MAX_MS`: a query that costs less ends on one state however
 * often writes come. One that costs more (its attempt overtaken past that much work, or its whole
 * attempt past that bound) is not started over: it goes on giving up turns and ends within its
 * deadline, having cost what it did before restarts existed, and its caller, which sees the
 * revision move (the revision at the start of its last attempt, `started`, is not the one at the
 * end), knows that its answer describes no single state.
 */
export function runSliced<T>(
  start: (slice: Slice) => Work<T>,
  deadline = Infinity,
  layout: () => number = () => 0,
  clock: Clock = systemClock,
  priority: Priority | (() => Priority) = 'foreground',
  revision?: () => string,
  started?: (revision: string) => void,
): T | Promise<T> {
  const now = typeof priority === 'function' ? priority : () => priority;
  // While other works wait their turn, the new ones of this turn share a short first slice.
  const begun = clock();
  const slice = new Slice(Math.max(0, (waiting.length > 0 ? FIRST_SLICES_MS : SLICE_MS) - firstSpent), clock);
  let laidOut = layout();
  let seen = revision?.();
  if (seen !== undefined) started?.(seen);
  let work = start(slice);
  const first: IteratorResult<Promise<unknown> | undefined, T> | undefined = now() === 'background' ? undefined : work.next();
  if (first !== undefined) {
    firstSpent += clock() - begun;
    if (!resetScheduled) {
      resetScheduled = true;
      setImmediate(resetFirst);
    }
    if (first.done) return first.value;
  }
  return (async (): Promise<T> => {
    if (first === undefined) {
      await nextTurn(now());
      slice.renew();
      laidOut = layout();
    }
    /** Time the attempt has run so far (its slices'): past `WHOLE_MAX_MS`, starting it over is in vain. */
    let spent = first === undefined ? 0 : clock() - begun;
    const run = (): IteratorResult<Promise<unknown> | undefined, T> => {
      if (revision === undefined) return work.next();
      const at = clock();
      const result = work.next();
      spent += clock() - at;
      return result;
    };
    let step: IteratorResult<Promise<unknown> | undefined, T> = first ?? run();
    let restarts = 0;
    /** When the attempt running whole began (a time of `clock`); undefined: it gives up turns. */
    let whole: number | undefined;
    /** Past its whole attempt's bound: not started over again, whatever lands. */
    let settled = false;
    for (;;) {
      if (step.done) return step.value;
      // Whether the loop turned: only then can a write have landed.
      let waited = true;
      if (step.value !== undefined) await waitUntil(step.value, deadline, clock);
      else if (whole !== undefined && clock() - whole < WHOLE_MAX_MS) waited = false;
      else {
        if (whole !== undefined) {
          whole = undefined;
          settled = true;
        }
        await nextTurn(now());
      }
      if (clock() > deadline) {
        work.return(undefined as T);
        throw new QueryTimeoutError('the query ran past its deadline');
      }
      slice.renew();
      let moved = waited && !settled && revision !== undefined && revision() !== seen;
      // An attempt that has run longer than a whole one may would not end on one state either:
      // it goes on, and is not started over (its answer then names no revision).
      if (moved && spent > WHOLE_MAX_MS) {
        moved = false;
        settled = true;
      }
      if (layout() !== laidOut || moved) {
        // Start over against the new layout, once per change of it, or the new state of the data.
        laidOut = layout();
        if (revision !== undefined) {
          seen = revision();
          started?.(seen);
        }
        if (moved && ++restarts >= RESTARTS_BEFORE_WHOLE) whole = clock();
        spent = 0;
        work.return(undefined as T);
        work = start(slice);
      }
      step = run();
    }
  })();
}

async function waitUntil(promise: Promise<unknown>, deadline: number, clock: Clock): Promise<void> {
  if (deadline === Infinity) {
    await promise;
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, deadline - clock()));
  });
  try {
    await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
