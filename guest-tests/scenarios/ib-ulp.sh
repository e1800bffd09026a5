#!/bin/sh
# ib-ulp (two guests on the IB fabric, LIDs 1 and 2; issue 23's "ULPs on IB"): the kernel ULPs of the nvmeof and
# nfs-rdma scenarios on the InfiniBand personality instead of RoCE: rdma_cm resolves IPoIB addresses (ib0,
# 10.1.0.<G+1>/24: ARP over the broadcast group, a PathRecord from vrnic's SA on LID 1, CM over QP1). Guest 0 runs
# an nvmet target (RDMA port on its IPoIB address :4420) and the kernel NFS server (RDMA listener :20049); guest 1
# nvme connect -t rdma + fio --verify=crc32c (4 KiB random write/read QD16, 128 KiB sequential write/read QD8),
# disconnect; then mount -o rdma,port=20049,vers=4.2, files 1 KiB .. 16 MiB written and read back (sha256 on both
# sides), fio on the mount, the 4 KiB QD1 read round trip. The helpers are the RoCE scenarios' (ulp-lib.sh), with
# ib0 in place of the Ethernet netdev; barriers on the out-of-band link.
. /usr/local/lib/vrnic-ulp-lib.sh
ETH_NICS=ib,ib; ETH_N=2; ETH_NIC=ib; ETH_IP=$(eth_ip $G)
# ib_ulp_up: mlx5_ib ACTIVE, ib0 (IPoIB, datagram mode) up with ETH_IP once it joined the broadcast group
# (carrier), the peer answering pings; prints "IB-ULP-UP g<i> dev= netdev= state= link_layer= mode= mtu= after=".
ib_ulp_up() {
  _t0i=$(vr_uptime)
  for m in mlx5_ib ib_uverbs rdma_ucm ib_ipoib; do modprobe $m || vr_fail "modprobe $m rc=$?"; done
  _n=0
  until grep -q ACTIVE /sys/class/infiniband/mlx5_0/ports/1/state 2>/dev/null && [ -e /sys/class/net/ib0 ]; do
    _n=$((_n + 1)); [ $_n -lt 600 ] || { vr_dmesg "no ib0"; vr_fail "mlx5_0 not ACTIVE or no ib0 after 60 s"; }
    sleep 0.1
  done
  ROCE_DEV=mlx5_0; ETH_DEV=ib0
  ip addr add $ETH_IP/24 dev ib0 && ip link set ib0 up || vr_fail "ib0 $ETH_IP/24 up rc=$?"
  eth_wait_carrier ib0 60 || { vr_dmesg "ib0 carrier"; vr_fail "ib0 has no carrier after 60 s (broadcast join)"; }
  _p=$(eth_ip $((1 - G))); _n=0
  until ping -c 1 -W 1 $_p > /dev/null 2>&1; do
    _n=$((_n + 1)); [ $_n -lt 90 ] || { vr_dmesg "ipoib ping"; vr_fail "no IPoIB answer from $_p after 90 tries"; }
  done
  echo "IB-ULP-UP g$G dev=$ROCE_DEV netdev=ib0 state=$(sed 's/[^0-9].*//' /sys/class/infiniband/mlx5_0/ports/1/state)" \
    "link_layer=$(cat /sys/class/infiniband/mlx5_0/ports/1/link_layer) mode=$(cat /sys/class/net/ib0/mode)" \
    "mtu=$(cat /sys/class/net/ib0/mtu) ip=$ETH_IP ping_tries=$_n after=$(vr_since $_t0i)"
  eth_barrier ib-up
}
ulp_hang_watch
ib_ulp_up
echo "ULP-NVMEOF-START g$G nic=ib dev=$ROCE_DEV fio=$(ulp_have fio && fio --version)"
# ---- NVMe-oF over IB
[ "$G" = 0 ] && ulp_nvmet_up
eth_barrier nvmet-up
if [ "$G" = 1 ]; then
  ulp_nvme_connect
  V="--filename=$ULP_BDEV --verify=crc32c"
  ulp_fio rand4k-write 120 $V --rw=randwrite --bs=4k --iodepth=16 --size=${R4K:-4M}
  ulp_fio rand4k-read 120 $V --rw=randread --bs=4k --iodepth=16 --size=${R4K:-4M}
  ulp_fio seq128k-write 120 $V --rw=write --bs=128k --iodepth=8 --offset=64M --size=${S128K:-8M}
  ulp_fio seq128k-read 120 $V --rw=read --bs=128k --iodepth=8 --offset=64M --size=${S128K:-8M}
  ulp_nvme_disconnect
fi
eth_barrier nvme-done
# ---- NFS over RDMA over IB
NFS_SEQ=16M; NFS_RAND=4M; NFS_LAT_S=4
ulp_nfs_exercise
ulp_ktrouble end
vr_dmesg "ib-ulp g$G"
