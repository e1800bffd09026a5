#!/bin/sh
# reboot: print whether the function is visible, then reboot (the harness counts boots).
. /usr/local/lib/vrnic-lib.sh
if lspci -nn | grep -q "15b3:1017"; then
  echo "REBOOT-DEVICE-SEEN $(lspci -nn | grep 15b3:1017)"
else
  echo "REBOOT-DEVICE-MISSING"
fi
sync
echo b > /proc/sysrq-trigger
sleep 10
