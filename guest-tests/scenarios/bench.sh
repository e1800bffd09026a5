#!/bin/sh
# bench: the perftest set on vrnic (mlx5_0) and, in the same run, on Linux rxe, like against like.
#   one guest  (bench-loopback): mlx5_0 loopback vs rxe0 on lo, server and client in the guest (127.0.0.1);
#   two guests (bench-2vm): mlx5_0 over the vrnic UDP fabric vs rxe0 on eth0, the virtio-net link between the
#   same two guests (g0 servers, g1 clients).
# The harness turns the client result rows into BENCH lines.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
TOPO=loopback; NETDEV=lo
if [ -n "$(vr_ip)" ]; then TOPO=2vm; NETDEV=eth0; else export VR_LOOPBACK=1; fi
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
modprobe crc32_generic; modprobe rdma_rxe || vr_fail "modprobe rdma_rxe"
rdma link add rxe0 type rxe netdev $NETDEV || vr_fail "rdma link add rxe0 netdev $NETDEV"
rdma link show
echo "BENCH-START g$G topology=$TOPO"
LAT_N=${LAT_ITERS:-1000}; BW_N=${BW_ITERS:-1000}; BW_S=${BW_SIZE:-65536}
# 1000 8-byte atomics last ~3 ms on vrnic: what that measures is the start-up (first doorbells, TCG
# translating the posting loop), run to run 0.03..0.30 Mpps; 20000 still mostly measure it (loopback trap
# 2.6 MB/s, against 4.7..4.9 MB/s with 200000 or 400000; rxe 0.23..0.29 MB/s at either count). 100000 give
# the steady rate and keep rxe's two-guest run (~0.04 MB/s, ~20 s) inside vr_pair's 60 s. Both devices get
# the same count.
AT_N=${ATOMIC_BW_ITERS:-100000}
# Each test runs REPS times (vrnic.bench_reps, default 3), vrnic and rxe alternating within a repetition so
# both meet the same host; the harness reports the median of the repetitions. One run alone swings: rxe's
# loopback write latency ranged 45..140 us between identical runs on the same host.
# A development run can name a subset on the kernel command line (guest-tests/run --guest-arg ...):
# vrnic.bench=ib_write_lat,ib_atomic_bw, vrnic.bench_devs=mlx5_0, vrnic.bench_lat_iters=N, vrnic.bench_atomic_iters=N,
# vrnic.bench_reps=N.
TESTS=$(vr_karg vrnic.bench); TESTS=${TESTS:-ib_write_lat,ib_send_lat,ib_read_lat,ib_atomic_lat,ib_write_bw,ib_send_bw,ib_read_bw,ib_atomic_bw,mr_reg}
DEVS=$(vr_karg vrnic.bench_devs); DEVS=${DEVS:-mlx5_0,rxe0}
_n=$(vr_karg vrnic.bench_lat_iters); LAT_N=${_n:-$LAT_N}
_n=$(vr_karg vrnic.bench_atomic_iters); AT_N=${_n:-$AT_N}
_n=$(vr_karg vrnic.bench_reps); REPS=${_n:-${BENCH_REPS:-3}}
echo "BENCH-SET tests=$TESTS devs=$DEVS reps=$REPS"
# vrnic.bench_psr=1: every 0.5 s, which vCPU each perftest process is on ("PSR pid comm cpu=N time";
# field 39 of /proc/pid/stat), to see where the guest's scheduler put a pair.
if [ -n "$(vr_karg vrnic.bench_psr)" ]; then
  ( while :; do
      for d in /proc/[0-9]*; do
        c=$(cat $d/comm 2>/dev/null)
        case $c in ib_*)
          # A process that just exited leaves no stat: a shift past the end would end this shell.
          set -- $(sed 's/.*) //' $d/stat 2>/dev/null)
          [ $# -ge 37 ] && shift 36 && echo "PSR ${d#/proc/} $c cpu=$1 $(date +%s)";;
        esac
      done
      sleep 0.5
    done ) &
fi
for t in $(echo $TESTS | tr , ' '); do
  case $t in
    ib_write_lat|ib_send_lat|ib_read_lat) A="-s 2 -n $LAT_N";;
    ib_atomic_lat) A="-n $LAT_N";;
    ib_write_bw|ib_send_bw|ib_read_bw) A="-s $BW_S -n $BW_N";;
    ib_atomic_bw) A="-n $AT_N";;
    mr_reg) continue;;
    *) echo "bench: unknown test $t"; continue;;
  esac
  rep=1
  while [ $rep -le $REPS ]; do
    for dev in $(echo $DEVS | tr , ' '); do
      vr_pair bench-$dev-$t-r$rep 60 $t -d $dev -i 1 -F $A
    done
    rep=$((rep + 1))
  done
done
# mr_reg: MR registration rate (ibv_reg_mr + ibv_dereg_mr per second, 4 KiB .. 64 MiB; rereg.c's bench
# mode), on guest 0 only (a local operation), each device REPS times: "MRBENCH <dev> <bytes> <per-second>".
case ",$TESTS," in *,mr_reg,*)
  if [ "$G" = 0 ]; then
    rep=1
    while [ $rep -le $REPS ]; do
      for dev in $(echo $DEVS | tr , ' '); do rereg bench $dev; done
      rep=$((rep + 1))
    done
  fi;;
esac
echo "BENCH-DONE g$G"
vr_dmesg "after bench"
