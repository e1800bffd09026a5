#!/bin/sh
# ib-sa: three guests, each with its own vrnic (LID 1, 2, 3) on the UDP fabric, and infiniband-diags. Each prints
# ibstat and ibstatus (its own node/port/system image GUIDs, base LID, SM LID) and its node description, asks the
# SM with sminfo (LID 1's vrnic answers SMInfo: g0 locally, g1/g2 over the fabric) and the SA (vrnic's, on LID 1)
# with saquery (all NodeRecords) and saquery -p (all PathRecords, RMPP). Guest 0 asks guest 1's port over the
# fabric: smpquery -L nodeinfo/nodedesc/portinfo 2 (LID-routed SMPs on QP0, answered by guest 1's ib_mad through
# MAD_IFC's SMA), perfquery 2 1 (PerfMgt on QP1, guest 1's mlx5_ib PMA) before and after 500 ibv_ud_pingpong round
# trips between guests 0 and 1. Guests 0 and 2 walk the fabric with ibnetdiscover (directed-route SMPs through the
# modeled switch: three CAs and one switch); guest 0 dumps the switch's forwarding table with ibroute.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
vr_two_guests_up
modprobe ib_umad
i=0; while [ ! -e /dev/infiniband/umad0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ibstat mlx5_0 | sed "s/^[[:space:]]*/IBSTAT g$G /"
ibstatus mlx5_0 2>&1 | sed "s/^[[:space:]]*/IBSTATUS g$G /"
echo "IBDIAG g$G node_desc=$(cat /sys/class/infiniband/mlx5_0/node_desc)"
# tool NAME CMD...: the command's output between markers, with its exit status
tool() {
  _n=$1; shift
  echo "=== IBDIAG-TOOL $_n: $* ==="
  timeout 30 "$@" 2>&1; _rc=$?
  echo "=== IBDIAG-TOOL-END $_n rc=$_rc ==="
  return $_rc
}
# the other guests' ports answer once their mlx5_ib is up: retry an SMP to each for up to 60 s
for l in 1 2 3; do
  [ $l = $((G + 1)) ] && continue
  i=0
  until smpquery -L nodeinfo $l > /tmp/ni 2>&1; do
    i=$((i + 1)); [ $i -lt 60 ] || break; sleep 1
  done
  echo "IBDIAG g$G first nodeinfo of lid $l after $i retries"
done
if [ "$G" = 0 ]; then
  tool nodeinfo smpquery -L nodeinfo 2
  tool nodedesc smpquery -L nodedesc 2
  tool portinfo smpquery -L portinfo 2
  tool perf-before perfquery 2 1
fi
tool sminfo-g$G sminfo
tool sa-nodes-g$G saquery
tool sa-paths-g$G saquery -p
if [ "$G" != 1 ]; then
  tool netdiscover-g$G ibnetdiscover
fi
[ "$G" = 0 ] && tool ibroute ibroute 4
[ "$G" != 2 ] && vr_pair ud-500 40 ibv_ud_pingpong -d mlx5_0 -i 1 -s 256 -n 500
if [ "$G" = 0 ]; then
  tool perf-after perfquery 2 1
  tool perf-local perfquery
  # guests 1 and 2 may power off now
  for ip in 10.0.0.2 10.0.0.3; do
    i=0
    until echo done | timeout 5 nc $ip 18799 2>/dev/null | grep -q ok; do
      i=$((i + 1)); [ $i -lt 50 ] || break; sleep 0.2
    done
  done
else
  echo ok | timeout 120 nc -l -p 18799 > /dev/null 2>&1
fi
echo "IBDIAG-DONE g$G"
vr_dmesg "after ib-sa"
