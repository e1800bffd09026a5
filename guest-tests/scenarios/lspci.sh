#!/bin/sh
# lspci: print the raw `lspci -nn -vvv`; the harness asserts the 15b3:1017 function's details.
. /usr/local/lib/vrnic-lib.sh
echo "=== lspci -nn -vvv ==="
lspci -nn -vvv
echo "=== end lspci ==="
BDF=$(vr_bdf)
[ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
echo "LSPCI-BDF $BDF"
