/**
 * Where each webhook URL stands: the last cursor its endpoint acknowledged with a 2xx, and when.
 * A small port with two implementations: a file in the data directory (file-positions.ts) and a
 * table in the PostgreSQL database (pg-positions.ts).
 */

/** A URL's acknowledged position. */
export interface Position {
  /**
   * The cursor of the last event the endpoint acknowledged (or where it started: the latest event
   * when first configured), or, once it is caught up, the latest event of any resource.
   */
  readonly cursor: string;
  /** Milliseconds since the epoch of the last acknowledgement (or of the first configuration). */
  readonly at: number;
}

export interface Positions {
  /** Every stored position, by URL as written. */
  load(): Promise<Map<string, Position>>;
  /** Records the positions given (others stay as stored), durably before resolving. */
  save(positions: ReadonlyMap<string, Position>): Promise<void>;
}

/**
 * Saves positions in the background, one save at a time: positions that move while a save is in
 * flight are saved together by the next one, so a burst of acknowledgements costs a few saves, not
 * one each. A crash loses at most the positions not yet saved (their events are sent again:
 * at least once); `flush` resolves once every position set before it is saved.
 */
export class PositionWriter {
  readonly #positions: Positions;
  readonly #onError: (error: unknown) => void;
  #dirty = new Map<string, Position>();
  #saving: Promise<void> | undefined;

  constructor(positions: Positions, onError: (error: unknown) => void) {
    this.#positions = positions;
    this.#onError = onError;
  }

  set(url: string, position: Position): void {
    this.#dirty.set(url, position);
    this.#saving ??= this.#drain();
  }

  async #drain(): Promise<void> {
    while (this.#dirty.size > 0) {
      const batch = this.#dirty;
      this.#dirty = new Map();
      try {
        await this.#positions.save(batch);
      } catch (error) {
        // Kept for the next save (a later position of the same URL replaces it).
        for (const [url, position] of batch) if (!this.#dirty.has(url)) this.#dirty.set(url, position);
        this.#onError(error);
        break;
      }
    }
    this.#saving = undefined;
  }

  /** Resolves once every position set so far is saved (or a save failed: said to `onError`). */
  async flush(): Promise<void> {
    while (this.#saving !== undefined) await this.#saving;
    if (this.#dirty.size > 0) {
      this.#saving = this.#drain();
      await this.#saving;
    }
  }
}
