#!/bin/sh
# devinfo: raw `ibv_devinfo -v`, `rdma link`, `rdma dev` and the sysfs attributes of mlx5_0; the harness
# compares them with the server's configuration (fw version, GUIDs, LID).
. /usr/local/lib/vrnic-lib.sh
BDF=$(vr_bdf)
[ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
echo "=== ibv_devinfo -v ==="
ibv_devinfo -v; echo "ibv_devinfo rc=$?"
echo "=== end ibv_devinfo ==="
echo "=== rdma link ==="
rdma link; echo "rdma link rc=$?"
rdma dev; echo "rdma dev rc=$?"
echo "=== end rdma ==="
S=/sys/class/infiniband/mlx5_0
for f in fw_ver node_guid sys_image_guid node_type board_id ports/1/lid ports/1/sm_lid ports/1/state \
         ports/1/phys_state ports/1/link_layer ports/1/rate ports/1/gids/0 ports/1/pkeys/0; do
  echo "SYSFS $f=$(cat $S/$f 2>&1)"
done
vr_dmesg "devinfo"
