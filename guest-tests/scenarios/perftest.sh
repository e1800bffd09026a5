#!/bin/sh
# perftest: ib_{write,send,read,atomic}_{lat,bw} between two guests (guest 0 server, guest 1 client,
# out-of-band TCP over 10.0.0.1 <-> 10.0.0.2), small iteration counts for TCG.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
vr_two_guests_up
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state|port_lid|active_mtu|link_layer"
echo "PERFTEST-START g$G role=$([ "$G" = 0 ] && echo server || echo client)"
D="-d mlx5_0 -i 1 -F"
# Many QPs at once, by hand (not in CI): guest-tests/run perftest --doorbell trap --guest-arg MANY_QP=1024
# [--guest-arg MANY_ITERS=20] [--guest-arg MANY_OPS=write,send,read] [--guest-arg MANY_ONLY=1: nothing else]
if [ -n "${MANY_QP:-}" ]; then
  for t in $(echo ${MANY_OPS:-write} | tr , ' '); do
    vr_pair ib_${t}_bw_q$MANY_QP 600 ib_${t}_bw $D -s 4096 -n ${MANY_ITERS:-20} -q $MANY_QP
  done
  [ -z "${MANY_ONLY:-}" ] || { echo "PERFTEST-DONE g$G"; exit 0; }
fi
vr_pair ib_write_lat   40 ib_write_lat  $D -s 2 -n ${LAT_ITERS:-1000}
vr_pair ib_send_lat    40 ib_send_lat   $D -s 2 -n ${LAT_ITERS:-1000}
vr_pair ib_read_lat    40 ib_read_lat   $D -s 2 -n ${LAT_ITERS:-1000}
vr_pair ib_atomic_lat  40 ib_atomic_lat $D -n ${LAT_ITERS:-1000}
vr_pair ib_write_bw    40 ib_write_bw   $D -s 65536 -n ${BW_ITERS:-1000}
vr_pair ib_send_bw     40 ib_send_bw    $D -s 65536 -n ${BW_ITERS:-1000}
vr_pair ib_read_bw     40 ib_read_bw    $D -s 65536 -n ${BW_ITERS:-1000}
vr_pair ib_atomic_bw   40 ib_atomic_bw  $D -n ${BW_ITERS:-1000}
# Many QPs at once (perftest's defaults: timeout 14, retry 7): every QP's queue rung together
# must not overflow the receiver (link-level flow control, docs/ib-fabric.md). In the trap-mode boot
# only: how QPs share the link does not depend on how their doorbells reach the device.
[ "$(vr_karg vrnic.doorbell)" = poll ] ||
  vr_pair ib_write_bw_q1024 120 ib_write_bw $D -s 4096 -n ${Q1024_ITERS:-20} -q 1024
echo "PERFTEST-DONE g$G"
vr_dmesg "after perftest"
