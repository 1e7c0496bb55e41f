import { lstat, mkdir, realpath, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { splitDeviceNumber, type DeviceNumber } from '@lvstamp/core';
import type { NodePaths, PathKind } from './ports.js';

/** lstat errors of a corrupted mount (kubernetes/mount-utils `IsCorruptedMnt`). */
const CORRUPTED_MOUNT_ERRORS: ReadonlySet<string> = new Set([
  'ENOTCONN',
  'ESTALE',
  'EIO',
  'EHOSTDOWN',
]);

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
      const code = errorCode(error);
      if (code === 'ENOENT') return 'missing';
      if (code !== undefined && CORRUPTED_MOUNT_ERRORS.has(code)) return 'unreadable';
      throw error;
    }
  },
  async canonical(path: string): Promise<string> {
    try {
      return await realpath(path);
    } catch {
      return path;
    }
  },
  async blockDeviceNumber(path: string): Promise<DeviceNumber | null> {
    try {
      const st = await stat(path, { bigint: true });
      return st.isBlockDevice() ? splitDeviceNumber(st.rdev) : null;
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return null;
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
