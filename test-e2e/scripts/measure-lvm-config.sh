#!/bin/bash
# measure-lvm-config.sh: what lvm sees with lvstamp's device filter and with a devices file, and
# lvm2's messages for broken volume groups (docs/LVM-CONFIG.md). On the host it boots the test VM
# and runs itself inside with --guest. Measurements go to stdout; the broken-group cases are saved
# under test-e2e/recorded/ like record-outputs.sh (NAME.argv, .stdout, .stderr, .exit). Only
# throwaway VGs on loop files in the guest's tmpfs are used.
set -uo pipefail
PKG=$(cd "$(dirname "$0")/.." && pwd)
OUT=$PKG/recorded
if [ "${1:-}" != --guest ]; then
  VM_RW="$OUT" exec "$PKG/vm/run-in-vm.sh" "bash $PKG/scripts/measure-lvm-config.sh --guest"
fi

export LC_ALL=C LVM_SUPPRESS_FD_WARNINGS=1
rec() { # rec NAME argv...: run, save argv/stdout/stderr/exit code
  local name=$1; shift
  printf '%q ' "$@" | sed 's/ $//' >"$OUT/$name.argv"; echo >>"$OUT/$name.argv"
  local rc=0
  "$@" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr" </dev/null || rc=$?
  echo $rc >"$OUT/$name.exit"
  echo "recorded $name (exit $rc)"
}
show() { # show LABEL argv...: run once, print exit, stdout and stderr
  local label=$1; shift
  local o e rc=0
  o=$("$@" 2>/tmp/show.err </dev/null) || rc=$?
  e=$(cat /tmp/show.err)
  echo "--- $label: exit $rc"
  [ -n "$o" ] && printf '%s\n' "$o" | sed 's/^/    out: /'
  [ -n "$e" ] && printf '%s\n' "$e" | sed 's/^/    err: /'
  return 0
}
timeit() { # timeit LABEL N argv...: median wall time in ms of N runs
  local label=$1 n=$2; shift 2
  local t=() i s
  for ((i = 0; i < n; i++)); do
    s=$(date +%s%N); "$@" >/dev/null 2>&1 </dev/null; t+=($((($(date +%s%N) - s) / 1000000)))
  done
  echo "=== time $label: median $(printf '%s\n' "${t[@]}" | sort -n | sed -n "$(((n + 1) / 2))p") ms of $n (${t[*]})"
}

echo "lvm: $(lvm version | head -1 | tr -s ' '), kernel $(uname -r)"
VG=lvse2emeas
ID1=9a1c0d3b5e7f4a2c8b6d1e0f3a5c7e0b
ID2=0b7e5c3a1f2e4d6c8a0b9c7e5d3f1a2c
ID3=5e7f4a2c8b6d1e0f3a5c7e0b9a1c0d3b
OWNER=00000000000000000000000000000000
DATA=/dev/mapper/lvstamp-$ID1
ONLY_DATA='devices/global_filter=["a|^/dev/mapper/lvstamp-|","r|.*|"]'
FILTER='devices/global_filter=["r|^/dev/mapper/lvstamp-|","r|^/dev/disk/by-id/dm-uuid-LVSTAMP-|","r|^/dev/disk/by-id/dm-name-lvstamp-|"]'
FILTER_LOOP='devices/global_filter=["r|^/dev/mapper/lvstamp-|","r|^/dev/disk/by-id/dm-uuid-LVSTAMP-|","r|^/dev/disk/by-id/dm-name-lvstamp-|","r|^/dev/loop|"]'
FILTER_ALIAS='devices/global_filter=["a|^/dev/lvstamp-pv/|","r|^/dev/mapper/lvstamp-|","r|^/dev/loop|"]'
DF=lvstamp-meas.devices

truncate -s 512M /tmp/meas-a.img
LOOPA=$(losetup -f --show /tmp/meas-a.img)
pvcreate -qy "$LOOPA" >/dev/null && vgcreate -qs 4m $VG "$LOOPA" >/dev/null
lvcreate -qy -n "lvstamp_$ID1" -L 64m --addtag lvstamp --addtag "lvstamp.owner=$OWNER" $VG >/dev/null
lvcreate -qy -n "lvstamp_$ID3" -L 64m --addtag lvstamp --addtag "lvstamp.owner=$OWNER" $VG >/dev/null
read -r MAJ MIN < <(lvs --noheadings -o lv_kernel_major,lv_kernel_minor "$VG/lvstamp_$ID1")
SECT=$(($(blockdev --getsz "/dev/$VG/lvstamp_$ID1") - 2048))
dmsetup create --noudevsync "lvstamp-$ID1" -u "LVSTAMP-$ID1" --table "0 $SECT linear $MAJ:$MIN 2048"
dmsetup mknodes "lvstamp-$ID1"

echo "### broken volume groups (recorded)"
B=lvse2ebroken
truncate -s 256M /tmp/meas-b1.img /tmp/meas-b2.img
LOOPB1=$(losetup -f --show /tmp/meas-b1.img)
LOOPB2=$(losetup -f --show /tmp/meas-b2.img)
pvcreate -qy "$LOOPB1" "$LOOPB2" >/dev/null && vgcreate -qs 4m $B "$LOOPB1" "$LOOPB2" >/dev/null
lvcreate -qy -n "lvstamp_$ID3" -L 64m --addtag lvstamp --addtag "lvstamp.owner=$OWNER" $B "$LOOPB1" >/dev/null
J=(--reportformat json --units b --nosuffix)
VGF=vg_name,vg_uuid,vg_size,vg_free,vg_extent_size,vg_tags,vg_attr
LVF=vg_name,lv_name,lv_uuid,lv_size,lv_attr,lv_kernel_major,lv_kernel_minor,lv_dm_path,lv_time,lv_tags
LVCREATE=(lvcreate --yes --wipesignatures y --zero y --activate y -n "lvstamp_new_$ID2" -L 71303168b --addtag lvstamp --addtag "lvstamp.owner=$OWNER" $B)
LOOKUP=(lvs "${J[@]}" --config 'report/time_format="%s"' -o $LVF -S "lv_name=\"lvstamp_$ID3\" || lv_name=\"lvstamp_new_$ID3\"")
brokencase() { # brokencase SUFFIX: the manager's vgs, lvs look-up and lvcreate in group B
  rec "vgs-$1" vgs "${J[@]}" -o $VGF -S "vg_name=\"$B\""
  rec "lvs-$1" "${LOOKUP[@]}"
  rec "lvcreate-$1" "${LVCREATE[@]}"
  lvremove -qy "$B/lvstamp_new_$ID2" >/dev/null 2>&1
}
brokencase healthy
# a PV removed from the two-PV group
losetup -d "$LOOPB2"
brokencase missing-pv
LOOPB2=$(losetup -f --show /tmp/meas-b2.img)
show "after reattaching: vgs" vgs -o vg_name,vg_attr $B
# the same loop file attached twice
LOOPDUP=$(losetup -f --show /tmp/meas-b1.img)
brokencase duplicate-pv
losetup -d "$LOOPDUP"
# a read-only PV
blockdev --setro "$LOOPB1" "$LOOPB2"
brokencase readonly-pv
blockdev --setrw "$LOOPB1" "$LOOPB2"
# a shared group (lock_type set in its metadata) on a node without lvmlockd
vgcfgbackup -q -f /tmp/meas-b.vg $B >/dev/null
sed -i 's/^\(\t*\)seqno = \(.*\)/&\n\1lock_type = "dlm"\n\1lock_args = "1.0.0:lvse2ebroken"/' /tmp/meas-b.vg
vgchange -qan $B >/dev/null
show "vgcfgrestore --force (lock_type dlm)" vgcfgrestore --force -f /tmp/meas-b.vg $B
brokencase shared
show "all vgs with the shared group" vgs -o vg_name,vg_attr
rec vgs-all-shared vgs "${J[@]}" -o $VGF
# out of the way of the measurements below: the group's LV map and loop devices go
dmsetup remove "$B-lvstamp_$ID3" 2>/dev/null
losetup -d "$LOOPB1" "$LOOPB2"
echo "### a tenant's VG inside the data device, same VG name, an lvstamp_<id> LV"
# vgcreate refuses a name whose /dev/<vg> directory exists (the outer group's): move it aside,
# make the tenant's group and an LV without activating it, put the directory back.
mv /dev/$VG /dev/$VG.outer
pvcreate -qy --config "$ONLY_DATA" "$DATA" >/dev/null
vgcreate -qs 4m --config "$ONLY_DATA" $VG "$DATA" >/dev/null
lvcreate -qy --config "$ONLY_DATA" -an -Zn -n "lvstamp_$ID2" -L 8m --addtag lvstamp $VG >/dev/null
rm -rf /dev/$VG && mv /dev/$VG.outer /dev/$VG
show "tenant's group, seen through the data device only" vgs --config "$ONLY_DATA" -o vg_name,vg_uuid,lv_count
lvm lvmdevices -qy --devicesfile $DF --adddev "$LOOPA"
echo "devices file: $(grep -v '^#' /etc/lvm/devices/$DF | tr '\n' ' ')"
SEL=(-S "vg_name=$VG")
for mode in default filter devicesfile; do
  case $mode in
    default) O=() ;;
    filter) O=(--config "$FILTER") ;;
    devicesfile) O=(--devicesfile $DF) ;;
  esac
  show "$mode: vgs" vgs "${O[@]}" -o vg_name,vg_uuid,pv_count,lv_count,vg_attr
  show "$mode: lvs -S lv_name=~^lvstamp" lvs "${O[@]}" -o vg_name,lv_name,lv_attr -S 'lv_name=~"^lvstamp"'
  show "$mode: vgs -S vg_name" vgs "${O[@]}" -o vg_name,vg_free "${SEL[@]}"
  show "$mode: pvs" pvs "${O[@]}" -o pv_name,vg_name
  timeit "$mode: vgs" 5 vgs "${O[@]}"
  timeit "$mode: lvs -S lv_name=~^lvstamp" 5 lvs "${O[@]}" -S 'lv_name=~"^lvstamp"'
done
show "default: vgchange -aay (autoactivation)" vgchange -aay
show "after default -aay: data device open count" dmsetup info -c --noheadings -o name,open "lvstamp-$ID1"
vgchange -qan --config "$ONLY_DATA" $VG >/dev/null 2>&1
show "filter: vgchange -aay" vgchange -aay --config "$FILTER"
show "after filter -aay: data device open count" dmsetup info -c --noheadings -o name,open "lvstamp-$ID1"
show "devicesfile: vgchange -aay" vgchange -aay --devicesfile $DF
show "after devicesfile -aay: data device open count" dmsetup info -c --noheadings -o name,open "lvstamp-$ID1"

echo "### a loop device over the data device (kubelet's block-volume loop)"
LOOPK=$(losetup -f --show "$DATA")
mkdir -p /dev/lvstamp-pv && ln -sf "$LOOPA" /dev/lvstamp-pv/$VG-0
for mode in filter filter-loop filter-alias devicesfile; do
  case $mode in
    filter) O=(--config "$FILTER") ;;
    filter-loop) O=(--config "$FILTER_LOOP") ;;
    filter-alias) O=(--config "$FILTER_ALIAS") ;;
    devicesfile) O=(--devicesfile $DF) ;;
  esac
  show "$mode: vgs" vgs "${O[@]}" -o vg_name,vg_uuid,pv_count,lv_count,vg_attr
  show "$mode: pvs" pvs "${O[@]}" -o pv_name,vg_name
  timeit "$mode: vgs" 5 vgs "${O[@]}"
done
losetup -d "$LOOPK"

echo "### a suspended data device"
# A read of a suspended map blocks in the kernel (D state) until resume; no signal ends it. A
# watchdog resumes the map after 20 s, so a command that blocks takes about 20 s.
for mode in default filter devicesfile; do
  case $mode in
    default) O=() ;;
    filter) O=(--config "$FILTER") ;;
    devicesfile) O=(--devicesfile $DF) ;;
  esac
  dmsetup suspend "lvstamp-$ID1"
  (sleep 20; dmsetup resume "lvstamp-$ID1") &
  s=$(date +%s%N)
  show "$mode: vgs (data device suspended, resumed after 20 s)" vgs "${O[@]}" -o vg_name,lv_count
  echo "    took $((($(date +%s%N) - s) / 1000000)) ms"
  wait
done
dmsetup suspend "lvstamp-$ID1"
(sleep 25; dmsetup resume "lvstamp-$ID1") &
cat >/tmp/hang.mjs <<'JS'
// Node on a suspended dm device: fs reads block libuv's pool; do they starve other fs calls?
import { open, readFile } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
const dev = process.argv[2];
const mode = process.argv[3];
const t0 = Date.now();
if (mode === 'pool') {
  for (let i = 0; i < 4; i++) open(dev, 'r').then((fh) => fh.read(Buffer.alloc(512), 0, 512, 0));
} else {
  for (let i = 0; i < 4; i++) {
    const w = new Worker(
      `const fs=require('node:fs');const fd=fs.openSync(${JSON.stringify(dev)},'r');fs.readSync(fd,Buffer.alloc(512),0,512,0);`,
      { eval: true },
    );
    w.unref();
  }
}
setTimeout(async () => {
  const s = Date.now();
  const done = await Promise.race([
    readFile('/proc/self/status', 'utf8').then(() => `readFile answered in ${Date.now() - s} ms`),
    new Promise((r) => setTimeout(() => r('readFile still blocked after 10 s'), 10_000)),
  ]);
  console.log(`${mode}: 4 reads of a suspended device in flight; ${done}; total ${Date.now() - t0} ms`);
  process.exit(0);
}, 2_000);
JS
show "node, fs.promises reads on the suspended device" node /tmp/hang.mjs "$DATA" pool
wait
dmsetup suspend "lvstamp-$ID1"
(sleep 25; dmsetup resume "lvstamp-$ID1") &
show "node, readSync in worker threads on the suspended device" node /tmp/hang.mjs "$DATA" worker
wait

echo "done"
