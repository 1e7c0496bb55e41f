import { describe, expect, it } from 'vitest';
import { volumeIdForName } from '../naming.js';
import { VOLUME_SERVICE_KEYS, withVolumeLocks } from './volume-locks.js';

const A = 'a'.repeat(32);
const B = 'b'.repeat(32);

/** Records when each call starts and ends; each call takes a few milliseconds. */
class Recorder {
  readonly #events: string[] = [];
  get events(): readonly string[] {
    return this.#events;
  }
  async delete(volumeId: string): Promise<string> {
    this.#events.push(`start ${volumeId.slice(0, 1)}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    this.#events.push(`end ${volumeId.slice(0, 1)}`);
    return volumeId;
  }
  async listVolumes(): Promise<string> {
    this.#events.push('list');
    return Promise.resolve('listed');
  }
}

describe('withVolumeLocks', () => {
  it('runs two calls on one volume one after the other, with private fields intact', async () => {
    const recorder = withVolumeLocks(new Recorder(), { delete: (id: string) => id });
    expect(await Promise.all([recorder.delete(A), recorder.delete(A)])).toEqual([A, A]);
    expect(recorder.events).toEqual(['start a', 'end a', 'start a', 'end a']);
  });

  it('runs calls on different volumes at once', async () => {
    const recorder = withVolumeLocks(new Recorder(), { delete: (id: string) => id });
    await Promise.all([recorder.delete(A), recorder.delete(B)]);
    expect(recorder.events).toEqual(['start a', 'start b', 'end a', 'end b']);
  });

  it('passes methods without a key straight through, also while a volume is busy', async () => {
    const recorder = withVolumeLocks(new Recorder(), { delete: (id: string) => id });
    const deleting = recorder.delete(A);
    await new Promise((resolve) => setTimeout(resolve, 1));
    expect(await recorder.listVolumes()).toBe('listed');
    await deleting;
    expect(recorder.events).toEqual(['start a', 'list', 'end a']);
  });

  it('keys the VolumeService calls that change a volume by its ID, create by its name', () => {
    expect(Object.keys(VOLUME_SERVICE_KEYS).sort()).toEqual(
      ['activateVolume', 'attach', 'create', 'createVolume', 'delete', 'detach', 'expand'].sort(),
    );
    const request = { name: 'pvc-a', requiredBytes: 1, vgName: 'vg0', ownerId: A };
    expect(VOLUME_SERVICE_KEYS.createVolume?.(request)).toBe(volumeIdForName('pvc-a'));
    expect(VOLUME_SERVICE_KEYS.create?.(request)).toBe(volumeIdForName('pvc-a'));
    expect(VOLUME_SERVICE_KEYS.delete?.(A, { vgNames: [], ownerId: A })).toBe(A);
    // a malformed ID or name is not locked: the call itself refuses it
    expect(VOLUME_SERVICE_KEYS.delete?.('nope', { vgNames: [], ownerId: A })).toBeNull();
    expect(VOLUME_SERVICE_KEYS.createVolume?.({ ...request, name: '' })).toBeNull();
  });
});
