#!/bin/sh
# timestamp: guest-tests/src/timestamp.c checks the device clock: hca_core_clock, ibv_query_rt_values_ex
# (monotonic, at the advertised rate) and completion timestamps (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) on an
# RC loopback pair: present, non-decreasing, between clock reads taken before and after.
. /usr/local/lib/vrnic-lib.sh
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
ibv_devinfo -d mlx5_0 -v | grep -E "hca_id|hca_core_clock|completion_timestamp_mask"
echo "=== timestamp ==="
timestamp; echo "TIMESTAMP-RC $?"
echo "=== ibv_devinfo after ==="
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state"
vr_dmesg "after timestamp"
