#!/bin/sh
# bad-opcode: guest-tests/src/bad_opcode.c writes send WQEs the device does not execute (unknown and
# unadvertised opcodes, ds 0, opmod 1, a reserved fence mode; RC and UD) straight into the SQ through
# mlx5dv and rings the UAR doorbell: each must complete with IBV_WC_LOC_QP_OP_ERR (and a CQ event), the WQE
# behind it flush, the QP be in ERR and recover through RESET; a hand-built NOP completes successfully.
# Then the device must still work and the port be ACTIVE.
. /usr/local/lib/vrnic-lib.sh
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
echo "=== bad_opcode ==="
bad_opcode; echo "BAD-OPCODE-RC $?"
echo "=== ibv_devinfo after ==="
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state"
vr_dmesg "after bad_opcode"
