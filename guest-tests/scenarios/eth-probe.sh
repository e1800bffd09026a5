#!/bin/sh
# eth-probe (one guest, port in eth mode on a udp link): mlx5_core binds and creates its netdev, ethtool -i says
# mlx5_core, ip link set up brings carrier up, 12 s of health polling with the link up, ethtool -l shows the
# channels; the dmesg dump is checked for mlx5 error lines by the harness.
. /usr/local/lib/vrnic-eth-lib.sh
BDF=$(vr_bdf)
[ "$ETH_NIC" != vrnic ] || [ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
eth_up
[ "$ETH_NIC" = vrnic ] && vr_bindings $BDF
ethtool -i $ETH_DEV | sed 's/^/ETH-INFO /'
ethtool -l $ETH_DEV 2>&1 | sed 's/^/ETH-CHANNELS /'
ethtool $ETH_DEV 2>&1 | grep -E "Speed|Duplex|Link detected" | sed 's/^ */ETH-LINK /'
ip -d link show $ETH_DEV
t0=$(vr_uptime)
echo "ETH-HEALTH-WAIT from=$t0"
i=0
while [ $i -lt 12 ]; do
  sleep 1; i=$((i + 1))
  [ "$(cat /sys/class/net/$ETH_DEV/carrier)" = 1 ] || echo "ETH-CARRIER-LOST at=$(vr_uptime)"
done
echo "ETH-HEALTH-DONE at=$(vr_uptime) carrier=$(cat /sys/class/net/$ETH_DEV/carrier) operstate=$(cat /sys/class/net/$ETH_DEV/operstate)"
ip -s link show $ETH_DEV
vr_dmesg "eth-probe"
