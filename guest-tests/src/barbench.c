/* barbench: time BAR0 accesses of a PCI function through sysfs resource0 (no driver bound).
 *
 * usage: barbench BDF [ITERS]
 *   (a) 32-bit reads  of BAR0+0x0    (init segment fw_rev: always trapped)
 *   (b) 32-bit writes to BAR0+0x100  (reserved init-segment register: trapped)
 *   (c) 64-bit writes to BAR0+0x8800 (UAR page 8 doorbell slot: trapped/posted in "trap"
 *       mode, a store into a mapped page in "poll" mode)
 * prints "BARBENCH <name> iters=<n> ns_per_access=<x>" per test, then "BARBENCH-DONE".
 * Static build: gcc -static -O2 -o barbench barbench.c
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s BDF [ITERS]\n", argv[0]);
		return 2;
	}
	long iters = argc > 2 ? atol(argv[2]) : 20000;
	char path[256];
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* make sure memory decoding is on (no driver is bound) */
	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/config", argv[1]);
	int cfd = open(path, O_RDWR);
	if (cfd >= 0) {
		uint16_t cmd = 0;
		if (pread(cfd, &cmd, 2, 4) == 2 && !(cmd & 2)) {
			cmd |= 2;
			if (pwrite(cfd, &cmd, 2, 4) != 2)
				perror("enable memory decode");
		}
		close(cfd);
	}
	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/resource0", argv[1]);
	int fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0) {
		printf("BARBENCH-ERROR open %s: %s\n", path, strerror(errno));
		return 1;
	}
	size_t len = 0x10000;
	volatile uint8_t *bar = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (bar == MAP_FAILED) {
		printf("BARBENCH-ERROR mmap: %s\n", strerror(errno));
		return 1;
	}
	volatile uint32_t *fw = (volatile uint32_t *)(bar + 0x0);
	volatile uint32_t *rsv = (volatile uint32_t *)(bar + 0x100);
	volatile uint64_t *db = (volatile uint64_t *)(bar + 0x8800);
	printf("BARBENCH fw_rev=0x%08x\n", *fw);

	uint32_t acc = 0;
	double t = now_ns();
	for (long i = 0; i < iters; i++)
		acc += *fw;
	double a = (now_ns() - t) / iters;
	printf("BARBENCH read32@0x0 iters=%ld ns_per_access=%.1f\n", iters, a);

	t = now_ns();
	for (long i = 0; i < iters; i++)
		*rsv = (uint32_t)i;
	(void)*fw; /* flush posted writes */
	double b = (now_ns() - t) / iters;
	printf("BARBENCH write32@0x100 iters=%ld ns_per_access=%.1f\n", iters, b);

	t = now_ns();
	for (long i = 0; i < iters; i++)
		*db = ((uint64_t)i << 32) | 0x1;
	(void)*fw;
	double c = (now_ns() - t) / iters;
	printf("BARBENCH write64@0x8800 iters=%ld ns_per_access=%.1f\n", iters, c);
	printf("BARBENCH-DONE acc=%u\n", acc);
	return 0;
}
