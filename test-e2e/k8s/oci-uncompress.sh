#!/bin/bash
# oci-uncompress.sh ARCHIVE: rewrites an OCI image archive (one image) with uncompressed layers.
# An uncompressed layer's digest is its diff_id, so the image config stays the same; only the
# manifest (layer media types, digests, sizes) and index.json change. Importing such an archive
# into containerd inside the emulated test VM skips the gunzip, which there costs minutes.
set -euo pipefail
A=$(readlink -f "${1:?usage: oci-uncompress.sh ARCHIVE}")
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
tar -xf "$A" -C "$D"
node - "$D" <<'JS'
const fs = require('node:fs');
const { createHash } = require('node:crypto');
const { gunzipSync } = require('node:zlib');
const dir = process.argv[2];
const blob = (d) => `${dir}/blobs/sha256/${d.replace('sha256:', '')}`;
const put = (buf) => {
  const digest = 'sha256:' + createHash('sha256').update(buf).digest('hex');
  fs.writeFileSync(blob(digest), buf);
  return { digest, size: buf.length };
};
const index = JSON.parse(fs.readFileSync(`${dir}/index.json`, 'utf8'));
for (const entry of index.manifests) {
  const manifest = JSON.parse(fs.readFileSync(blob(entry.digest), 'utf8'));
  let changed = false;
  manifest.layers = manifest.layers.map((layer) => {
    if (!layer.mediaType.endsWith('+gzip')) return layer;
    changed = true;
    const { digest, size } = put(gunzipSync(fs.readFileSync(blob(layer.digest))));
    fs.unlinkSync(blob(layer.digest));
    return { ...layer, mediaType: layer.mediaType.replace(/\+gzip$/, ''), digest, size };
  });
  if (!changed) continue;
  fs.unlinkSync(blob(entry.digest));
  Object.assign(entry, put(Buffer.from(JSON.stringify(manifest))));
}
fs.writeFileSync(`${dir}/index.json`, JSON.stringify(index));
JS
tar -cf "$A.tmp" -C "$D" oci-layout index.json blobs && mv "$A.tmp" "$A"
