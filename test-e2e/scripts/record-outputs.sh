#!/bin/bash
# record-outputs.sh: records real lvm2 / dmsetup / blkid outputs for the core's replay fixtures.
# On the host it boots the test VM (device-mapper, lvm2 2.03.16) and runs itself inside with --guest;
# every case is saved verbatim under test-e2e/recorded/: NAME.argv (the command), NAME.stdout,
# NAME.stderr, NAME.exit. Only a throwaway VG "lvse2erec" on a loop file in the guest's tmpfs is used.
set -uo pipefail
PKG=$(cd "$(dirname "$0")/.." && pwd)
OUT=$PKG/recorded
if [ "${1:-}" != --guest ]; then
  # stale cases go; the broken-group cases belong to measure-lvm-config.sh and stay
  mkdir -p "$OUT" && find "$OUT" -maxdepth 1 -type f \( -name '*.argv' -o -name '*.stdout' -o -name '*.stderr' -o -name '*.exit' \) \
    ! -name '*-healthy.*' ! -name '*-missing-pv.*' ! -name '*-duplicate-pv.*' ! -name '*-readonly-pv.*' ! -name '*-shared.*' -delete
  VM_RW="$OUT" exec "$PKG/vm/run-in-vm.sh" "bash $PKG/scripts/record-outputs.sh --guest"
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
set -e
VG=lvse2erec
ID1=9a1c0d3b5e7f4a2c8b6d1e0f3a5c7e0b
ID2=0b7e5c3a1f2e4d6c8a0b9c7e5d3f1a2c
OWNER=00000000000000000000000000000000
truncate -s 1G /tmp/rec-pv.img
LOOP=$(losetup -f --show /tmp/rec-pv.img)
pvcreate -y "$LOOP" >/dev/null
rec vgcreate vgcreate -s 4m $VG "$LOOP"
rec lvcreate-active lvcreate -y -n "lvstamp_new_$ID1" -L 67108864b --addtag lvstamp --addtag "lvstamp.owner=$OWNER" $VG
rec lvrename lvrename $VG "lvstamp_new_$ID1" "lvstamp_$ID1"
rec lvcreate-second lvcreate -y -n "lvstamp_new_$ID2" -L 212860928b --addtag lvstamp --addtag "lvstamp.owner=$OWNER" $VG
rec lvchange-deactivate lvchange -an "$VG/lvstamp_new_$ID2"
rec lvcreate-foreign lvcreate -y -n other -L 8m $VG
rec lvextend-two-segments lvextend -L +8m "$VG/lvstamp_$ID1"
set +e
rec lvcreate-exists lvcreate -y -n other -L 8m $VG
rec lvcreate-no-space lvcreate -y -n huge -L 100g $VG

FIELDS=vg_name,lv_name,lv_uuid,lv_size,lv_attr,lv_active,lv_kernel_major,lv_kernel_minor,lv_dm_path,lv_path,lv_tags,lv_time
J=(--reportformat json --units b --nosuffix)
rec vgs-one vgs "${J[@]}" -o vg_name,vg_uuid,vg_size,vg_free,vg_extent_size,vg_extent_count,vg_free_count,vg_tags $VG
rec vgs-all vgs "${J[@]}" -o vg_name,vg_size,vg_free,vg_extent_size
rec vgs-missing vgs "${J[@]}" -o vg_name,vg_size lvse2emissing
rec lvs-vg lvs "${J[@]}" -o $FIELDS $VG
rec lvs-select-present lvs "${J[@]}" -o $FIELDS -S "lv_name=lvstamp_$ID1" $VG
rec lvs-select-absent lvs "${J[@]}" -o $FIELDS -S lv_name=lvstamp_ffffffffffffffffffffffffffffffff $VG
rec lvs-path-absent lvs "${J[@]}" -o $FIELDS "$VG/lvstamp_ffffffffffffffffffffffffffffffff"
rec lvs-vg-missing lvs "${J[@]}" -o $FIELDS lvse2emissing
rec lvs-time-epoch lvs --config 'report/time_format="%s"' "${J[@]}" -o lv_name,lv_time $VG
rec lvs-segments lvs "${J[@]}" -o lv_name,lv_uuid,lv_size,seg_start,seg_size,devices $VG
rec lvs-qq lvs -qq "${J[@]}" -o lv_name,lv_size $VG
rec lvs-command-log lvs --config 'log/report_command_log=1' "${J[@]}" -o lv_name,lv_size $VG
rec lvs-tag-select lvs "${J[@]}" -o lv_name,lv_tags -S 'lv_tags=lvstamp' $VG

# data device: linear map at 1 MiB over the active LV, opened by a mount
read -r MAJ MIN < <(lvs --noheadings -o lv_kernel_major,lv_kernel_minor "$VG/lvstamp_$ID1")
SECT=$(($(blockdev --getsz "/dev/$VG/lvstamp_$ID1") - 2048))
rec dmsetup-create dmsetup create --noudevsync "lvstamp-$ID1" -u "LVSTAMP-$ID1" --table "0 $SECT linear $MAJ:$MIN 2048"
dmsetup mknodes "lvstamp-$ID1"
rec blkid-blank blkid -p -o export "/dev/mapper/lvstamp-$ID1"
rec blkid-missing-path blkid -p -o export /dev/mapper/lvstamp-does-not-exist
mkfs.ext4 -q "/dev/mapper/lvstamp-$ID1"
rec blkid-ext4 blkid -p -o export "/dev/mapper/lvstamp-$ID1"
mkdir -p /tmp/rec-mnt && mount "/dev/mapper/lvstamp-$ID1" /tmp/rec-mnt
rec dmsetup-info dmsetup info -c --noheadings --separator '|' -o name,uuid,major,minor,open
rec dmsetup-info-one dmsetup info -c --noheadings --separator '|' -o name,uuid,major,minor,open "lvstamp-$ID1"
rec dmsetup-info-missing dmsetup info -c --noheadings --separator '|' -o name,uuid,major,minor,open lvstamp-missing
rec dmsetup-table dmsetup table
rec dmsetup-table-one dmsetup table "lvstamp-$ID1"
rec lvs-open lvs "${J[@]}" -o lv_name,lv_attr,lv_device_open $VG
rec dmsetup-remove-busy dmsetup remove --noudevsync "lvstamp-$ID1"
umount /tmp/rec-mnt
rec dmsetup-remove dmsetup remove --noudevsync "lvstamp-$ID1"
lvcreate -y -n xfs -L 320m $VG >/dev/null && mkfs.xfs -q "/dev/$VG/xfs"
rec blkid-xfs blkid -p -o export "/dev/$VG/xfs"
rec lvremove lvremove -y "$VG/xfs"
rec lvremove-missing lvremove -y "$VG/xfs"
vgremove -ff -y $VG >/dev/null && pvremove -y "$LOOP" >/dev/null && losetup -d "$LOOP"
echo "lvm: $(lvm version | head -1 | tr -s ' '); kernel $(uname -r)" >"$OUT/VERSION"
