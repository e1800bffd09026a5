#!/bin/sh
# eth-offloads (two guests point to point): for each of the 8 combinations of ethtool -K tso/tx/rx (set on both
# ends), a 2 MiB random file goes g0 -> g1 and g1 -> g0 over TCP (nc); both print the sha256 they sent and
# received. Then the harness injects frames on g0's link (its udp port): a UDP datagram with a bad UDP checksum,
# one with a bad IPv4 header checksum, then a good one; only the good one may reach g0's socket.
. /usr/local/lib/vrnic-eth-lib.sh
P=$((1 - G))
eth_up
eth_wait_peer $P 90 || vr_fail "peer $(eth_ip $P) never answered"
dd if=/dev/urandom of=/tmp/f$G bs=65536 count=32 2> /dev/null
echo "ETH-SHA-FILE g$G $(sha256sum /tmp/f$G | cut -d' ' -f1)"
onoff() { [ $(( ($1 >> $2) & 1 )) = 1 ] && echo on || echo off; }
# send_file K FROM: guest FROM sends its file to the other one on port 7100+2K(+1)
xfer() {
  _port=$((7100 + 2 * $1 + $2)); _from=$2; _to=$((1 - $2))
  if [ "$G" = $_to ]; then
    # busybox nc ends at EOF on its stdin: the listener's stdin is a fifo that a sleep holds open
    rm -f /tmp/hold; mkfifo /tmp/hold
    sleep 90 > /tmp/hold &
    _hp=$!
    ( timeout 60 nc -l -p $_port < /tmp/hold > /tmp/r 2> /dev/null; echo $? > /tmp/r.rc ) &
    _lp=$!
  fi
  eth_barrier "k$1-from$_from-listen"
  if [ "$G" = $_from ]; then
    _n=0
    until timeout 60 nc $(eth_ip $_to) $_port < /tmp/f$G > /dev/null 2>&1; do
      _n=$((_n + 1)); [ $_n -lt 20 ] || { echo "ETH-XFER-FAIL k$1 g$_from"; break; }; sleep 0.5
    done
  else
    wait $_lp
    kill $_hp 2> /dev/null
    echo "ETH-SHA k$1 g$_to<-g$_from $(sha256sum /tmp/r | cut -d' ' -f1) bytes=$(wc -c < /tmp/r) rc=$(cat /tmp/r.rc)"
  fi
  eth_barrier "k$1-from$_from-done"
}
k=0
while [ $k -lt 8 ]; do
  # one feature a call: a feature the NIC has fixed (virtio-net's rx) must not block the others
  krc=0
  for f in "tx $(onoff $k 1)" "tso $(onoff $k 0)" "rx $(onoff $k 2)"; do
    ethtool -K $ETH_DEV $f > /tmp/k 2>&1 || { krc=1; echo "ETH-OFFLOAD-SET g$G ethtool -K $f: $(head -1 /tmp/k)"; }
  done
  echo "ETH-OFFLOAD k$k g$G want tso=$(onoff $k 0) tx=$(onoff $k 1) rx=$(onoff $k 2) rc=$krc have" \
    "$(ethtool -k $ETH_DEV | grep -E '^(tcp-segmentation-offload|tx-checksumming|rx-checksumming):' | tr '\n' ' ')"
  xfer $k 0
  xfer $k 1
  k=$((k + 1))
done
ethtool -K $ETH_DEV tso on tx on rx on > /dev/null 2>&1
# the injected frames (harness: interact_eth_offloads) arrive at g0's port
if [ "$G" = 0 ]; then
  grep '^Udp:' /proc/net/snmp | tail -1 | sed 's/^/ETH-UDP-BEFORE /'
  grep '^Ip:' /proc/net/snmp | tail -1 | sed 's/^/ETH-IP-BEFORE /'
  udpx recv 7777 12 > /tmp/u &
  up=$!
  sleep 0.5
  echo "ETH-INJECT-READY"
  wait $up
  echo "ETH-INJECT-RX g0: $(grep -v UDPX-RECV /tmp/u | tr '\n' ' ')"
  grep '^Udp:' /proc/net/snmp | tail -1 | sed 's/^/ETH-UDP-AFTER /'
  grep '^Ip:' /proc/net/snmp | tail -1 | sed 's/^/ETH-IP-AFTER /'
  eth_stats inject
fi
eth_barrier done
vr_dmesg "eth-offloads"
