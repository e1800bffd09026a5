#!/bin/sh
# peer-loss: two guests, each with its own vrnic. Guest 1 runs an ib_write_bw server, guest 0 the client
# (RDMA WRITEs for 60 s). Once the client prints PEERLOSS-CLIENT-START the harness SIGKILLs guest 1's vrnic
# mid-transfer: guest 0's writes are never ACKed, so its client must fail with "transport retry counter
# exceeded" (IBV_WC_RETRY_EXC_ERR, status 12). Then guest 0's device must still work: port ACTIVE and a
# loopback ibv_rc_pingpong -c on it. Guest 1 reports that it is still alive (its device is gone).
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
vr_two_guests_up
D="-d mlx5_0 -i 1 -F"
if [ "$G" = 1 ]; then
  echo "PEERLOSS-SERVER-START g1"
  timeout 120 ib_write_bw $D -s 65536 -D 60 -p 18750 > /tmp/srv 2>&1
  rc=$?
  cat /tmp/srv
  echo "PEERLOSS-SERVER-END g1 rc=$rc"
  echo "PEERLOSS-G1-ALIVE"
  exit 0
fi
# guest 0: the client, retried while the server does not listen yet
t0=$(vr_now); n=0
while :; do
  n=$((n + 1))
  echo "PEERLOSS-CLIENT-START g0 try=$n"
  timeout 120 ib_write_bw $D -s 65536 -D 60 -p 18750 10.0.0.2 > /tmp/cli 2>&1
  rc=$?
  _vr_connect_failed /tmp/cli && [ "$(vr_since $t0 | cut -d. -f1)" -lt 60 ] || break
  sleep 0.5
done
echo "=== TOOL peer-loss g0 client: ib_write_bw $D -s 65536 -D 60 -p 18750 10.0.0.2 ==="
cat /tmp/cli
echo "=== TOOL-END peer-loss g0 client rc=$rc seconds=$(vr_since $t0) tries=$n ==="
echo "PEERLOSS-CLIENT-END g0 rc=$rc"
echo "=== ibv_devinfo after ==="
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state"
VR_LOOPBACK=1 VR_PORT0=18760 vr_pair after-loss 60 ibv_rc_pingpong -d mlx5_0 -i 1 -s 4096 -n 200 -c
vr_dmesg "after peer-loss"
echo "PEERLOSS-DONE g0"
