/** The content codings the service sends (RFC 9110 §8.4.1); negotiated here, applied in http/encoding.ts. */
export type ContentCoding = 'br' | 'gzip';

/**
 * The coding to use for an `Accept-Encoding` header (RFC 9110 §12.5.3): brotli before gzip when
 * the client takes both; undefined when it takes neither (or refuses them with q=0).
 */
export function chooseEncoding(acceptEncoding: string | undefined): ContentCoding | undefined {
  if (acceptEncoding === undefined || acceptEncoding === '') return undefined;
  const q = new Map<string, number>();
  for (const member of acceptEncoding.split(',')) {
    const [name = '', ...params] = member.split(';');
    let quality = 1;
    for (const param of params) {
      const [key = '', value = ''] = param.split('=');
      if (key.trim().toLowerCase() === 'q') quality = Number(value.trim()) || 0;
    }
    q.set(name.trim().toLowerCase(), quality);
  }
  const wildcard = q.get('*');
  const quality = (coding: ContentCoding): number => q.get(coding) ?? wildcard ?? 0;
  if (quality('br') > 0 && quality('br') >= quality('gzip')) return 'br';
  if (quality('gzip') > 0) return 'gzip';
  return undefined;
}
