#!/bin/sh
# xrc: two guests, each with its own vrnic on the UDP fabric; guest 0 serves, guest 1 is the client (the tool's
# out-of-band TCP over the virtio-net link): ibv_xsrq_pingpong, XRC initiator QPs sending into XRC SRQs through
# XRC target QPs, both ways: 64 B x 500, 16 KiB x 100 (multi-packet) with CQ events (-e), and one server for two
# client processes at once (-c 2: both clients' messages land in the server's one XRC SRQ).
. /usr/local/lib/vrnic-lib.sh
# xrc_multi LABEL LIMIT N CMD...: vr_pair for N clients at once: guest 0 runs "CMD -c N -p PORT" (one server
# for N client processes), guest 1 the N clients "CMD -p PORT 10.0.0.1" in parallel, shown as LABEL-1 .. LABEL-N.
xrc_multi() {
  _label=$1; _plim=$2; _n=$3; shift 3
  VR_PAIR_N=$(( ${VR_PAIR_N:-0} + 1 )); _port=$(( ${VR_PORT0:-18600} + VR_PAIR_N ))
  VR_G=$(vr_guest)
  if [ "$VR_G" = 0 ]; then
    _ts=$(vr_now)
    timeout "$_plim" "$@" -c "$_n" -p "$_port" > /tmp/multi.server 2>&1
    _src=$?
    _vr_show "$_label" server "$* -c $_n -p $_port" /tmp/multi.server "$_src" "$(vr_since $_ts)" 1
    echo ok | timeout "$_plim" nc -l -p $((_port + 1000)) > /dev/null 2>&1
  else
    _tc=$(vr_now); _i=1
    while [ $_i -le "$_n" ]; do
      ( _vr_client "$_plim" /tmp/multi.client$_i 10.0.0.1 "$@" -p "$_port"; echo "$? $_ctries" > /tmp/multi.rc$_i ) &
      _i=$((_i + 1))
    done
    wait
    _i=1
    while [ $_i -le "$_n" ]; do
      read _crc _tries < /tmp/multi.rc$_i
      _vr_show "$_label-$_i" client "$* -p $_port 10.0.0.1" /tmp/multi.client$_i "$_crc" "$(vr_since $_tc)" "$_tries"
      _i=$((_i + 1))
    done
    _k=0
    until echo done | nc 10.0.0.1 $((_port + 1000)) 2>/dev/null | grep -q ok; do
      _k=$((_k + 1)); [ $_k -lt 100 ] || break; sleep 0.2
    done
  fi
}
G=$(vr_guest)
vr_two_guests_up
ibv_devinfo -d mlx5_0 -v | grep -E "hca_id|state|port_lid|XRC"
echo "XRC-START g$G role=$([ "$G" = 0 ] && echo server || echo client)"
D="-d mlx5_0 -i 1"
vr_pair xrc-s64         60 ibv_xsrq_pingpong $D -s 64 -n 500
vr_pair xrc-e-s16384    60 ibv_xsrq_pingpong $D -e -s 16384 -n 100
xrc_multi xrc-c2-s4096  60 2 ibv_xsrq_pingpong $D -s 4096 -n 100
echo "XRC-DONE g$G"
vr_dmesg "after xrc"
