#!/bin/sh
# bench-roce (two guests over udp; the harness runs it with vrnic ports, then with virtio-net + rxe): the perftest
# set over RoCE v2 (-x <IPv4 GID index>), REPS repetitions of each pair (guest 0 serves). Output: TOOL blocks
# bench-<test>-r<k>; the harness prints BENCH lines (run/bench_roce.py).
. /usr/local/lib/vrnic-roce-lib.sh
REPS=${REPS:-3}
roce_all_up
echo "BENCH-ROCE-START g$G nic=$ETH_NIC dev=$ROCE_DEV reps=$REPS"
D="-d @DEV@ -i 1 -F -x @GID4@"
r=1
while [ $r -le $REPS ]; do
  for t in write send read; do
    roce_perf 0 bench-ib_${t}_lat-r$r 90 ib_${t}_lat $D -s 2 -n ${LAT_ITERS:-1000}
  done
  roce_perf 0 bench-ib_atomic_lat-r$r 90 ib_atomic_lat $D -n ${LAT_ITERS:-1000}
  for t in write send read; do
    roce_perf 0 bench-ib_${t}_bw-r$r 90 ib_${t}_bw $D -s 65536 -n ${BW_ITERS:-500}
  done
  roce_perf 0 bench-ib_atomic_bw-r$r 90 ib_atomic_bw $D -n ${BW_ITERS:-500}
  r=$((r + 1))
done
eth_barrier done
