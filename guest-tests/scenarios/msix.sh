#!/bin/sh
# msix: bind the function to vfio-pci and count MSI-X interrupts raised by the server.
. /usr/local/lib/vrnic-lib.sh
BDF=$(vr_bdf)
[ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
if [ -n "$(ls /sys/kernel/iommu_groups 2>/dev/null)" ]; then
  # a (v)IOMMU is present: type1 container; no interrupt remapping in the vIOMMU
  modprobe vfio_iommu_type1 allow_unsafe_interrupts=1 || vr_fail "modprobe vfio_iommu_type1"
  modprobe vfio || vr_fail "modprobe vfio"
else
  # no IOMMU: needs CONFIG_VFIO_NOIOMMU (not set in Debian's 6.12 kernel)
  modprobe vfio enable_unsafe_noiommu_mode=1 || vr_fail "modprobe vfio"
fi
modprobe vfio_pci || vr_fail "modprobe vfio_pci"
echo 15b3 1017 > /sys/bus/pci/drivers/vfio-pci/new_id
i=0; while [ ! -e /sys/bus/pci/drivers/vfio-pci/$BDF ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
[ -e /sys/bus/pci/drivers/vfio-pci/$BDF ] || vr_fail "vfio-pci did not bind $BDF"
ls -l /dev/vfio/
echo "MSIX-BDF $BDF group=$(basename $(readlink /sys/bus/pci/devices/$BDF/iommu_group))"
msixcount $BDF ${NVEC:-8} ${MSIX_SECS:-90} ${MSIX_IDLE:-4}
grep -i vfio /proc/interrupts || true
