#!/bin/sh
# ib-opensm: the real subnet manager in place of vrnic's. Three guests, each with its own vrnic (--sm off: no
# built-in SM; the ports power up INIT without a LID, the modeled switch unconfigured) on the UDP fabric. Each prints
# its port before any SM. Guest 0 reads the fabric's GUIDs through the modeled switch (smpquery -D: directed routes
# work without an SM), writes OpenSM's guid2lid with the fabric's LIDs (the port GUIDs of LIDs 1..3, the switch's
# node GUID for LID 4: the vrnic fabric routes by those) and starts OpenSM (Debian's opensm) on its port. OpenSM
# sweeps the fabric through the modeled switch, assigns the LIDs, programs the switch (PortInfo, SwitchInfo, LFT,
# MFT, P_Keys), brings every port INIT -> ARMED -> ACTIVE and runs the SA. Then, in the same boot, ib-lib.sh's
# ib_sa_run and ipoib_run: the checks ib-sa and ipoib pass against the built-in SM, here answered by OpenSM.
. /usr/local/lib/vrnic-roce-lib.sh  # vrnic-lib.sh, and roce_show
. /usr/local/lib/vrnic-ib-lib.sh
G=$(vr_guest)
P=/sys/class/infiniband/mlx5_0/ports/1
[ -n "$(vr_ip)" ] || vr_fail "no out-of-band address (vrnic.net)"
modprobe mlx5_core || vr_fail "modprobe mlx5_core"
modprobe mlx5_ib || vr_fail "modprobe mlx5_ib"
modprobe ib_umad
i=0; while { [ ! -e $P/state ] || [ ! -e /dev/infiniband/umad0 ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
echo "OPENSM g$G before: state=$(cat $P/state) phys=$(cat $P/phys_state) lid=$(cat $P/lid) sm_lid=$(cat $P/sm_lid)"
# field NAME: the value of a `smpquery` field line ("PortGuid:........0x...")
field() { sed -n "s/^$1:\.*//p" | head -1; }
# dr_guid PATH FIELD: FIELD of the NodeInfo at directed route PATH, retried for up to 60 s (the other guests' ports
# answer once their mlx5_ib is up)
dr_guid() {
  _i=0
  until _g=$(smpquery -D nodeinfo "$1" 2>/dev/null | field "$2") && [ -n "$_g" ]; do
    _i=$((_i + 1)); [ $_i -lt 60 ] || break; sleep 1
  done
  echo "$_g"
}
if [ "$G" = 0 ]; then
  OSM=/tmp/opensm
  mkdir -p $OSM
  PG=$(dr_guid 0 PortGuid)
  SW=$(dr_guid 0,1 Guid)
  : > $OSM/guid2lid
  for k in 1 2 3; do
    echo "$(dr_guid 0,1,$k PortGuid) $k $k" >> $OSM/guid2lid
  done
  echo "$SW 4 4" >> $OSM/guid2lid
  echo "OPENSM g0 port $PG switch $SW guid2lid: $(tr '\n' ';' < $OSM/guid2lid)"
  t0=$(vr_now)
  # -D 0x83: errors, info and the SYS messages in the log; -d 2: flushed as written (SUBNET UP is info);
  # --dump_files_dir: its subnet dumps (opensm-subnet.lst, ...) where the initramfs has a directory
  OSM_CACHE_DIR=$OSM opensm -g "$PG" -D 0x83 -d 2 --dump_files_dir $OSM -f $OSM/opensm.log > $OSM/opensm.out 2>&1 &
  i=0; until grep -q "SUBNET UP" $OSM/opensm.log 2>/dev/null || [ $i -ge 900 ]; do sleep 0.1; i=$((i + 1)); done
  echo "OPENSM g0 subnet up after $(vr_since $t0) s: $(grep -c 'SUBNET UP' $OSM/opensm.log 2>/dev/null) SUBNET UP line(s)"
fi
vr_two_guests_up
echo "OPENSM g$G after: state=$(cat $P/state) phys=$(cat $P/phys_state) lid=$(cat $P/lid) sm_lid=$(cat $P/sm_lid)"
# every guest starts the bodies together (guest 0 started later: it brought OpenSM up first)
if [ "$G" = 0 ]; then
  for ip in 10.0.0.2 10.0.0.3; do
    i=0; until echo go | timeout 5 nc $ip 18798 2>/dev/null | grep -q ok; do
      i=$((i + 1)); [ $i -lt 300 ] || break; sleep 0.2; done
  done
else
  echo ok | timeout 300 nc -l -p 18798 > /dev/null 2>&1
fi
ib_sa_run
# The SM's part of IPoIB (the broadcast join, PathRecords, CM over them, multicast) is the same at any count: 200
# pings a peer and rping -C 1000 here; the data path's endurance (1000 pings, rping -C 10000) is ipoib's, in CI.
IPOIB_PINGS=200 IPOIB_RPING_C=1000 ipoib_run
if [ "$G" = 0 ]; then
  echo "=== OPENSM-LOG ==="
  head -40 $OSM/opensm.log
  grep "ERR" $OSM/opensm.log | head -20
  echo "=== OPENSM-LOG-END lines=$(wc -l < $OSM/opensm.log) err=$(grep -c ERR $OSM/opensm.log) ==="
  sed 's/^/OPENSM-OUT /' $OSM/opensm.out | head -20
fi
vr_dmesg "after ib-opensm"
