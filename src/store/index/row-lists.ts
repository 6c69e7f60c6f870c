/** Sorted lists of rows (creation order): unions and intersections by merging, O(n) per pair. */

/** Rows in any of the sorted lists, sorted, without repeats: merged pairwise, O(n log k). */
export function unionOf(lists: readonly (Int32Array | undefined)[]): Int32Array {
  let present = lists.filter((l): l is Int32Array => l !== undefined && l.length > 0);
  if (present.length === 0) return new Int32Array(0);
  while (present.length > 1) {
    const next: Int32Array[] = [];
    for (let i = 0; i < present.length; i += 2) next.push(i + 1 < present.length ? merge(present[i]!, present[i + 1]!) : present[i]!);
    present = next;
  }
  return present[0]!;
}

function merge(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x < y) out[k++] = a[i++]!;
    else if (y < x) out[k++] = b[j++]!;
    else {
      out[k++] = x;
      i++;
      j++;
    }
  }
  while (i < a.length) out[k++] = a[i++]!;
  while (j < b.length) out[k++] = b[j++]!;
  return out.subarray(0, k);
}

/** Rows in both sorted lists. */
export function intersection(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(Math.min(a.length, b.length));
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x < y) i++;
    else if (y < x) j++;
    else {
      out[k++] = x;
      i++;
      j++;
    }
  }
  return out.subarray(0, k);
}
