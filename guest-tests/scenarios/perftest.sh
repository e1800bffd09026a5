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
# [--guest-arg MANY_PAIRS=N: N pairs of each at once, each with MANY_QP QPs, on ports of their own]
# many_pairs OP N: N ib_OP_bw pairs side by side (g0 the servers, g1 the clients), each shown as a TOOL block
# labelled ib_OP_bw_q<QPs>_p<i>
many_pairs() {
  VR_G=$G; _op=$1; _n=$2; _p0=$((19000 + VR_PAIR_N0)); VR_PAIR_N0=$((VR_PAIR_N0 + _n))
  _args="$D -s 4096 -n ${MANY_ITERS:-20} -q $MANY_QP"
  if [ "$G" = 0 ]; then
    _i=0; while [ $_i -lt "$_n" ]; do
      ( _t=$(vr_now); timeout 900 ib_${_op}_bw $_args -p $((_p0 + _i)) > /tmp/mp.$_i 2>&1
        echo "$? $(vr_since $_t)" > /tmp/mp.$_i.rc ) &
      _i=$((_i + 1)); done
    sleep 1; echo ok | timeout 120 nc -l -p $((_p0 + 500)) > /dev/null 2>&1; wait
    _side=server; _peer=
  else
    _k=0; until echo hi | timeout 3 nc 10.0.0.1 $((_p0 + 500)) 2>/dev/null | grep -q ok; do
      _k=$((_k + 1)); [ $_k -lt 200 ] || break; sleep 0.5; done
    _i=0; while [ $_i -lt "$_n" ]; do
      ( _t=$(vr_now); timeout 900 ib_${_op}_bw $_args -p $((_p0 + _i)) 10.0.0.1 > /tmp/mp.$_i 2>&1
        echo "$? $(vr_since $_t)" > /tmp/mp.$_i.rc ) &
      _i=$((_i + 1)); done
    wait
    _side=client; _peer=" 10.0.0.1"
  fi
  _i=0; while [ $_i -lt "$_n" ]; do
    set -- $(cat /tmp/mp.$_i.rc)
    _vr_show ib_${_op}_bw_q${MANY_QP}_p$_i $_side "ib_${_op}_bw $_args -p $((_p0 + _i))$_peer" /tmp/mp.$_i "$1" "$2" 1
    _i=$((_i + 1)); done
}
VR_PAIR_N0=0
if [ -n "${MANY_QP:-}" ]; then
  for t in $(echo ${MANY_OPS:-write} | tr , ' '); do
    if [ -n "${MANY_PAIRS:-}" ]; then
      many_pairs $t $MANY_PAIRS
    else
      vr_pair ib_${t}_bw_q$MANY_QP 600 ib_${t}_bw $D -s 4096 -n ${MANY_ITERS:-20} -q $MANY_QP
    fi
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
