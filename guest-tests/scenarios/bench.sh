#!/bin/sh
# bench: the perftest set on vrnic (mlx5_0) and, in the same run, on Linux rxe, like against like.
#   one guest  (bench-loopback): mlx5_0 loopback vs rxe0 on lo, server and client in the guest (127.0.0.1);
#   two guests (bench-2vm): mlx5_0 over the vrnic UDP fabric vs rxe0 on eth0, the virtio-net link between the
#   same two guests (g0 servers, g1 clients).
# The harness turns the client result rows into BENCH lines.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
TOPO=loopback; NETDEV=lo
if [ -n "$(vr_ip)" ]; then TOPO=2vm; NETDEV=eth0; else export VR_LOOPBACK=1; fi
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
modprobe crc32_generic; modprobe rdma_rxe || vr_fail "modprobe rdma_rxe"
rdma link add rxe0 type rxe netdev $NETDEV || vr_fail "rdma link add rxe0 netdev $NETDEV"
rdma link show
echo "BENCH-START g$G topology=$TOPO"
LAT_N=${LAT_ITERS:-1000}; BW_N=${BW_ITERS:-1000}; BW_S=${BW_SIZE:-65536}
# 1000 8-byte atomics last ~3 ms on vrnic: what that measures is the start-up (first doorbells, TCG
# translating the posting loop), run to run 0.03..0.30 Mpps; 20000 give a rate (0.39..0.40 Mpps,
# rxe 0.022..0.024 in the same guest). Both devices get the same count.
AT_N=${ATOMIC_BW_ITERS:-20000}
for dev in mlx5_0 rxe0; do
  D="-d $dev -i 1 -F"
  vr_pair bench-$dev-ib_write_lat  60 ib_write_lat  $D -s 2 -n $LAT_N
  vr_pair bench-$dev-ib_send_lat   60 ib_send_lat   $D -s 2 -n $LAT_N
  vr_pair bench-$dev-ib_read_lat   60 ib_read_lat   $D -s 2 -n $LAT_N
  vr_pair bench-$dev-ib_atomic_lat 60 ib_atomic_lat $D -n $LAT_N
  vr_pair bench-$dev-ib_write_bw   60 ib_write_bw   $D -s $BW_S -n $BW_N
  vr_pair bench-$dev-ib_send_bw    60 ib_send_bw    $D -s $BW_S -n $BW_N
  vr_pair bench-$dev-ib_read_bw    60 ib_read_bw    $D -s $BW_S -n $BW_N
  vr_pair bench-$dev-ib_atomic_bw  60 ib_atomic_bw  $D -n $AT_N
done
echo "BENCH-DONE g$G"
vr_dmesg "after bench"
