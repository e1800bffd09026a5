#!/bin/sh
# rxe-baseline: Soft-RoCE on lo, perftest server+client in the same guest over 127.0.0.1.
. /usr/local/lib/vrnic-lib.sh
ITERS=${ITERS:-1000}
modprobe crc32_generic || vr_fail "modprobe crc32_generic"
modprobe rdma_rxe || vr_fail "modprobe rdma_rxe"
modprobe ib_uverbs
ip link set lo up
rdma link add rxe0 type rxe netdev lo || vr_fail "rdma link add rxe0"
rdma link show
ibv_devices
ibv_devinfo -d rxe0 | head -30
for t in ib_write_lat ib_send_lat ib_read_lat ib_write_bw ib_send_bw; do
  case $t in *_bw) n=$ITERS; extra="-s 65536";; *) n=$ITERS; extra="";; esac
  echo "=== PERFTEST $t ==="
  a=0
  while :; do  # again when perftest's clock calibration failed (vr_calib_failed)
    a=$((a + 1))
    $t -d rxe0 -n $n $extra > /tmp/$t.server 2>&1 &
    spid=$!
    sleep 1
    timeout 60 $t -d rxe0 -n $n $extra 127.0.0.1 > /tmp/$t.client 2>&1
    crc=$?
    wait $spid
    src=$?
    vr_calib_failed /tmp/$t.client && [ $a -lt 3 ] || break
    echo "(perftest's clock calibration failed, attempt $a: again)"
  done
  echo "--- client (rc=$crc) ---"; cat /tmp/$t.client
  echo "--- server (rc=$src) ---"; tail -5 /tmp/$t.server
  echo "PERFTEST-RESULT $t client_rc=$crc server_rc=$src"
done
