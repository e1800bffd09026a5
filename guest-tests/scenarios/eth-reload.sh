#!/bin/sh
# eth-reload (two guests point to point, g0 under test, g1 answers): each boot of g0: netdev up and 20 pings
# (ETH-RELOAD-BOOT-UP); then 3x unload/load of the driver (rmmod mlx5_ib mlx5_core / modprobe) and 10x
# ip link set down/up, each followed by pings; then `reboot -f` on the same server. The harness stops the guests
# once the second boot has pinged.
. /usr/local/lib/vrnic-eth-lib.sh
P=$((1 - G))
eth_up
eth_wait_peer $P 90 || vr_fail "peer never answered"
echo "ETH-RELOAD-BOOT-UP g$G uptime=$(vr_uptime)"
eth_ping "boot-g$G" -c 20 -i 0.05 $(eth_ip $P)
# both ends have pinged before g0 takes its driver down (g1's pings raced g0's first rmmod); after g0's reboot the
# harness stops the guests once g0 has pinged again, while g0 waits here for a g1 that is done
eth_barrier boot-pings
if [ "$G" != 0 ]; then
  sleep 600
  exit 0
fi
i=1
while [ $i -le 3 ]; do
  case "$ETH_NIC" in
    vrnic) rmmod mlx5_ib 2> /dev/null; rmmod mlx5_core || vr_fail "cycle $i: rmmod mlx5_core rc=$?";;
    *) rmmod virtio_net || vr_fail "cycle $i: rmmod virtio_net rc=$?";;
  esac
  eth_find > /dev/null && vr_fail "cycle $i: netdev still there after rmmod"
  eth_up
  eth_wait_peer $P 60 || vr_fail "cycle $i: peer silent after reload"
  eth_ping "reload-$i" -c 20 -i 0.05 $(eth_ip $P)
  echo "ETH-RELOAD-CYCLE $i dev=$ETH_DEV"
  i=$((i + 1))
done
i=1
while [ $i -le 10 ]; do
  ip link set $ETH_DEV down
  [ "$(cat /sys/class/net/$ETH_DEV/operstate)" = down ] || echo "ETH-FLAP-NOT-DOWN $i $(cat /sys/class/net/$ETH_DEV/operstate)"
  ip link set $ETH_DEV up
  eth_wait_carrier $ETH_DEV 30 || vr_fail "flap $i: no carrier"
  eth_wait_peer $P 30 || vr_fail "flap $i: peer silent"
  eth_ping "flap-$i" -c 5 -i 0.05 $(eth_ip $P)
  echo "ETH-FLAP-CYCLE $i"
  i=$((i + 1))
done
vr_dmesg "eth-reload boot"
echo "ETH-RELOAD-CYCLES-DONE"
sleep 1
reboot -f
