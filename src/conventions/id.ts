import { randomFillSync } from 'node:crypto';

/** Random bytes drawn in blocks: one call to the CSPRNG serves 341 ids instead of one. */
const ID_BYTES = 12;
const ID_POOL = Buffer.alloc(ID_BYTES * 341);
let idOffset = ID_POOL.length;

/** 16 URL-safe characters carrying 96 random bits. */
export const randomId = (): string => {
  if (idOffset + ID_BYTES > ID_POOL.length) {
    randomFillSync(ID_POOL);
    idOffset = 0;
  }
  idOffset += ID_BYTES;
  return ID_POOL.toString('base64url', idOffset - ID_BYTES, idOffset);
};
