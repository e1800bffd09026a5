#!/bin/sh
# churn: verbs objects (PD, 1 MiB MR, CQ, SRQ, RC QP to RTR, device memory) created and destroyed in a loop;
# the harness samples the server's private resident memory (RssAnon) after a warm-up and at the end: it must stay flat (within 5%).
. /usr/local/lib/vrnic-lib.sh
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
echo "=== churn 10 45 ==="
churn 10 45; echo "CHURN-RC $?"
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state"
