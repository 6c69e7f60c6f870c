/**
 * What the query engine reads of the creation order: rows are its slots. Every index, plan and
 * scan of the engine names an entity by its row; the materialised index supplies this view.
 */
export interface Rows<E> {
  readonly size: number;
  readonly slotCount: number;
  /** Changes when slots are renumbered (a re-pack): sliced work over rows then starts over. */
  readonly layout: number;
  /** The store's revision: a result is kept only if no write landed while it was computed. */
  readonly revision: string;
  at(row: number): E | undefined;
  /** Live entities at positions `[offset, offset + limit)` of the creation order. */
  page(offset: number, limit: number): E[];
}
