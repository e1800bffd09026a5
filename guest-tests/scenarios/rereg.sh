#!/bin/sh
# rereg: guest-tests/src/rereg.c: ibv_rereg_mr with every combination of CHANGE_TRANSLATION / _PD / _ACCESS
# (atomic included), data moved and checked through the MR after each, then 1000 reg/rereg/dereg cycles.
# mlx5_ib executes these with UMR WQEs on its REG_UMR QP. The harness reads the server's mkey count at
# REREG-BASELINE and REREG-END (the program pauses after each): it must come back to the baseline.
. /usr/local/lib/vrnic-lib.sh
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
echo "=== rereg ==="
rereg; echo "REREG-RC $?"
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state"
vr_dmesg "after rereg"
