import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync, type BrotliOptions } from 'node:zlib';
import type { ContentCoding } from '../conventions/accept-encoding.js';

/** Bodies smaller than this go out as they are: compression would not pay for itself. */
export const COMPRESSION_THRESHOLD_BYTES = 1024;

/**
 * Compresses a response body. Brotli at quality 4 compresses JSON about as well as gzip's default
 * at a fraction of brotli's default (11) cost, which would dominate the request.
 */
export function encode(body: string | Buffer, coding: ContentCoding): Buffer {
  return coding === 'br' ? brotliCompressSync(body, brotliOptions(body)) : gzipSync(body);
}

/** Bodies from this size up are compressed on libuv's thread pool, so the event loop goes on serving. */
export const ASYNC_COMPRESSION_BYTES = 256 * 1024;

const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/**
 * Compressions off the event loop at once, process-wide as libuv's thread pool is: they share its
 * four threads with the store's fsyncs, so past two at once a large body goes out as it is rather
 * than delay every write behind it.
 */
const MAX_ASYNC_COMPRESSIONS = 2;
let compressing = 0;

/** True when `encodeAsync` may start one more compression (else the body goes out as it is). */
export function asyncCompressionFree(): boolean {
  return compressing < MAX_ASYNC_COMPRESSIONS;
}

/** `encode` off the event loop, for large bodies; counted until it settles (`asyncCompressionFree`). */
export function encodeAsync(body: string | Buffer, coding: ContentCoding): Promise<Buffer> {
  compressing++;
  return (coding === 'br' ? brotliAsync(body, brotliOptions(body)) : gzipAsync(body)).finally(() => compressing--);
}

function brotliOptions(body: string | Buffer): BrotliOptions {
  return { params: { [constants.BROTLI_PARAM_QUALITY]: 4, [constants.BROTLI_PARAM_SIZE_HINT]: Buffer.byteLength(body) } };
}
