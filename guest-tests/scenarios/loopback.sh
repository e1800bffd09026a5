#!/bin/sh
# loopback: the rc-pingpong tool set with server and client inside this one guest on one device (mlx5_0,
# out-of-band over 127.0.0.1); the vrnic server has LID 1 and a fabric port without peers.
. /usr/local/lib/vrnic-lib.sh
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
ibv_devinfo -d mlx5_0 | grep -E "hca_id|fw_ver|state|port_lid|active_mtu|link_layer"
echo "PINGPONG-START g0 role=both"
VR_LOOPBACK=1 vr_pingpong_set
echo "PINGPONG-DONE g0"
vr_dmesg "after loopback"
