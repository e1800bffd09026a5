//! Linux `vfio.h` constants used by the vfio-user argument blocks.

pub const VFIO_DEVICE_FLAGS_RESET: u32 = 1 << 0;
pub const VFIO_DEVICE_FLAGS_PCI: u32 = 1 << 1;

pub const VFIO_PCI_BAR0_REGION_INDEX: u32 = 0;
pub const VFIO_PCI_ROM_REGION_INDEX: u32 = 6;
pub const VFIO_PCI_CONFIG_REGION_INDEX: u32 = 7;
pub const VFIO_PCI_VGA_REGION_INDEX: u32 = 8;
pub const VFIO_PCI_NUM_REGIONS: u32 = 9;

pub const VFIO_PCI_INTX_IRQ_INDEX: u32 = 0;
pub const VFIO_PCI_MSI_IRQ_INDEX: u32 = 1;
pub const VFIO_PCI_MSIX_IRQ_INDEX: u32 = 2;
pub const VFIO_PCI_ERR_IRQ_INDEX: u32 = 3;
pub const VFIO_PCI_REQ_IRQ_INDEX: u32 = 4;
pub const VFIO_PCI_NUM_IRQS: u32 = 5;

pub const VFIO_REGION_INFO_FLAG_READ: u32 = 1 << 0;
pub const VFIO_REGION_INFO_FLAG_WRITE: u32 = 1 << 1;
pub const VFIO_REGION_INFO_FLAG_MMAP: u32 = 1 << 2;
pub const VFIO_REGION_INFO_FLAG_CAPS: u32 = 1 << 3;
pub const VFIO_REGION_INFO_CAP_SPARSE_MMAP: u16 = 1;

pub const VFIO_IRQ_INFO_EVENTFD: u32 = 1 << 0;
pub const VFIO_IRQ_INFO_MASKABLE: u32 = 1 << 1;
pub const VFIO_IRQ_INFO_AUTOMASKED: u32 = 1 << 2;
pub const VFIO_IRQ_INFO_NORESIZE: u32 = 1 << 3;

pub const VFIO_IRQ_SET_DATA_NONE: u32 = 1 << 0;
pub const VFIO_IRQ_SET_DATA_BOOL: u32 = 1 << 1;
pub const VFIO_IRQ_SET_DATA_EVENTFD: u32 = 1 << 2;
pub const VFIO_IRQ_SET_DATA_TYPE_MASK: u32 = 0x7;
pub const VFIO_IRQ_SET_ACTION_MASK: u32 = 1 << 3;
pub const VFIO_IRQ_SET_ACTION_UNMASK: u32 = 1 << 4;
pub const VFIO_IRQ_SET_ACTION_TRIGGER: u32 = 1 << 5;
pub const VFIO_IRQ_SET_ACTION_TYPE_MASK: u32 = 0x38;

pub const VFIO_DMA_MAP_FLAG_READ: u32 = 1 << 0;
pub const VFIO_DMA_MAP_FLAG_WRITE: u32 = 1 << 1;
pub const VFIO_DMA_UNMAP_FLAG_GET_DIRTY_BITMAP: u32 = 1 << 0;
pub const VFIO_DMA_UNMAP_FLAG_ALL: u32 = 1 << 1;
