import type { MaybePromise } from '../store/store.js';

/** `f(value)`, now when the value is here, later when it is a Promise (the stores' `MaybePromise`). */
export function mapMaybe<T, U>(value: MaybePromise<T>, f: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(f) : f(value);
}

/** Every value, now when all are here, else once the Promises among them resolve. */
export function allMaybe<T>(values: readonly MaybePromise<T>[]): MaybePromise<T[]> {
  return values.some((v) => v instanceof Promise) ? Promise.all(values) : (values as T[]);
}
