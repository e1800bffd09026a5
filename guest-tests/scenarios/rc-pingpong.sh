#!/bin/sh
# rc-pingpong: two guests, each with its own vrnic (LID 1, 2) joined by the UDP fabric; guest 0 runs the
# servers, guest 1 the clients (out-of-band TCP over the virtio-net link 10.0.0.1 <-> 10.0.0.2):
# ibv_rc_pingpong with and without -e, 1 B .. 1 MiB, -c; ibv_uc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
vr_two_guests_up
ibv_devinfo -d mlx5_0 | grep -E "hca_id|fw_ver|state|port_lid|active_mtu|link_layer"
echo "PINGPONG-START g$G role=$([ "$G" = 0 ] && echo server || echo client)"
vr_pingpong_set
echo "PINGPONG-DONE g$G"
vr_dmesg "after rc-pingpong"
