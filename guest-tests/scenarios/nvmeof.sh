#!/bin/sh
# nvmeof (two guests on an Ethernet segment, RoCE v2): guest 0 an nvmet target (configfs: a memory-backed null_blk
# namespace, an RDMA port on its address :4420); guest 1 nvme connect -t rdma, fio with --verify=crc32c (4 KiB
# random write and read QD16, 128 KiB sequential write and read QD8), nvme disconnect. Then the restart under load:
# guest 1 connects again (ctrl_loss_tmo 120, reconnect_delay 2) and runs a 4 KiB random-write fio (verified as it
# goes); guest 0's RDMA device restarts under it (ulp_device_restart: unbind, function reset, bind on a vrnic
# port), the target's port is enabled again; the host reconnects or fails cleanly, fio ends either way.
. /usr/local/lib/vrnic-ulp-lib.sh
LOAD_S=${LOAD_S:-40}
ulp_hang_watch
roce_all_up
echo "ULP-NVMEOF-START g$G nic=$ETH_NIC dev=$ROCE_DEV fio=$(ulp_have fio && fio --version)" \
  "nvme=$(ulp_have nvme && nvme version | head -1 | tr ' ' _)"
[ "$G" = 0 ] && ulp_nvmet_up
eth_barrier nvmet-up
if [ "$G" = 1 ]; then
  ulp_nvme_connect
  if ulp_have fio; then
    V="--filename=$ULP_BDEV --verify=crc32c"
    ulp_fio rand4k-write 120 $V --rw=randwrite --bs=4k --iodepth=16 --size=${R4K:-8M}
    ulp_fio rand4k-read 120 $V --rw=randread --bs=4k --iodepth=16 --size=${R4K:-8M}
    ulp_fio seq128k-write 120 $V --rw=write --bs=128k --iodepth=8 --offset=64M --size=${S128K:-16M}
    ulp_fio seq128k-read 120 $V --rw=read --bs=128k --iodepth=8 --offset=64M --size=${S128K:-16M}
  else  # fio not in the image yet: a byte check with dd (the check fails the scenario without fio)
    dd if=/dev/urandom of=/tmp/pat bs=1M count=8 2> /dev/null
    dd if=/tmp/pat of=$ULP_BDEV bs=1M conv=fsync 2> /dev/null
    echo 3 > /proc/sys/vm/drop_caches
    dd if=$ULP_BDEV of=/tmp/back bs=1M count=8 2> /dev/null
    echo "ULP-DD-VERIFY g$G wrote=$(sha256sum < /tmp/pat | cut -c1-16) read=$(sha256sum < /tmp/back | cut -c1-16)"
  fi
  ulp_nvme_disconnect
fi
eth_barrier nvme-basic-done
vr_dmesg "before-restart g$G"
echo "ULP-RESTART-BEGIN g$G"
if [ "$G" = 1 ]; then
  ulp_nvme_connect 120 2
  if ulp_have fio; then
    _t=$(vr_now)
    ( timeout 300 fio --name=load --ioengine=libaio --direct=1 --filename=$ULP_BDEV --rw=randwrite --bs=4k \
        --iodepth=16 --size=32M --time_based --runtime=$LOAD_S --verify=crc32c --verify_backlog=256 \
        > /tmp/load.out 2>&1; echo $? > /tmp/load.rc ) &
    _lp=$!
  fi
  sleep 3
  eth_barrier load-running
  eth_barrier restarted
  if ulp_have fio; then
    wait $_lp
    echo "=== ETH-TOOL fio-load g$G: fio --name=load randwrite 4k QD16 time_based ${LOAD_S}s verify during restart ==="
    cat /tmp/load.out
    echo "=== ETH-TOOL-END fio-load g$G rc=$(cat /tmp/load.rc) seconds=$(vr_since $_t) ==="
  fi
  ulp_wait_ctrl_live 90
  if [ "$(cat /sys/class/nvme/$ULP_CTRL/state 2>/dev/null)" = live ] && ulp_have fio; then
    ulp_fio after-restart 120 --filename=$ULP_BDEV --verify=crc32c --rw=randwrite --bs=4k --iodepth=16 --size=8M
  fi
  ulp_nvme_disconnect
else
  eth_barrier load-running
  sleep 2
  ulp_device_restart
  ulp_nvmet_port_cycle
  echo "ULP-NVMET-REENABLED g$G"
  eth_barrier restarted
fi
eth_barrier done
ulp_ktrouble end
vr_dmesg "nvmeof g$G"
