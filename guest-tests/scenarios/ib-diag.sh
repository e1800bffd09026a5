#!/bin/sh
# ib-diag: two guests, each with its own vrnic (LID 1, 2) on the UDP fabric, and infiniband-diags. Each prints
# ibstat (its own node/port/system image GUIDs, base LID, SM LID) and its node description. Guest 0 then asks
# guest 1's port over the fabric: smpquery -L nodeinfo/nodedesc/portinfo 2 (LID-routed SMPs on QP0, answered by
# guest 1's ib_mad through MAD_IFC's SMA), perfquery 2 1 (PerfMgt on QP1, answered by guest 1's mlx5_ib PMA)
# before and after 500 ibv_ud_pingpong round trips between the guests. Both ask the SA (vrnic's, on the SM LID 1
# port: guest 1 over the fabric, guest 0 locally): saquery (all NodeRecords), saquery -p (all PathRecords, RMPP).
# sminfo and ibnetdiscover are not run: no SM answers SMInfo, and directed-route SMPs beyond hop 0 need the
# modeled switch of a later phase.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
vr_two_guests_up
modprobe ib_umad
i=0; while [ ! -e /dev/infiniband/umad0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ibstat mlx5_0 | sed "s/^[[:space:]]*/IBSTAT g$G /"
echo "IBDIAG g$G node_desc=$(cat /sys/class/infiniband/mlx5_0/node_desc)"
# tool NAME CMD...: the command's output between markers, with its exit status
tool() {
  _n=$1; shift
  echo "=== IBDIAG-TOOL $_n: $* ==="
  timeout 20 "$@" 2>&1; _rc=$?
  echo "=== IBDIAG-TOOL-END $_n rc=$_rc ==="
  return $_rc
}
if [ "$G" = 0 ]; then
  # guest 1's port answers once its mlx5_ib is up: retry the first SMP for up to 60 s
  i=0
  until smpquery -L nodeinfo 2 > /tmp/ni 2>&1; do
    i=$((i + 1)); [ $i -lt 60 ] || break; sleep 1
  done
  echo "IBDIAG g0 first nodeinfo after $i retries"
  tool nodeinfo smpquery -L nodeinfo 2
  tool nodedesc smpquery -L nodedesc 2
  tool portinfo smpquery -L portinfo 2
  tool perf-before perfquery 2 1
fi
tool sa-nodes-g$G saquery
tool sa-paths-g$G saquery -p
vr_pair ud-500 40 ibv_ud_pingpong -d mlx5_0 -i 1 -s 256 -n 500
if [ "$G" = 0 ]; then
  tool perf-after perfquery 2 1
  tool perf-local perfquery
  # guest 1 may power off now
  i=0
  until echo done | timeout 5 nc 10.0.0.2 18799 2>/dev/null | grep -q ok; do
    i=$((i + 1)); [ $i -lt 50 ] || break; sleep 0.2
  done
else
  echo ok | timeout 90 nc -l -p 18799 > /dev/null 2>&1
fi
echo "IBDIAG-DONE g$G"
vr_dmesg "after ib-diag"
