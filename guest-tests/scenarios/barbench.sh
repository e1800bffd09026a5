#!/bin/sh
# barbench: time BAR0 accesses through sysfs resource0 (no driver bound).
. /usr/local/lib/vrnic-lib.sh
BDF=$(vr_bdf)
[ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
echo "BARBENCH-BDF $BDF"
barbench $BDF ${ITERS:-20000}
