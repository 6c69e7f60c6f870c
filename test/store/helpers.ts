import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { stampedLine, tombstoneLine } from '../../src/store/changes/change-stamp.js';
import { nodeFs, type StoreFs } from '../../src/store/log/store-fs.js';

/** A fresh temporary directory, removed when the test file ends. */
export async function tempDir(prefix = 'halserve-store-'): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  after(() => fs.rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The entity's JSON, as a line written by hand (or before change stamps) holds it. */
export const plainLine = (id: string, fields: Record<string, unknown> = {}): string =>
  JSON.stringify({ id, createdAt: 1_700_000_000, updatedAt: 1_700_000_000, ...fields });

/** Change numbers for `line` and `tombstone`, increasing over the test file's run. */
let lineSeq = 0;

/** The line of an entity as the store writes it: its JSON and its change stamp (a create). */
export const line = (id: string, fields: Record<string, unknown> = {}): string =>
  stampedLine(plainLine(id, fields), { seq: ++lineSeq, type: 'created', at: 1_700_000_000 });

/** The line of a delete as the store writes it. */
export const tombstone = (id: string): string => tombstoneLine(id, { seq: ++lineSeq, type: 'deleted', at: 1_700_000_000 });

/** Collects warnings. */
export function warnings(): { warn: (message: string) => void; messages: string[] } {
  const messages: string[] = [];
  return { warn: (message) => void messages.push(message), messages };
}

/**
 * The node file system with the durability point of the files `matches` names under the test's
 * control: the `fdatasync` of such a file, or, for a descriptor opened with `syncedWrites`
 * (O_DSYNC: how the log opens when durable), the end of each write to it, once its bytes are in
 * the file and before the store is told. While `fault.sync` is set, each such point calls it
 * instead (a rejection: the sync failed; a promise that never settles: the process dies there).
 * `fault.write` replaces the writes to such files. `events` lists each write (`write <name>`) and
 * each point reached (`sync <name>`).
 */
export function syncSeam(matches: (file: string) => boolean): {
  fs: StoreFs;
  fault: { write?: () => Promise<number>; sync?: () => Promise<void> };
  events: string[];
} {
  const names = new Map<number, string>();
  const synced = new Set<number>();
  const events: string[] = [];
  const fault: { write?: () => Promise<number>; sync?: () => Promise<void> } = {};
  const mine = (fd: number): boolean => matches(names.get(fd) ?? '');
  const point = (fd: number, sync: () => Promise<void>): Promise<void> => {
    events.push(`sync ${path.basename(names.get(fd) ?? '?')}`);
    return fault.sync ? fault.sync() : sync();
  };
  const flag = nodeFs.syncedWrites;
  return {
    fault,
    events,
    fs: {
      ...nodeFs,
      async open(file, flags, mode) {
        const fd = await nodeFs.open(file, flags, mode);
        names.set(fd, file);
        if (flag !== undefined && (flags & flag) === flag) synced.add(fd);
        else synced.delete(fd);
        return fd;
      },
      async write(fd, buffer, offset, length, position) {
        if (!mine(fd)) return nodeFs.write(fd, buffer, offset, length, position);
        events.push(`write ${path.basename(names.get(fd) ?? '?')}`);
        if (fault.write) return fault.write();
        const n = await nodeFs.write(fd, buffer, offset, length, position);
        if (synced.has(fd)) await point(fd, async () => {});
        return n;
      },
      fdatasync: (fd) => (mine(fd) ? point(fd, () => nodeFs.fdatasync(fd)) : nodeFs.fdatasync(fd)),
    },
  };
}
