#!/bin/sh
# roce-perftest (two guests on an Ethernet segment): ib_{write,send,read,atomic}_{lat,bw} over RoCE v2 with
# -x <IPv4 GID index> (perftest's own TCP exchange on the out-of-band link), ib_send_bw over the IPv6 GID, and
# write/send/read lat and bw with -R (rdma_cm resolves the peer's IPv4 address on the segment), and the send tests
# in event mode (-e). Guest 0 serves.
. /usr/local/lib/vrnic-roce-lib.sh
roce_all_up
ibv_devinfo -d $ROCE_DEV | grep -E "hca_id|state|active_mtu|link_layer"
echo "ROCE-PERFTEST-START g$G"
L=${LAT_ITERS:-200}; B=${BW_ITERS:-200}
D="-d @DEV@ -i 1 -F"
# Many QPs at once, by hand (not in CI): guest-tests/run roce-perftest --guest-arg MANY_QP=256 [--guest-arg
# MANY_ITERS=100] [--guest-arg MANY_OPS=write,send,read] [--guest-arg MANY_ONLY=1: nothing else, the check fails]
if [ -n "${MANY_QP:-}" ]; then
  for t in $(echo ${MANY_OPS:-write} | tr , ' '); do
    roce_perf 0 x-ib_${t}_bw_q$MANY_QP 600 ib_${t}_bw $D -x @GID4@ -s 4096 -n ${MANY_ITERS:-100} -q $MANY_QP
  done
  [ -z "${MANY_ONLY:-}" ] || exit 0
else
  # 1024 QPs at once (perftest's defaults: timeout 14, retry 7): global pause holds the senders, every QP gets
  # its turn (docs/qos.md)
  roce_perf 0 x-ib_write_bw_q1024 300 ib_write_bw $D -x @GID4@ -s 4096 -n 20 -q 1024
fi
for t in write send read; do
  roce_perf 0 x-ib_${t}_lat 60 ib_${t}_lat $D -x @GID4@ -s 2 -n $L
done
roce_perf 0 x-ib_atomic_lat 60 ib_atomic_lat $D -x @GID4@ -n $L
for t in write send read; do
  roce_perf 0 x-ib_${t}_bw 60 ib_${t}_bw $D -x @GID4@ -s 65536 -n $B
done
roce_perf 0 x-ib_atomic_bw 60 ib_atomic_bw $D -x @GID4@ -n $B
roce_perf 0 x6-ib_send_bw 60 ib_send_bw $D -x @GID6@ -s 65536 -n $B
for t in write send read; do
  roce_perf_cm 0 R-ib_${t}_lat 60 ib_${t}_lat $D -s 2 -n $L
  roce_perf_cm 0 R-ib_${t}_bw 60 ib_${t}_bw $D -s 65536 -n $B
done
# completion events (-e: CQ arm -> EQE -> MSI-X -> ibv_get_cq_event) over RoCE: send lat RC/UD, a long send bw, bidir
E="$D -x @GID4@ -e"
roce_perf 0 e-ib_send_lat     60 ib_send_lat $E -s 2 -n $L
roce_perf 0 e-ib_send_lat_ud  60 ib_send_lat $E -c UD -s 2 -n $L
roce_perf 0 e-ib_send_bw      90 ib_send_bw $E -N -s 65536 -n ${EV_BW_ITERS:-5000}
roce_perf 0 e-ib_send_bw_bidir 60 ib_send_bw $E -N -b -s 65536 -n $B
echo "ROCE-PERFTEST-DONE g$G"
roce_counters perftest
vr_dmesg "roce-perftest"
