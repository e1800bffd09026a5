#!/bin/sh
# Runs inside each of the two demo guests (qemu/demo: qemu/launch --guests 2): the device as lspci sees it,
# the stock mlx5 drivers binding it and the RDMA device they register, then unmodified ibv_rc_pingpong and
# ib_write_lat between the guests (guest 0 serves, guest 1 connects to 10.0.0.1 over the virtio-net link;
# the RDMA traffic goes through the two vrnic processes and their UDP fabric).
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
echo "=== guest $G: lspci -nn -d 15b3: -vv"
lspci -nn -d 15b3: -vv
echo "=== modprobe mlx5_core mlx5_ib ib_umad ib_cm ib_ipoib"
vr_mlx5_up 90 || vr_fail "mlx5_0 not ACTIVE"
modprobe ib_umad; modprobe ib_cm; modprobe ib_ipoib
echo "=== dmesg | grep -i mlx5"
dmesg | grep -i mlx5
echo "=== ibv_devinfo -v"
ibv_devinfo -v 2>&1
echo "=== rdma link"
rdma link 2>&1
echo "=== ip addr show eth0 (out-of-band link)"
ip addr show eth0 2>&1
if [ -z "$(vr_ip)" ]; then
  echo "DEMO: one guest only (no out-of-band link): ibv_rc_pingpong in loopback"
  export VR_LOOPBACK=1
fi
summary() {  # the result lines of the last pair, from this guest's side(s)
  for f in /tmp/pair.server /tmp/pair.client; do
    [ -s $f ] || continue
    grep -E "iters in|bytes in" $f | sed "s|^|DEMO $1 g$G ${f#/tmp/pair.}: |"
    grep -A1 "#bytes" $f | tail -1 | sed "s|^|DEMO $1 g$G ${f#/tmp/pair.}: |"
    rm -f $f
  done
}
rm -f /tmp/pair.server /tmp/pair.client
vr_pair ibv_rc_pingpong 60 ibv_rc_pingpong -d mlx5_0 -i 1 -s 4096 -n 1000 -c
summary ibv_rc_pingpong > /tmp/demo.sum
vr_pair ib_write_lat 60 ib_write_lat -d mlx5_0 -i 1 -F -n 1000
summary ib_write_lat >> /tmp/demo.sum
echo "=== DEMO RESULTS (guest $G)"
grep -v "#bytes" /tmp/demo.sum
