// Kubernetes objects as kustomize and helm render them, for the deploy tests.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

/** A rendered Kubernetes object. */
export interface Rendered {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
  };
  readonly subjects?: readonly { kind: string; name: string; namespace?: string }[];
  readonly [key: string]: unknown;
}

/** Kinds of lvstamp's objects that are not namespaced. */
export const CLUSTER_SCOPED = new Set([
  'Namespace',
  'CSIDriver',
  'StorageClass',
  'ClusterRole',
  'ClusterRoleBinding',
  'VolumeSnapshotClass',
]);

/**
 * Runs `program args` and parses its standard output as a YAML stream of objects (empty
 * documents dropped).
 * @throws Error naming the command, with its standard error, when it exits non-zero.
 */
export async function renderObjects(program: string, args: readonly string[]): Promise<Rendered[]> {
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)(program, [...args], { maxBuffer: 16 << 20 }));
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`${program} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Rendered | null)
    .filter((o): o is Rendered => o !== null);
}

/** `Kind/name` of an object, for messages and sorting. */
export function objectKey(o: Rendered): string {
  return `${o.kind}/${o.metadata.name}`;
}
