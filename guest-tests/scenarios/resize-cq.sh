#!/bin/sh
# resize-cq: guest-tests/src/resize_cq.c resizes a CQ up and down (ibv_resize_cq) while completions of an RC
# loopback pair sit unpolled in it; every CQE must survive the switch to the new buffer, in order, and traffic
# then runs through the resized CQ across its wrap; a resize below the unpolled count must be refused.
. /usr/local/lib/vrnic-lib.sh
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
echo "=== resize_cq ==="
resize_cq; echo "RESIZE-RC $?"
echo "=== ibv_devinfo after ==="
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state"
vr_dmesg "after resize_cq"
