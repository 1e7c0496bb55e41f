#!/bin/sh
# /usr/local/bin/lvstamp of the driver image (apps/csi-driver/Dockerfile): the node admins' CLI
# (apps/cli, its single-file bundle), run in the driver container with the driver's environment:
# its lvm.conf (/etc/lvm, the ConfigMap's), its host lock (the CLI's default path, as the
# DaemonSet's --lock-file) and the cluster's owner ID (LVSTAMP_OWNER_ID). LVSTAMP_IN_DRIVER_POD
# makes the CLI refuse the commands that make volumes (create, snapshot create, demo): they would
# carry the cluster's owner ID and its GC would remove them as orphans.
export LVSTAMP_IN_DRIVER_POD=1
exec node /opt/lvstamp/dist/lvstamp.mjs "$@"
