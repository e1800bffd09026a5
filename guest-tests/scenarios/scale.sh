#!/bin/sh
# scale (issue 38 item 3): scale.c creates RC QPs (shared CQs and SRQs), MRs and CQs up to what the device
# advertises, uses the QPs (paired to RTS, one SEND across a sample), destroys everything; the harness samples
# the server's object counts and memory at SCALE-BASELINE and SCALE-END.
# In CI (this script): mlx5_core's profile 1 (prof_sel=1, the driver's own knob) sizes the QP table to 2^12, so
# QPs go to that maximum and past it in seconds; 8192 MRs, 4096 CQs. scale-max.sh: the device's own maxima.
# --guest-arg SCALE=QPS,MRS,CQS,SAMPLE (0 = the device's maximum, -1 = skip the phase).
. /usr/local/lib/vrnic-lib.sh
PROF=${SCALE_PROF-1}
SCALE=${SCALE:-${SCALE_DEFAULT:-0,8192,4096,64}}
if [ -n "$PROF" ]; then
  # the driver must load with the profile: unload what an earlier scenario of this boot left
  [ -e /sys/module/mlx5_core ] && { echo "SCALE unloading mlx5 for prof_sel=$PROF"; modprobe -r mlx5_ib mlx5_core; }
  modprobe mlx5_core prof_sel=$PROF || vr_fail "modprobe mlx5_core prof_sel=$PROF"
fi
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
ibv_devinfo -v -d mlx5_0 | grep -E "max_qp:|max_cq:|max_mr:|max_srq:|max_pd:"
set -- $(echo "$SCALE" | tr , ' ')
echo "=== scale $* ==="
scale "$@"; echo "SCALE-RC $?"
free -m | sed 's/^/SCALE-MEM /'
vr_dmesg "after scale"
