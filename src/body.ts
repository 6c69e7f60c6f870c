import type { IncomingMessage } from 'node:http';
import { badRequest, payloadTooLarge } from './problem.js';

/** Contract §5: bodies are at most 1 MiB unless `--max-body` says otherwise. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** A JSON object from a request body: still unchecked beyond being an object. */
export type JsonObject = Record<string, unknown>;

/**
 * Reads a request body of at most `limit` bytes. A declared or actual size over the limit is a 413
 * problem, raised as soon as it is known, so an oversized body is never buffered whole.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(payloadTooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.resume(); // drain the rest without keeping it
        reject(payloadTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Parses a body as a JSON object (contract §5): not UTF-8, not JSON, or not an object → 400. */
export function parseJsonObject(body: Uint8Array): JsonObject {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw badRequest('Request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw badRequest(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest('Request body must be a JSON object');
  }
  return value as JsonObject;
}
