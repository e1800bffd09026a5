#!/bin/sh
# bench-ulp (two guests over udp; the harness runs it with vrnic ports, then with virtio-net + rxe): REPS
# repetitions of fio 4 KiB random read QD16 and 128 KiB sequential read QD16 over NVMe-oF (8 s each, a 64 MiB
# region written first), fio 128 KiB sequential read QD16 of a 64 MiB file over NFS/RDMA (page cache dropped) and
# 4 KiB random read QD1 of it with O_DIRECT (one READ RPC per I/O: the RPC-over-RDMA round trip), and
# ucx_perftest tag latency (8 B). Output: ETH-TOOL blocks bench-<test>-r<k> (fio) and TOOL blocks (ucx); the
# harness prints BENCH lines (run/bench_ulp.py). A barrier after each repetition keeps every wait of guest 0 under
# eth_barrier's 120 s on rxe too. Kernel arguments: vrnic.bench_ulp=nvme[,nvmeqd1][,nfs][,ucx] (the parts run;
# default nvme,nfs,ucx; nvmeqd1 adds fio 4 KiB randread at QD1 to each NVMe repetition),
# vrnic.bench_reps=N (default 3). Around each NVMe 4 KiB run both guests print ULP-SNAP <label> lines (their
# /proc/interrupts RDMA/NIC rows and /proc/stat cpu rows, "pre-r<k>" and "post-r<k>"), which
# guest-tests/tools/ulp-snap.py pairs with the host's thread CPU times and the servers' stats.
. /usr/local/lib/vrnic-ulp-lib.sh
REPS=$(vr_karg vrnic.bench_reps); REPS=${REPS:-3}
PARTS=,$(vr_karg vrnic.bench_ulp),; [ "$PARTS" = ,, ] && PARTS=,nvme,nfs,ucx,
part() { case "$PARTS" in *,$1,*) return 0;; esac; return 1; }
ulp_snap() {
  echo "ULP-SNAP g$G $1 begin"
  grep -E 'mlx5|virtio|rxe' /proc/interrupts | tr -s ' ' | sed "s/^/ULP-SNAP g$G $1 irq /"
  grep '^cpu' /proc/stat | sed "s/^/ULP-SNAP g$G $1 stat /"
  echo "ULP-SNAP g$G $1 end"
}
RT=${BENCH_RT:-8}
MNT=/mnt/nfs
ulp_hang_watch
roce_all_up
echo "BENCH-ULP-START g$G nic=$ETH_NIC dev=$ROCE_DEV reps=$REPS runtime=$RT"
[ "$G" = 0 ] && { ulp_nvmet_up; ulp_nfs_server_up /export; }
eth_barrier servers-up
if part nvme; then
if [ "$G" = 1 ]; then
  ulp_nvme_connect
  ulp_fio prefill 100 --filename=$ULP_BDEV --rw=write --bs=128k --iodepth=16 --size=64M
fi
eth_barrier nvme-ready
r=1
while [ $r -le $REPS ]; do
  eth_barrier nvme-go-r$r
  ulp_snap pre-r$r
  if [ "$G" = 1 ]; then
    ulp_fio bench-nvme-randread4k-r$r 50 --filename=$ULP_BDEV --rw=randread --bs=4k --iodepth=16 --size=64M \
      --time_based --runtime=$RT
  fi
  eth_barrier nvme-4k-r$r
  ulp_snap post-r$r
  if [ "$G" = 1 ] && part nvmeqd1; then
    ulp_fio bench-nvme-randread4kqd1-r$r 50 --filename=$ULP_BDEV --rw=randread --bs=4k --iodepth=1 --size=64M \
      --time_based --runtime=$RT
  fi
  if [ "$G" = 1 ]; then
    ulp_fio bench-nvme-seqread128k-r$r 50 --filename=$ULP_BDEV --rw=read --bs=128k --iodepth=16 --size=64M \
      --time_based --runtime=$RT
  fi
  eth_barrier nvme-r$r
  r=$((r + 1))
done
[ "$G" = 1 ] && ulp_nvme_disconnect
fi
if part nfs; then
if [ "$G" = 1 ]; then
  ulp_nfs_mount $MNT
  ulp_fio nfs-prefill 100 --filename=$MNT/bench.dat --rw=write --bs=128k --iodepth=16 --size=64M
fi
eth_barrier nfs-ready
r=1
while [ $r -le $REPS ]; do
  if [ "$G" = 1 ]; then
    echo 3 > /proc/sys/vm/drop_caches
    ulp_fio bench-nfs-read128k-r$r 90 --filename=$MNT/bench.dat --rw=read --bs=128k --iodepth=16 --size=64M \
      --time_based --runtime=$RT
    ulp_fio bench-nfs-randread4kqd1-r$r 90 --filename=$MNT/bench.dat --rw=randread --bs=4k --iodepth=1 --size=64M \
      --time_based --runtime=$RT
  fi
  eth_barrier nfs-r$r
  r=$((r + 1))
done
[ "$G" = 1 ] && umount $MNT
fi
if part ucx; then
export UCX_NET_DEVICES=$ROCE_DEV:1
r=1
while [ $r -le $REPS ]; do
  roce_pair 0 bench-ucx-tag_lat-r$r 90 ucx_perftest -P 0 -p @PORT@ -- ucx_perftest @SOOB@ -P 0 -p @PORT@ -t tag_lat -s 8 -n 2000
  r=$((r + 1))
done
fi
eth_barrier done
ulp_ktrouble end
