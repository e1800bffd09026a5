#!/bin/sh
# scale (by hand, issue 38 item 3): scale.c creates RC QPs (shared CQs and SRQs), MRs and CQs up to what the
# device advertises, uses the QPs (paired to RTS, one SEND across a sample), destroys everything; the harness
# samples the server's object counts and memory at SCALE-BASELINE and SCALE-END.
# --guest-arg SCALE=QPS,MRS,CQS,SAMPLE (default 0,0,0,64: 0 = the device's maximum, -1 = skip the phase).
. /usr/local/lib/vrnic-lib.sh
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
ibv_devinfo -v -d mlx5_0 | grep -E "max_qp:|max_cq:|max_mr:|max_srq:|max_pd:"
set -- $(echo "${SCALE:-0,0,0,64}" | tr , ' ')
echo "=== scale $* ==="
scale "$@"; echo "SCALE-RC $?"
free -m | sed 's/^/SCALE-MEM /'
vr_dmesg "after scale"
