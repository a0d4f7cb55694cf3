# shellcheck shell=bash
# tests/module_reload.sh, sourced by tests/batch and tests/with_pm_log (in
# the VM).  module_reload [PARAM...]: unmounts $MORSEL_MNT, unloads the
# module, loads $MORSEL_MODULE again with PARAM... and mounts $MORSEL_MNT
# again.  Prints what went wrong (nothing if all went well) and then
# returns 1: the mount or the module still busy, the module or the mount
# not back.
module_reload() {
	local mnt=${MORSEL_MNT:-/tmp/morsel} why=
	if ! umount "$mnt"; then
		why="$mnt stayed busy"
	elif ! rmmod morsel; then
		why="the module stayed in use"
	fi
	if ! lsmod | grep -q '^morsel ' && ! insmod "$MORSEL_MODULE" "$@"; then
		why="${why:+$why; }the module did not load again"
	fi
	mountpoint -q "$mnt" || mount -t morselfs none "$mnt" ||
		why="${why:+$why; }$mnt could not be mounted again"
	[ -z "$why" ] || { echo "$why"; return 1; }
}
