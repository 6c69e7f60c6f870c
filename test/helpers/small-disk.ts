import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

/**
 * A 1 MiB tmpfs, unmounted (and its directory removed) after the calling file's tests; undefined
 * where mount(8) cannot make one (not root).
 */
export async function smallDisk(prefix = 'halserve-full-'): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
  // One hook, so that the unmount surely comes before the removal.
  after(async () => {
    if (mounted.status === 0) spawnSync('umount', [dir], { stdio: 'ignore' });
    await rm(dir, { recursive: true, force: true });
  });
  return mounted.status === 0 ? dir : undefined;
}
