#!/bin/sh
# net2: the out-of-band link between two guests (qemu/launch --guests 2): each guest pings the other and
# guest 0 serves one TCP connection to guest 1 (busybox nc). No RDMA device needed.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
ip addr show eth0 || vr_fail "no eth0"
PEER=10.0.0.$((2 - G))
n=0
until ping -c 1 -W 1 $PEER >/dev/null 2>&1; do
  n=$((n + 1)); [ $n -lt 60 ] || vr_fail "ping $PEER: no answer in 60 tries"
done
ping -c 3 $PEER
echo "NET2-PING-OK g$G -> $PEER after $n retries"
if [ "$G" = 0 ]; then
  echo "hello from g0 $(vr_uptime)" | nc -l -p 5000 > /tmp/got
  echo "NET2-TCP g0 received: $(cat /tmp/got)"
else
  n=0
  until echo "hello from g1" | nc $PEER 5000 > /tmp/got 2>/dev/null && [ -s /tmp/got ]; do
    n=$((n + 1)); [ $n -lt 60 ] || vr_fail "nc $PEER 5000: no connection"; sleep 0.5
  done
  echo "NET2-TCP g1 received: $(cat /tmp/got)"
fi
