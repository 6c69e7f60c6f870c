import { valueAt } from '../../conventions/query.js';
import { IndexLimitError, type StoredEntity } from '../store.js';
import { FieldIndex, NO_ROW } from './field-index.js';
import type { Rows } from './rows.js';
import { CHECK_EVERY, runSliced, type Priority, type Slice, type Work } from './slices.js';
import { TextBuilder, type TextIndex } from './text-index.js';

/** A text index being built. */
interface TextFill<E> {
  readonly text: TextBuilder;
  /** Rows below it have been indexed. */
  cursor: number;
  /** For rows written after the build indexed them: the entity it indexed (undefined: none). */
  readonly seen: Map<number, E | undefined>;
}

/**
 * Fields of one resource that may have an index at once: each holds a value for every entity
 * (about 1 MiB per 100,000) and is kept current by every write, so a client naming ever new fields
 * in filters or sorts would otherwise grow them without end. Past it, the index used least lately
 * goes (a query naming its field again builds it again), never one that a query under way reads.
 * Above what one query may name (64 filters, 32 sort keys and 8 facets: conventions/query.ts), so
 * that every query the limits allow can be answered.
 */
export const MAX_FIELD_INDEXES = 128;

/**
 * The indexes a query engine reads: a field index per path and the text index, each built on
 * first use (in slices, the event loop free between them, while writes go on) and then kept
 * current by every write and re-pack of the rows.
 *
 * A build reads the rows as they are when its slices run, so a row written meanwhile may be
 * indexed in its old or its new state: every row written while any build runs is remembered
 * (`#touched`) and brought up to date from the rows when the build ends. A re-pack renumbers
 * the rows: built indexes follow it (`remap`), and a build waiting between slices starts over
 * (`runSliced` watches the layout).
 */
export class IndexBuilds<E extends StoredEntity> {
  readonly #rows: Rows<E>;
  readonly #fields = new Map<string, FieldIndex>();
  /** When each built index was last asked for (`#uses` at the time): the one asked for least lately goes first. */
  readonly #lastUse = new Map<string, number>();
  #uses = 0;
  /**
   * Fields read by queries under way between their turns (`pin`), with how many of them: their
   * indexes are never let go of, since such a query reads them again when it resumes.
   */
  readonly #pinned = new Map<string, number>();
  /** Fields being built, and the rows written meanwhile (to refresh once the build ends). */
  readonly #building = new Map<string, Promise<void>>();
  #touched: Set<number> | undefined;
  #text: TextIndex | undefined;
  #textBuilding: Promise<void> | undefined;
  /** How the text index's build takes turns (slices.ts): in the background until a search waits for it. */
  #textPriority: Priority = 'foreground';
  /** The text index being filled: how far, and what it indexed for rows written after it passed them. */
  #textFill: TextFill<E> | undefined;

  constructor(rows: Rows<E>) {
    this.#rows = rows;
  }

  /**
   * The index of a path that `wait` has reported built. One function for the engine's life: every
   * query hands it to its row tests and comparators without making a closure of its own.
   */
  readonly field = (path: readonly string[]): FieldIndex => this.#fields.get(key(path))!;

  /** The text index, once `wait` has reported it built. */
  get text(): TextIndex | undefined {
    return this.#text;
  }

  /** True when a write must tell the indexes (some index exists or is being built). */
  get active(): boolean {
    return this.#fields.size > 0 || this.#building.size > 0 || this.#text !== undefined || this.#textBuilding !== undefined;
  }

  /**
   * Undefined once every path (and, with `text`, the text index) has a live index; otherwise a
   * Promise to wait for before asking again. Missing paths are built together (one parse per record).
   */
  wait(paths: readonly (readonly string[])[], text: boolean): Promise<void> | undefined {
    return this.#ensure(paths) ?? (text ? this.#ensureText() : undefined);
  }

  /**
   * Holds the indexes of `paths` (built or to be built) until the returned function is called: a
   * query that did not finish in its first turn pins the fields it names, so that no other query
   * lets go of their indexes while it waits (`#ensure`). A query answered in one turn needs no
   * pin: nothing else runs meanwhile.
   */
  pin(paths: readonly (readonly string[])[]): () => void {
    const names = paths.map(key);
    for (const name of names) this.#pinned.set(name, (this.#pinned.get(name) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      for (const name of names) {
        const count = this.#pinned.get(name)! - 1;
        if (count === 0) this.#pinned.delete(name);
        else this.#pinned.set(name, count);
      }
    };
  }

  /** Whether the index of `path` is built (asking does not count as a use). */
  isBuilt(path: readonly string[]): boolean {
    return this.#fields.has(key(path));
  }

  /** How many field indexes are built (at most `MAX_FIELD_INDEXES`). */
  get fieldCount(): number {
    return this.#fields.size;
  }

  /**
   * Starts the text index's build, if it is neither built nor being built, without waiting for it
   * (a search answered by a scan meanwhile: text-scan.ts).
   */
  startText(): void {
    // A build that fails is started again by the next search that needs it.
    this.#ensureText('background')?.catch(() => undefined);
  }

  // ---- keeping indexes current ----

  /** A row's entity changes from `old` (undefined: new row) to `next` (undefined: deleted); `nextRecord` saves parsing it. */
  write(row: number, old: E | undefined, next: E | undefined, nextRecord?: unknown): void {
    this.#touched?.add(row);
    const fill = this.#textFill;
    if (fill && row < fill.cursor && !fill.seen.has(row)) fill.seen.set(row, old);
    const record = next === undefined ? NO_ROW : this.#fields.size > 0 || this.#text ? (nextRecord ?? next.record) : NO_ROW;
    for (const field of this.#fields.values()) field.apply(row, record);
    if (this.#text) {
      if (old !== undefined) this.#text.remove(row, old.record);
      if (record !== NO_ROW) this.#text.add(row, record);
    }
  }

  /** Slots were renumbered: every index follows, and so do the rows a running build must refresh. */
  remap(moved: Int32Array): void {
    const slots = this.#rows.slotCount;
    for (const field of this.#fields.values()) field.remap(moved, slots);
    this.#text?.remap(moved, slots);
    if (this.#touched) this.#touched = new Set([...this.#touched].map((row) => moved[row]!));
  }

  // ---- building ----

  /** Resolves once every path has a live index; builds the missing ones together (one parse per record). */
  #ensure(paths: readonly (readonly string[])[]): Promise<void> | undefined {
    const missing = new Map<string, readonly string[]>();
    const waits: Promise<void>[] = [];
    const use = ++this.#uses;
    for (const path of paths) {
      const name = key(path);
      if (this.#fields.has(name)) {
        this.#lastUse.set(name, use);
        continue;
      }
      const building = this.#building.get(name);
      if (building) waits.push(building);
      else missing.set(name, path);
    }
    if (missing.size > 0) {
      const over = this.#fields.size + this.#building.size + missing.size - MAX_FIELD_INDEXES;
      if (over > 0 && !this.#letGo(over, use)) {
        return Promise.reject(
          new IndexLimitError(`this resource keeps indexes of at most ${MAX_FIELD_INDEXES} fields, and every one is being built or read by a query under way`),
        );
      }
      const build = this.#build([...missing.values()]);
      for (const name of missing.keys()) this.#building.set(name, build);
      waits.push(build);
    }
    return waits.length === 0 ? undefined : Promise.all(waits).then(() => undefined);
  }

  /**
   * Lets go of the `count` indexes asked for least lately, but for those read by queries under way
   * (`pin`) or by the query asking (its fields were marked with `use`); false, letting go of
   * none, when fewer than `count` may go.
   */
  #letGo(count: number, use: number): boolean {
    const free: [name: string, last: number][] = [];
    for (const [name, last] of this.#lastUse) if (last !== use && !this.#pinned.has(name)) free.push([name, last]);
    if (free.length < count) return false;
    free.sort((a, b) => a[1] - b[1]);
    for (let i = 0; i < count; i++) {
      const name = free[i]![0];
      this.#fields.delete(name);
      this.#lastUse.delete(name);
    }
    return true;
  }

  async #build(paths: readonly (readonly string[])[]): Promise<void> {
    const names = paths.map(key);
    this.#touched ??= new Set();
    try {
      // Fresh indexes on every start: a re-pack while the build waits starts it over.
      const built = await runSliced(
        (slice) => this.#fill(paths.map((path) => new FieldIndex(path)), slice),
        Infinity,
        () => this.#rows.layout,
      );
      for (const field of built) {
        // Writes that landed during the build: their rows are brought up to date from the value
        // the build gave them.
        for (const row of this.#touched) {
          const entity = this.#rows.at(row);
          field.apply(row, entity === undefined ? NO_ROW : entity.record);
        }
        const name = key(field.path);
        this.#fields.set(name, field);
        this.#lastUse.set(name, this.#uses);
      }
    } finally {
      for (const name of names) this.#building.delete(name);
      if (this.#building.size === 0 && this.#textBuilding === undefined) this.#touched = undefined;
    }
  }

  *#fill(fields: FieldIndex[], slice: Slice): Work<FieldIndex[]> {
    const slots = this.#rows.slotCount;
    const paths = fields.map((field) => field.path);
    for (let row = 0; row < slots; row++) {
      const entity = this.#rows.at(row);
      if (entity === undefined) {
        for (const field of fields) field.fill(NO_ROW);
      } else if (entity.valuesAt) {
        const values = entity.valuesAt(paths);
        for (let f = 0; f < fields.length; f++) fields[f]!.fill(values[f]);
      } else {
        const record = entity.record;
        for (const field of fields) field.fill(valueAt(record, field.path));
      }
      if (row % CHECK_EVERY === 0 && slice.due) yield;
    }
    for (const field of fields) yield* field.build(slice);
    return fields;
  }

  /** True while the text index is being built. */
  get textBuilding(): boolean {
    return this.#textBuilding !== undefined;
  }

  /**
   * `priority`: a `foreground` call (a search waiting for the index) also promotes a build under
   * way in the background, so that it takes turns like the work waiting for it.
   */
  #ensureText(priority: Priority = 'foreground'): Promise<void> | undefined {
    if (this.#text) return undefined;
    if (priority === 'foreground') this.#textPriority = 'foreground';
    else if (this.#textBuilding === undefined) this.#textPriority = priority;
    this.#textBuilding ??= this.#buildText().finally(() => {
      this.#textBuilding = undefined;
      if (this.#building.size === 0) this.#touched = undefined;
    });
    return this.#textBuilding;
  }

  async #buildText(): Promise<void> {
    this.#touched ??= new Set();
    const { text, seen } = await runSliced((slice) => this.#fillText(slice), Infinity, () => this.#rows.layout, undefined, () => this.#textPriority);
    for (const row of this.#touched) {
      // What the build indexed for a row written after it passed; adding the current state is
      // idempotent for a row it reached after its writes.
      const before = seen.get(row);
      if (before) text.remove(row, before.record);
      const entity = this.#rows.at(row);
      if (entity) text.add(row, entity.record);
    }
    this.#text = text;
    this.#textFill = undefined;
  }

  *#fillText(slice: Slice): Work<{ text: TextIndex; seen: Map<number, E | undefined> }> {
    const slots = this.#rows.slotCount;
    const fill: TextFill<E> = { text: new TextBuilder(slots), cursor: 0, seen: new Map() };
    this.#textFill = fill;
    for (let row = 0; row < slots; row++) {
      fill.text.add(row, this.#rows.at(row));
      fill.cursor = row + 1;
      // A record's tokens are read here (a microsecond or two; 3 µs on a 300-byte product here): look
      // at the clock every 32 rows, so that a slice overruns its 0.5 ms by about 0.1 ms, not 0.4.
      if (row % 32 === 0 && slice.due) yield;
    }
    return { text: yield* fill.text.finish(slice), seen: fill.seen };
  }
}

/** The name a field index is kept under. */
function key(path: readonly string[]): string {
  return path.join('.');
}
