#!/bin/sh
# roce-rxe (two guests on a bridge: guest 0 a vrnic port, guest 1 virtio-net with Soft-RoCE rxe0 over it): every
# pair in both roles (guest 0 serves, then guest 1): ibv_rc_pingpong -g, ibv_ud_pingpong -g, ib_write_bw,
# ib_read_lat, ib_send_bw, ib_atomic_lat with -x, rping -v -C 1000 (rdma_cm), ucmatose, udaddy,
# rdma_server/rdma_client. The interop matrix of docs: every line of it is one pair here.
. /usr/local/lib/vrnic-roce-lib.sh
roce_all_up
ibv_devinfo -d $ROCE_DEV | grep -E "hca_id|state|active_mtu|link_layer"
echo "ROCE-RXE-START g$G nic=$ETH_NIC dev=$ROCE_DEV"
D="-d @DEV@ -i 1"
for s in 0 1; do
  roce_perf $s s$s-rc-pingpong  60 ibv_rc_pingpong $D -g @GID4@ -s 4096 -n 200 -c
  roce_perf $s s$s-ud-pingpong  60 ibv_ud_pingpong $D -g @GID4@ -s 1024 -n 200 -c
  roce_perf $s s$s-ib_write_bw  60 ib_write_bw $D -F -x @GID4@ -s 65536 -n 200
  roce_perf $s s$s-ib_read_lat  60 ib_read_lat $D -F -x @GID4@ -s 2 -n 200
  roce_perf $s s$s-ib_send_bw   60 ib_send_bw $D -F -x @GID4@ -s 65536 -n 200
  roce_perf $s s$s-ib_atomic_lat 60 ib_atomic_lat $D -F -x @GID4@ -n 200
  roce_pair $s s$s-rping        180 rping -s -v -a @SIP@ -p @PORT@ -C 1000 -- rping -c -v -a @SIP@ -p @PORT@ -C 1000
  roce_pair $s s$s-ucmatose     120 ucmatose -b @SIP@ -p @PORT@ -- ucmatose -s @SIP@ -p @PORT@
  roce_pair $s s$s-udaddy       120 udaddy -b @SIP@ -- udaddy -s @SIP@
  roce_pair $s s$s-rdma-server  120 rdma_server -s @SIP@ -p @PORT@ -- rdma_client -s @SIP@ -p @PORT@
done
echo "ROCE-RXE-DONE g$G"
roce_counters rxe
vr_dmesg "roce-rxe"
