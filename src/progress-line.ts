/**
 * A progress line for a long command on a terminal: rewritten in place (carriage return, then
 * "erase to end of line") at most every `intervalMs`, and cleared before the command's own output.
 * On anything but a terminal it writes nothing: a log gets the command's summary line alone.
 */

/** ECMA-48: CR goes back to column 1, `CSI K` erases to the end of the line. */
const REWRITE = '\r\x1b[K';

/** Where the line goes: a stream that may be a terminal (process.stderr). */
export interface ProgressOutput {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

export class ProgressLine {
  readonly #out: ProgressOutput;
  readonly #now: () => number;
  readonly #intervalMs: number;
  #last = -Infinity;
  #shown = false;

  constructor(out: ProgressOutput, intervalMs = 100, now: () => number = () => performance.now()) {
    this.#out = out;
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /** Shows `text` in place of the line shown before, unless one was shown less than `intervalMs` ago (`force` shows it anyway). */
  update(text: string, force = false): void {
    if (this.#out.isTTY !== true) return;
    const now = this.#now();
    if (!force && now - this.#last < this.#intervalMs) return;
    this.#last = now;
    this.#shown = true;
    this.#out.write(`${REWRITE}${text}`);
  }

  /** Erases the line, if one is shown. */
  clear(): void {
    if (!this.#shown) return;
    this.#shown = false;
    this.#out.write(REWRITE);
  }
}

/** `1234567` → `1,234,567`. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** `count(n)` and the noun, singular for one: `1 entity`, `2,000 entities`. */
export function counted(n: number, one: string, many: string): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/** `done of total` with a percentage: `412,000 / 1,000,000 (41%)`. */
export function fraction(done: number, total: number): string {
  const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
  return `${count(done)} / ${count(total)} (${percent}%)`;
}
