import { lstat, mkdir, rmdir, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { NodePaths, PathKind } from './ports.js';

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}

/** NodePaths on the real file system (node:fs, no external commands). */
export const fsNodePaths: NodePaths = {
  async kind(path: string): Promise<PathKind> {
    try {
      const st = await lstat(path);
      if (st.isDirectory()) return 'directory';
      if (st.isBlockDevice()) return 'block-device';
      if (st.isFile()) return 'file';
      return 'other';
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return 'missing';
      throw error;
    }
  },
  async ensureDirectory(path: string): Promise<void> {
    await mkdir(path, { recursive: true });
  },
  async ensureFile(path: string): Promise<void> {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, '', { flag: 'a' });
  },
  async remove(path: string): Promise<void> {
    try {
      const st = await lstat(path);
      await (st.isDirectory() ? rmdir(path) : unlink(path));
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
  },
};
