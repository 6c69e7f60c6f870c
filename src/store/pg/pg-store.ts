import type {
  Change,
  ChangeListener,
  DeleteCheck,
  EntityRecord,
  LocalStore,
  MaybePromise,
  QueryResult,
  StoreQuery,
  StoredEntity,
} from '../store.js';
import { AnswerBook, type IdempotencyLedger, type KeyedWrite } from '../idempotency.js';
import type { Replica } from './replica.js';
import type { PgWriter } from './writer.js';

/**
 * One resource kept in PostgreSQL (docs/storage.md §2): reads and queries from this process's index,
 * which the change feed and this process's writes keep current; writes through the database.
 */
export class PgStore implements LocalStore {
  readonly #replica: Replica;
  readonly #writer: PgWriter;
  /** Whether the database answered lately (the change feed's last catch-up succeeded). */
  readonly #reachable: () => boolean;
  #open = true;

  constructor(replica: Replica, writer: PgWriter, reachable: () => boolean) {
    this.#replica = replica;
    this.#writer = writer;
    this.#reachable = reachable;
  }

  get size(): number {
    return this.#replica.index.size;
  }

  /** The index's revision, named as every process at the same state names it when it can (`Replica.tagOf`). */
  get revision(): string {
    const replica = this.#replica;
    return replica.tagOf(replica.index.revision) ?? replica.index.revision;
  }

  /** Open and the database reachable: `/readyz` answers 503 while it is away. */
  get ready(): boolean {
    return this.#open && this.#reachable();
  }

  get(id: string): StoredEntity | undefined {
    return this.#replica.index.get(id);
  }

  /** Its answer's revision names the state the same way on every process, when it can (`Replica.tagOf`). */
  query(query: StoreQuery): MaybePromise<QueryResult> {
    const replica = this.#replica;
    const answer = replica.index.query(query);
    const tagged = (result: QueryResult): QueryResult => ({ ...result, revision: replica.tagOf(result.revision) });
    return answer instanceof Promise ? answer.then(tagged) : tagged(answer);
  }

  values(): IterableIterator<StoredEntity> {
    return this.#replica.index.values();
  }

  /** Every change the change feed reads, this process's writes and other processes' alike. */
  follow(listener: ChangeListener): () => void {
    return this.#replica.followers.add(listener);
  }

  create(record: EntityRecord, keyed?: KeyedWrite): Promise<StoredEntity> {
    return this.#writer.create(record, keyed);
  }

  update(id: string, change: Change, keyed?: KeyedWrite): Promise<StoredEntity | undefined> {
    return this.#writer.update(id, change, keyed);
  }

  /** Keys in flight in this process (a 409); the answers themselves live in the database (writer.ts). */
  readonly #inFlight = new AnswerBook({ maxAnswers: 0 });

  readonly idempotency: IdempotencyLedger = {
    // A retry of an answered key is known only to the database: its write, decided there, replays.
    claim: (key, fingerprint, legacy) => this.#inFlight.claim(key, fingerprint, legacy),
    remember: (keyed) => this.#writer.remember(keyed),
  };

  delete(id: string, check?: DeleteCheck): Promise<boolean> {
    return this.#writer.delete(id, check);
  }

  /** Finishes the writes queued; the database connection is closed with the others (`openPostgres`). */
  async close(): Promise<void> {
    await this.#writer.close();
    this.#open = false;
  }
}
