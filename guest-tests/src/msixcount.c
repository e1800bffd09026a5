/* msixcount: count MSI-X interrupts of a PCI function bound to vfio-pci, per vector.
 *
 * usage: msixcount BDF [NVEC [SECONDS [IDLE]]]
 *   Opens the function's VFIO group (/dev/vfio/N with a (v)IOMMU, /dev/vfio/noiommu-N in
 *   no-IOMMU mode), sets up a container (TYPE1v2/TYPE1 or NOIOMMU), gets the device fd,
 *   enables bus mastering, wires MSI-X vectors 0..NVEC-1 to eventfds with VFIO_DEVICE_SET_IRQS,
 *   prints "MSIX-READY nvec=<n> total=<device vectors>", then prints
 *   "MSIX-EVENT vec=<v> n=<count so far>" per eventfd read and, after SECONDS or after IDLE
 *   seconds without interrupts (once at least one arrived), "MSIX-COUNT vec=<v> n=<count>"
 *   for every vector and "MSIX-DONE total=<sum>".
 * Static build: gcc -static -O2 -o msixcount msixcount.c
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <linux/vfio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#ifndef VFIO_NOIOMMU_IOMMU
#define VFIO_NOIOMMU_IOMMU 8
#endif

static void die(const char *what)
{
	printf("MSIX-ERROR %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s BDF [NVEC [SECONDS [IDLE]]]\n", argv[0]);
		return 2;
	}
	const char *bdf = argv[1];
	int nvec = argc > 2 ? atoi(argv[2]) : 8;
	double secs = argc > 3 ? atof(argv[3]) : 30;
	double idle = argc > 4 ? atof(argv[4]) : 5;
	setvbuf(stdout, NULL, _IOLBF, 0);

	char path[256], link[256];
	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/iommu_group", bdf);
	ssize_t l = readlink(path, link, sizeof link - 1);
	if (l < 0)
		die("readlink iommu_group");
	link[l] = 0;
	const char *grp = basename(link);

	int noiommu = 0;
	snprintf(path, sizeof path, "/dev/vfio/%s", grp);
	int group = open(path, O_RDWR);
	if (group < 0) {
		snprintf(path, sizeof path, "/dev/vfio/noiommu-%s", grp);
		group = open(path, O_RDWR);
		noiommu = 1;
	}
	if (group < 0)
		die("open group");
	printf("MSIX-INFO group=%s noiommu=%d\n", path, noiommu);

	int container = open("/dev/vfio/vfio", O_RDWR);
	if (container < 0)
		die("open /dev/vfio/vfio");
	if (ioctl(container, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
		die("api version");
	struct vfio_group_status gs = {.argsz = sizeof gs};
	if (ioctl(group, VFIO_GROUP_GET_STATUS, &gs))
		die("group status");
	if (!(gs.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		errno = EBUSY;
		die("group not viable (all devices must be bound to vfio-pci)");
	}
	if (ioctl(group, VFIO_GROUP_SET_CONTAINER, &container))
		die("set container");
	int type;
	if (noiommu)
		type = VFIO_NOIOMMU_IOMMU;
	else if (ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) > 0)
		type = VFIO_TYPE1v2_IOMMU;
	else
		type = VFIO_TYPE1_IOMMU;
	if (ioctl(container, VFIO_SET_IOMMU, type))
		die("set iommu");
	int dev = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);
	if (dev < 0)
		die("get device fd");

	/* enable memory decode + bus mastering (MSI-X writes are bus-master writes) */
	struct vfio_region_info cfg = {.argsz = sizeof cfg, .index = VFIO_PCI_CONFIG_REGION_INDEX};
	if (ioctl(dev, VFIO_DEVICE_GET_REGION_INFO, &cfg))
		die("config region info");
	uint16_t cmd;
	if (pread(dev, &cmd, 2, cfg.offset + 4) != 2)
		die("read command");
	cmd |= 0x6;
	if (pwrite(dev, &cmd, 2, cfg.offset + 4) != 2)
		die("write command");

	struct vfio_irq_info ii = {.argsz = sizeof ii, .index = VFIO_PCI_MSIX_IRQ_INDEX};
	if (ioctl(dev, VFIO_DEVICE_GET_IRQ_INFO, &ii))
		die("irq info");
	if ((int)ii.count < nvec)
		nvec = ii.count;
	if (nvec <= 0) {
		errno = ENODEV;
		die("no MSI-X vectors");
	}

	int *efd = calloc(nvec, sizeof *efd);
	long *count = calloc(nvec, sizeof *count);
	size_t sz = sizeof(struct vfio_irq_set) + nvec * sizeof(int32_t);
	struct vfio_irq_set *set = calloc(1, sz);
	int ep = epoll_create1(0);
	for (int i = 0; i < nvec; i++) {
		efd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (efd[i] < 0)
			die("eventfd");
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
		epoll_ctl(ep, EPOLL_CTL_ADD, efd[i], &ev);
	}
	set->argsz = sz;
	set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
	set->index = VFIO_PCI_MSIX_IRQ_INDEX;
	set->start = 0;
	set->count = nvec;
	memcpy(set->data, efd, nvec * sizeof(int32_t));
	if (ioctl(dev, VFIO_DEVICE_SET_IRQS, set))
		die("set irqs");
	printf("MSIX-READY nvec=%d total=%u\n", nvec, ii.count);

	double t0 = now(), last = 0;
	long total = 0;
	for (;;) {
		double t = now();
		if (t - t0 > secs)
			break;
		if (total > 0 && t - last > idle)
			break;
		struct epoll_event evs[16];
		int n = epoll_wait(ep, evs, 16, 200);
		for (int k = 0; k < n; k++) {
			int v = evs[k].data.u32;
			uint64_t c;
			if (read(efd[v], &c, 8) == 8) {
				count[v] += c;
				total += c;
				last = now();
				printf("MSIX-EVENT vec=%d n=%ld\n", v, count[v]);
			}
		}
	}
	for (int i = 0; i < nvec; i++)
		printf("MSIX-COUNT vec=%d n=%ld\n", i, count[i]);
	printf("MSIX-DONE total=%ld\n", total);
	/* disable MSI-X */
	set->argsz = sizeof *set;
	set->flags = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
	set->count = 0;
	ioctl(dev, VFIO_DEVICE_SET_IRQS, set);
	return 0;
}
