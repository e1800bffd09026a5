# helpers sourced by guest scenario scripts (installed as /usr/local/lib/vrnic-lib.sh)
vr_bdf() { lspci -D -n -d 15b3:1017 2>/dev/null | awk 'NR==1{print $1}'; }
vr_fail() { echo "GUEST-FAIL $*"; exit 1; }
vr_uptime() { cut -d' ' -f1 /proc/uptime; }
