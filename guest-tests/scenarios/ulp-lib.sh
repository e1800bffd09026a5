# helpers of the kernel-ULP, UCX and libfabric scenarios (nvmeof, nfs-rdma, ucx, libfabric, bench-ulp), installed
# as /usr/local/lib/vrnic-ulp-lib.sh next to vrnic-roce-lib.sh. Two guests on an Ethernet segment, RoCE v2: a
# vrnic port (mlx5_ib) or virtio-net + rxe (`guest-tests/run --eth-nic virtio`), the same script on both.
. /usr/local/lib/vrnic-roce-lib.sh
ULP_NQN=nqn.2026-12.io.vrnic:ulp0
ULP_HOSTNQN=nqn.2026-12.io.vrnic:host$G
ULP_HOSTID=$(printf "7672b1c0-0000-4000-8000-0000000000%02x" $G)  # one per guest (the kernel's default is shared)
ULP_NVMET=/sys/kernel/config/nvmet
ulp_have() { command -v "$1" > /dev/null 2>&1; }
# ulp_tool LABEL LIMIT CMD...: eth_tool's block format (=== ETH-TOOL <label> g<i>: ... === / -END rc= seconds=)
ulp_tool() { eth_tool "$@"; }
# ---- NVMe over Fabrics (RDMA) ---------------------------------------------------------------------------------
# ulp_nvmet_up: this guest's nvmet target: a memory-backed null_blk (1 GiB, pages allocated as written, so the
# data reads back), subsystem ULP_NQN (any host) with it as namespace 1, RDMA port 1 on ETH_IP:4420.
ulp_nvmet_up() {
  modprobe configfs
  grep -q " /sys/kernel/config " /proc/mounts || mount -t configfs none /sys/kernel/config ||
    vr_fail "mount configfs rc=$?"
  modprobe null_blk nr_devices=1 memory_backed=1 gb=1 queue_mode=2 || vr_fail "modprobe null_blk rc=$?"
  modprobe nvmet || vr_fail "modprobe nvmet rc=$?"
  modprobe nvmet_rdma || vr_fail "modprobe nvmet_rdma rc=$?"
  _s=$ULP_NVMET/subsystems/$ULP_NQN
  mkdir $_s && echo 1 > $_s/attr_allow_any_host || vr_fail "nvmet subsystem $ULP_NQN"
  mkdir $_s/namespaces/1 && echo /dev/nullb0 > $_s/namespaces/1/device_path &&
    echo 1 > $_s/namespaces/1/enable || vr_fail "nvmet namespace 1 (/dev/nullb0)"
  _p=$ULP_NVMET/ports/1
  mkdir $_p && echo rdma > $_p/addr_trtype && echo ipv4 > $_p/addr_adrfam && echo $ETH_IP > $_p/addr_traddr &&
    echo 4420 > $_p/addr_trsvcid || vr_fail "nvmet port 1"
  ln -s $_s $_p/subsystems/$ULP_NQN || vr_fail "nvmet: enabling rdma port $ETH_IP:4420 failed"
  echo "ULP-NVMET-UP g$G nqn=$ULP_NQN traddr=$ETH_IP trsvcid=4420 dev=$ROCE_DEV" \
    "ns_bytes=$(($(cat /sys/block/nullb0/size) * 512))"
}
# ulp_nvmet_port_cycle: the RDMA port disabled and enabled again (unlink/link of the subsystem: what nvmetcli
# restore does): nvmet_rdma drops its listener when the RDMA device under it goes away and does not listen again
# by itself when a new device brings the address back
ulp_nvmet_port_cycle() {
  rm $ULP_NVMET/ports/1/subsystems/$ULP_NQN 2> /dev/null
  ln -s $ULP_NVMET/subsystems/$ULP_NQN $ULP_NVMET/ports/1/subsystems/$ULP_NQN ||
    vr_fail "nvmet: re-enabling rdma port $ETH_IP:4420 failed"
}
# the controller (nvme<N>) connected to ULP_NQN, empty if none
ulp_nvme_ctrl() {
  for _c in /sys/class/nvme/nvme*; do
    [ "$(cat $_c/subsysnqn 2>/dev/null)" = "$ULP_NQN" ] && { basename $_c; return 0; }
  done
  return 1
}
# ulp_nvme_connect [ctrl_loss_tmo reconnect_delay]: nvme connect -t rdma to guest 0's target; waits for the
# namespace's block device. Sets ULP_CTRL (nvme<N>) and ULP_BDEV (/dev/nvme<N>n1); prints "ULP-NVME-CONNECT ...".
ulp_nvme_connect() {
  modprobe nvme_rdma || vr_fail "modprobe nvme_rdma rc=$?"
  _t0=$(vr_now)
  _o=
  [ -z "$1" ] || _o="--ctrl-loss-tmo=$1 --reconnect-delay=$2"
  if ulp_have nvme; then
    ulp_tool nvme-connect 60 nvme connect -t rdma -a $(eth_ip 0) -s 4420 -n $ULP_NQN --hostnqn=$ULP_HOSTNQN --hostid=$ULP_HOSTID $_o ||
      vr_fail "nvme connect -t rdma -a $(eth_ip 0) failed"
  else  # before nvme-cli is in the image: the same option string written to the fabrics device
    _s="transport=rdma,traddr=$(eth_ip 0),trsvcid=4420,nqn=$ULP_NQN,hostnqn=$ULP_HOSTNQN,hostid=$ULP_HOSTID"
    [ -z "$1" ] || _s="$_s,ctrl_loss_tmo=$1,reconnect_delay=$2"
    echo "$_s" > /dev/nvme-fabrics || vr_fail "/dev/nvme-fabrics: $_s failed"
  fi
  _n=0
  until ULP_CTRL=$(ulp_nvme_ctrl) && ULP_BDEV=$(cd /sys/block && ls -d nvme*n1 2>/dev/null | grep -v 'c[0-9]*n' | head -1) &&
      [ -n "$ULP_BDEV" ] && [ -b /dev/$ULP_BDEV ]; do
    _n=$((_n + 1)); [ $_n -lt 300 ] || { ls /sys/block /dev/nvme* /sys/class/nvme/*/; cat /sys/class/nvme/*/state
      vr_dmesg "nvme connect"; vr_fail "no NVMe namespace 30 s after connect"; }
    sleep 0.1
  done
  ULP_BDEV=/dev/$ULP_BDEV
  echo "ULP-NVME-CONNECT g$G ctrl=$ULP_CTRL bdev=$ULP_BDEV transport=$(cat /sys/class/nvme/$ULP_CTRL/transport)" \
    "address=$(cat /sys/class/nvme/$ULP_CTRL/address | tr -d ' ') state=$(cat /sys/class/nvme/$ULP_CTRL/state)" \
    "bytes=$(($(cat /sys/block/${ULP_BDEV#/dev/}/size) * 512)) after=$(vr_since $_t0)"
}
ulp_nvme_disconnect() {
  if ulp_have nvme; then
    ulp_tool nvme-disconnect 60 nvme disconnect -n $ULP_NQN
  else
    echo 1 > /sys/class/nvme/$ULP_CTRL/delete_controller
  fi
  echo "ULP-NVME-DISCONNECT g$G rc=$? left=$(ulp_nvme_ctrl)"
}
# ulp_wait_ctrl_live LIMIT: wait for the controller's state "live"; prints "ULP-NVME-STATE ..."
ulp_wait_ctrl_live() {
  _t0=$(vr_now); _n=0
  while [ "$(cat /sys/class/nvme/$ULP_CTRL/state 2>/dev/null)" != live ]; do
    _n=$((_n + 1)); [ $_n -lt $(($1 * 5)) ] || break; sleep 0.2
  done
  echo "ULP-NVME-STATE g$G ctrl=$ULP_CTRL state=$(cat /sys/class/nvme/$ULP_CTRL/state 2>/dev/null || echo gone)" \
    "waited=$(vr_since $_t0)"
}
# ulp_fio LABEL LIMIT FIO-ARGS...: one fio job (--name=LABEL), direct I/O through libaio, in an ETH-TOOL block
ulp_fio() {
  _fl=$1; _flim=$2; shift 2
  ulp_tool fio-$_fl $_flim fio --name=$_fl --ioengine=libaio --direct=1 --group_reporting "$@"
}
# ---- the RDMA device restarted (the target side of nvmeof's restart under load) --------------------------------
# ulp_device_restart: what a user means by "the NIC restarted", as the guest can see it: on a vrnic port the PCI
# function's driver unbound (every QP, CQ, MR destroyed, the HCA torn down), a function-level reset (the device
# drops whatever state it had: what a fresh vrnic process would have), the driver bound again; then the port,
# its address and the RDMA device back (roce_up). On virtio-net + rxe, the rxe device deleted and added again
# (the same device removal seen by the ULPs). Prints "ULP-RESTART g<i> nic= how= seconds=".
ulp_device_restart() {
  _t0u=$(vr_now)
  if [ "$ETH_NIC" = vrnic ]; then
    _b=$(vr_bdf)
    echo $_b > /sys/bus/pci/drivers/mlx5_core/unbind || vr_fail "unbind $_b from mlx5_core rc=$?"
    echo 1 > /sys/bus/pci/devices/$_b/reset || vr_fail "function reset of $_b rc=$?"
    echo $_b > /sys/bus/pci/drivers/mlx5_core/bind || vr_fail "bind $_b to mlx5_core rc=$?"
    _how="unbind+flr+bind"
  else
    rdma link delete rxe0 || vr_fail "rdma link delete rxe0 rc=$?"
    sleep 2
    _how="rxe-delete+add"
  fi
  echo "ULP-RESTART-DOWN g$G nic=$ETH_NIC how=$_how seconds=$(vr_since $_t0u)"
  roce_up
  echo "ULP-RESTART g$G nic=$ETH_NIC how=$_how seconds=$(vr_since $_t0u)"
}
# ulp_ktrouble LABEL: the hung-task/WARNING lines of dmesg so far, counted ("ULP-KERNEL <label> g<i> bad=<n>")
ulp_ktrouble() {
  echo "ULP-KERNEL $1 g$G bad=$(dmesg | grep -cE 'blocked for more than|soft lockup|WARNING:|BUG:|Oops')"
}
# ulp_hang_watch: in the background, once a hung-task report appears in dmesg, its stack traces go to the console
# as "ULP-HUNG ..." lines (the console shows only KERN_ERR: the traces are KERN_INFO); evidence for the report
ulp_hang_watch() {
  ( while sleep 5; do
      dmesg | grep -q "blocked for more than" || continue
      sleep 2
      dmesg | sed -n '/blocked for more than/,$p' | head -400 | sed 's/^/ULP-HUNG /'
      break
    done ) &
}
# ---- NFS over RDMA (RPC-over-RDMA, RFC 8166/8267) ---------------------------------------------------------------
# ulp_nfs_server_up DIR: a tmpfs on DIR exported (fsid=0: the NFSv4 pseudo root) by the kernel NFS server, NFSv4
# only (no rpcbind in the image), listening on RDMA port 20049 (and TCP 2049); rpc.mountd answers the kernel's
# export upcalls. Grace period 10 s (the minimum: first opens wait for it). Prints "ULP-NFSD-UP ...".
ulp_nfs_server_up() {
  modprobe nfsd || vr_fail "modprobe nfsd rc=$?"
  modprobe rpcrdma || vr_fail "modprobe rpcrdma rc=$?"
  grep -q " /proc/fs/nfsd " /proc/mounts || mount -t nfsd nfsd /proc/fs/nfsd || vr_fail "mount nfsd rc=$?"
  mkdir -p $1 /var/lib/nfs/v4recovery && mount -t tmpfs -o size=256M tmpfs $1 || vr_fail "tmpfs on $1"
  echo "$1 *(rw,no_root_squash,insecure,no_subtree_check,fsid=0)" > /etc/exports
  exportfs -ra || vr_fail "exportfs -ra rc=$?"
  rpc.mountd -N 3 -F > /tmp/mountd.log 2>&1 &
  echo 10 > /proc/fs/nfsd/nfsv4leasetime
  echo 10 > /proc/fs/nfsd/nfsv4gracetime
  echo "-3 +4 +4.1 +4.2" > /proc/fs/nfsd/versions || vr_fail "nfsd versions rc=$?"
  echo "rdma 20049" > /proc/fs/nfsd/portlist || vr_fail "nfsd: no RDMA listener on 20049"
  echo 8 > /proc/fs/nfsd/threads || vr_fail "nfsd threads rc=$?"
  echo "ULP-NFSD-UP g$G export=$1 versions=$(cat /proc/fs/nfsd/versions | tr ' ' ,)" \
    "ports=$(cat /proc/fs/nfsd/portlist | tr '\n' , ) threads=$(cat /proc/fs/nfsd/threads)" \
    "exports=$(exportfs -v | tr -s ' \n\t' ' ')"
}
# ulp_nfs_mount DIR: guest 0's export mounted on DIR over RDMA (NFSv4.2, port 20049); prints "ULP-NFS-MOUNT ..."
ulp_nfs_mount() {
  modprobe nfsv4 || vr_fail "modprobe nfsv4 rc=$?"
  modprobe rpcrdma || vr_fail "modprobe rpcrdma rc=$?"
  mkdir -p $1
  _t0m=$(vr_now)
  ulp_tool nfs-mount 90 mount.nfs4 $(eth_ip 0):/ $1 -o rdma,port=20049,vers=4.2 ||
    { vr_dmesg "nfs mount"; vr_fail "mount -o rdma,port=20049,vers=4.2 $(eth_ip 0):/ failed"; }
  echo "ULP-NFS-MOUNT g$G $(grep " $1 " /proc/mounts | tr ' ' ' ') after=$(vr_since $_t0m)"
}
# ulp_nfs_exercise: the NFS/RDMA exchange of nfs-rdma and ib-ulp, on both guests: g0 serves a tmpfs (ulp_nfs_server_up
# /export), g1 mounts it on /mnt/nfs, writes files of 1 KiB .. 16 MiB and reads them back with its page cache dropped
# (sha256 on both sides: ULP-NFS-SUM lines), fio on the mount (--verify=crc32c: NFS_SEQ of 128 KiB writes, NFS_RAND
# of 4 KiB random writes) and the 4 KiB QD1 read round trip (NFS_LAT_S seconds), the transport from mountstats,
# umount. Barriers between the steps; prints what check_nfs_rdma / check_ib_ulp judge.
ulp_nfs_exercise() {
  _sizes="1024 65536 1048576 16777216"
  _mnt=/mnt/nfs
  if [ "$G" = 0 ]; then
    ulp_nfs_server_up /export
  else
    dd if=/dev/urandom of=/tmp/rnd bs=1M count=16 2> /dev/null
    for s in $_sizes; do head -c $s /tmp/rnd > /tmp/src.$s; done
  fi
  eth_barrier nfsd-up
  if [ "$G" = 1 ]; then
    ulp_nfs_mount $_mnt
    for s in $_sizes; do cp /tmp/src.$s $_mnt/f.$s || echo "ULP-NFS-WRITE-FAIL g$G f.$s rc=$?"; done
    sync
    echo 3 > /proc/sys/vm/drop_caches
    for s in $_sizes; do
      echo "ULP-NFS-SUM g$G src f.$s $(sha256sum < /tmp/src.$s | cut -d' ' -f1)"
      echo "ULP-NFS-SUM g$G nfs f.$s $(sha256sum < $_mnt/f.$s | cut -d' ' -f1) bytes=$(wc -c < $_mnt/f.$s)"
    done
  fi
  eth_barrier files-written
  if [ "$G" = 0 ]; then
    for s in $_sizes; do echo "ULP-NFS-SUM g$G export f.$s $(sha256sum < /export/f.$s | cut -d' ' -f1)"; done
  fi
  eth_barrier files-summed
  if [ "$G" = 1 ]; then
    _v="--directory=$_mnt --verify=crc32c"
    ulp_fio nfs-seq128k 180 $_v --rw=write --bs=128k --iodepth=4 --size=${NFS_SEQ:-32M}
    ulp_fio nfs-rand4k 180 $_v --rw=randwrite --bs=4k --iodepth=8 --size=${NFS_RAND:-8M}
    ulp_tool fio-nfs-lat4k 90 fio --name=nfs-lat4k --directory=$_mnt --ioengine=psync --direct=1 --rw=randread \
      --bs=4k --size=${NFS_RAND:-8M} --time_based --runtime=${NFS_LAT_S:-8}
    grep -E "xprt:|^\s+(READ|WRITE|GETATTR|OPEN):" /proc/self/mountstats | sed "s/^/ULP-NFS-MOUNTSTATS g$G /"
    umount $_mnt
    echo "ULP-NFS-UMOUNT g$G rc=$? left=$(grep -c " $_mnt " /proc/mounts)"
  fi
  eth_barrier done
  [ "$G" = 0 ] && echo 0 > /proc/fs/nfsd/threads
}
