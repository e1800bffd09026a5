#!/bin/sh
# grh: traffic whose address vectors carry a GRH (perftest -x 0, pingpong -g 0: DGID = the peer's GID 0,
# fe80::/64 + port GUID) on the IB port, routed by LID. First between the two guests (guest 0 server,
# guest 1 client), then guest 0 runs grh_ah (UD with a GRH: the GRH area, IBV_WC_GRH, ibv_create_ah_from_wc)
# and the same perftest set in loopback against its own device.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
vr_two_guests_up
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state|port_lid|link_layer"
echo "GRH-GID0 g$G $(cat /sys/class/infiniband/mlx5_0/ports/1/gids/0)"
echo "GRH-START g$G role=$([ "$G" = 0 ] && echo server || echo client)"
D="-d mlx5_0 -i 1 -F"
N=${GRH_ITERS:-200}
grh_perftest() {  # PREFIX
  vr_pair $1-send-bw     40 ib_send_bw  $D -x 0 -s 65536 -n $N
  vr_pair $1-write-lat   40 ib_write_lat $D -x 0 -s 2 -n $N
  vr_pair $1-read-bw     40 ib_read_bw  $D -x 0 -s 65536 -n $N
  vr_pair $1-ud-send-lat 40 ib_send_lat $D -c UD -x 0 -s 2 -n $N
}
grh_perftest 2vm
vr_pair 2vm-rc-pingpong 40 ibv_rc_pingpong -d mlx5_0 -i 1 -g 0 -s 4096 -n $N
vr_pair 2vm-ud-pingpong 40 ibv_ud_pingpong -d mlx5_0 -i 1 -g 0 -s 1024 -n $N
if [ "$G" = 0 ]; then
  echo "GRH-LOOPBACK-START g0"
  echo "=== grh_ah ==="
  timeout 30 grh_ah; echo "GRH-AH rc=$?"
  VR_LOOPBACK=1; VR_PORT0=18700
  grh_perftest lo
fi
echo "GRH-DONE g$G"
vr_dmesg "after grh"
