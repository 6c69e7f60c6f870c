/** One member of an `Accept` header: a media range and its weight. */
export interface MediaRange {
  readonly type: string;
  readonly subtype: string;
  readonly q: number;
}

/** Parses an `Accept` header (RFC 9110 §12.5.1) into media ranges; malformed members are skipped. */
export function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const member of header.split(',')) {
    const [range = '', ...params] = member.split(';');
    const slash = range.indexOf('/');
    if (slash < 1) continue;
    const type = range.slice(0, slash).trim().toLowerCase();
    const subtype = range.slice(slash + 1).trim().toLowerCase();
    if (!type || !subtype) continue;
    let q = 1;
    for (const param of params) {
      const [name = '', value = ''] = param.split('=');
      if (name.trim().toLowerCase() !== 'q') continue;
      const parsed = Number(value.trim());
      // RFC 9110 §12.4.2: qvalue is 0 to 1; anything else makes the member meaningless.
      q = Number.isFinite(parsed) && parsed >= 0 && parsed <= 1 ? parsed : 0;
    }
    ranges.push({ type, subtype, q });
  }
  return ranges;
}
