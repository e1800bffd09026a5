#!/bin/sh
# probe: stock mlx5_core binds the function and prints the firmware version from the init segment.
. /usr/local/lib/vrnic-lib.sh
BDF=$(vr_bdf)
[ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
echo "PROBE-BDF $BDF"
modprobe mlx5_core > /tmp/modprobe.log 2>&1 &
i=0
while [ $i -lt 300 ]; do
  dmesg | grep -q "mlx5_core.*firmware version" && break
  sleep 0.1; i=$((i+1))
done
echo "=== dmesg ==="
dmesg
echo "=== end dmesg ==="
sleep 1
dmesg | grep "mlx5_core" | tail -20
