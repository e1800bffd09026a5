#!/bin/sh
# errors: guest-tests/src/err_test.c provokes remote access errors (bad rkey, out of bounds, missing
# permission), a local protection error, RNR with rnr_retry 0 and 7 (late receive), retry exhaustion, and
# the in-order WR_FLUSH_ERR flush, checking each ibv_wc_status; then the device must still work and the
# port be ACTIVE.
. /usr/local/lib/vrnic-lib.sh
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
echo "=== err_test ==="
err_test; echo "ERR-RC $?"
echo "=== ibv_devinfo after ==="
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state"
vr_dmesg "after err_test"
