#!/bin/sh
# ib-sm-failover: three guests, each with its own vrnic (LIDs 1, 2, 3) on the UDP fabric; every server is an SM,
# LID 1 the master (its server runs the SA), 2 and 3 standbys polling it with SMInfo. Guest 1 (LID 2) runs an
# ib_write_bw client to guest 2 (LID 3) for 25 s (the takeover takes under 10 s of it); once it runs, the harness
# kills guest 0's QEMU and then its vrnic (the master SM's server). Guests 1 and 2 watch their port's sm_lid: the standby LID 2 must take over
# (PORT_CHANGE CLIENT_REREG: ib_sa re-reads the SM LID) within 10 s, ibstat must show SM lid 2, saquery from
# both must be answered by the new SA (LID 2's server: locally for guest 1, over the fabric for guest 2) with
# the two live ports, and the RC transfer must complete without an error.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
vr_two_guests_up
modprobe ib_umad
i=0; while [ ! -e /dev/infiniband/umad0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
SMLID=/sys/class/infiniband/mlx5_0/ports/1/sm_lid
echo "SMFO g$G sm_lid $(cat $SMLID) before"
tool() {
  _n=$1; shift
  echo "=== SMFO-TOOL $_n: $* ==="
  timeout 20 "$@" 2>&1; _rc=$?
  echo "=== SMFO-TOOL-END $_n rc=$_rc ==="
  return $_rc
}
if [ "$G" = 0 ]; then
  # The master SM's guest: the harness ends it (and then its server) once guest 1's transfer runs.
  echo "SMFO-G0-WAIT"
  sleep 600
  exit 0
fi
D="-d mlx5_0 -i 1 -F -s 4096 -D 25 -p 18750"
if [ "$G" = 2 ]; then
  (timeout 150 ib_write_bw $D > /tmp/rc 2>&1; echo $? > /tmp/rc.rc) &
  BW=$!
else
  (t0=$(vr_now); n=0
   while :; do
     n=$((n + 1))
     timeout 150 ib_write_bw $D 10.0.0.3 > /tmp/rc 2>&1; rc=$?
     _vr_connect_failed /tmp/rc && [ "$(vr_since $t0 | cut -d. -f1)" -lt 60 ] || break
     sleep 0.5
   done
   echo $rc > /tmp/rc.rc) &
  BW=$!
  # the harness waits for this line (and traffic at LID 3's server) before it kills the master
  echo "SMFO-RC-START g1"
fi
# the standby of the lowest LID (2) must become the master SM
t0=$(vr_now)
while [ "$(($(cat $SMLID)))" != 2 ] && [ "$(vr_since $t0 | cut -d. -f1)" -lt 120 ]; do sleep 0.2; done
echo "SMFO-SM-CHANGED g$G sm_lid $(($(cat $SMLID))) watched $(vr_since $t0) s"
ibstat mlx5_0 | grep -E "SM lid|State:" | sed "s/^[[:space:]]*/IBSTAT g$G /"
tool sa-nodes-g$G saquery
wait $BW
echo "=== SMFO-TOOL rc-g$G: ib_write_bw $D ==="
cat /tmp/rc
echo "=== SMFO-TOOL-END rc-g$G rc=$(cat /tmp/rc.rc) ==="
echo "SMFO g$G sm_lid $(cat $SMLID) after"
vr_dmesg "after ib-sm-failover"
echo "SMFO-DONE g$G"
