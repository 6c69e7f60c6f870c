import type { ChangeListener, StoreChange } from './store.js';

/**
 * The followers of one store's changes (`Store.follow`). A listener that throws is reported and
 * stays subscribed: a follower's bug must neither undo a durable write nor starve the others.
 */
export class Followers {
  readonly #listeners = new Set<ChangeListener>();
  readonly #warn: (message: string) => void;

  constructor(warn: (message: string) => void = () => {}) {
    this.#warn = warn;
  }

  /** Adds a listener; returns the function that removes it. */
  add(listener: ChangeListener): () => void {
    // Wrapped, so that one function may follow twice and each subscription ends on its own.
    const entry: ChangeListener = (change) => listener(change);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  get size(): number {
    return this.#listeners.size;
  }

  emit(change: StoreChange): void {
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (error) {
        this.#warn(`a follower of ${change.resource} failed on change ${change.cursor}: ${(error as Error).message}`);
      }
    }
  }
}
