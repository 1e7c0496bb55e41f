import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse } from 'yaml';

const DIR = fileURLToPath(new URL('../../../../deploy/kubernetes/gc/', import.meta.url));

/** A Kubernetes object as parsed from YAML. */
export interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}

/** Every object of deploy/kubernetes/gc, in kustomization order. */
export async function loadGcManifests(): Promise<Obj[]> {
  const kustomization = parse(await readFile(`${DIR}kustomization.yaml`, 'utf8')) as {
    resources: string[];
  };
  const out: Obj[] = [];
  for (const file of kustomization.resources) {
    for (const doc of parseAllDocuments(await readFile(DIR + file, 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map(String).join('; ')}`);
      out.push(doc.toJS() as Obj);
    }
  }
  return out;
}
