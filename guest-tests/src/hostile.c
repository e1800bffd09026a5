/*
 * hostile: a root program that treats the device as an attacker would, with no driver bound:
 * garbage stores and loads all over BAR0 (init segment, UAR pages), doorbells for QPs, CQs and EQs that do
 * not exist, and command-queue entries whose lengths are absurd, whose mailbox chains loop or point outside
 * guest memory, with unknown opcodes and random bytes. Every command must complete (owner bit cleared)
 * with the expected delivery or command status; nothing may hang. The scenario then reloads mlx5_core and
 * checks the port comes back ACTIVE.
 *
 *   hostile /sys/bus/pci/devices/<bdf>/resource0
 * Last line: "HOSTILE PASS <n> checks" or "HOSTILE FAIL ...".
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define VT_NAME "HOSTILE"
#include "vrtest.h"

static volatile uint8_t *bar;
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static void w32(uint64_t off, uint32_t v) { *(volatile uint32_t *)(bar + off) = v; }
static uint32_t r32(uint64_t off) { return *(volatile uint32_t *)(bar + off); }
static void w64(uint64_t off, uint64_t v) { *(volatile uint64_t *)(bar + off) = v; }
static uint32_t be32(uint32_t v) { return __builtin_bswap32(v); }
static uint64_t be64(uint64_t v) { return __builtin_bswap64(v); }

/* Physical address of a locked page, from /proc/self/pagemap. */
static uint64_t phys(void *p)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e = 0;
	if (fd < 0 || pread(fd, &e, 8, ((uintptr_t)p / 4096) * 8) != 8) { close(fd); return 0; }
	close(fd);
	if (!(e & (1ULL << 63))) return 0;
	return (e & ((1ULL << 55) - 1)) * 4096 + ((uintptr_t)p & 4095);
}

struct entry {   /* struct mlx5_cmd_layout */
	uint8_t type, rsvd0[3];
	uint32_t inlen;
	uint64_t in_ptr;
	uint32_t in[4], out[4];
	uint64_t out_ptr;
	uint32_t outlen;
	uint8_t token, sig, rsvd1, status_own;
};

static volatile struct entry *q;

/* Runs the entry in slot 0; returns status_own (0xff on timeout). */
static int run(void)
{
	q->status_own = 1;
	__sync_synchronize();
	w32(0x18, be32(1));
	for (int i = 0; i < 20000; i++) {
		if (!(q->status_own & 1)) return q->status_own;
		usleep(50);
	}
	return 0xff;
}

static void base_entry(uint32_t opcode, uint32_t inlen, uint32_t outlen)
{
	memset((void *)q, 0, sizeof(*q));
	q->type = 7;
	q->inlen = be32(inlen);
	q->outlen = be32(outlen);
	q->in[0] = be32(opcode << 16);
	q->token = 0x5a;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(240);
	if (argc < 2) { fprintf(stderr, "usage: hostile /sys/bus/pci/devices/<bdf>/resource0\n"); return 2; }
	int fd = open(argv[1], O_RDWR | O_SYNC);
	bar = fd >= 0 ? mmap(NULL, 32 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (bar == MAP_FAILED) { printf("HOSTILE FAIL mmap %s\n", argv[1]); return 1; }
	CHECK((r32(0x4) & 0xffff) == __builtin_bswap16(5) || (be32(r32(0x4)) >> 16) == 5, "init segment readable, cmdif rev 5");

	/* 1. Garbage all over BAR0 (the command doorbell at 0x18 is left for phase 2). */
	uint64_t t0 = time(NULL);
	long stores = 0;
	for (int i = 0; i < 20000; i++) {
		uint64_t off = (rnd() % ((32 << 20) - 8)) & ~7ULL;
		if (off >= 0x10 && off < 0x20) continue;
		if (i & 1) w64(off, rnd()); else (void)r32(off & ~3ULL);
		stores++;
	}
	/* Doorbells for QPs, CQs and EQs that do not exist, on many UAR pages. */
	for (int i = 0; i < 5000; i++) {
		uint64_t page = 4 + rnd() % 64;
		switch (rnd() % 3) {
		case 0: w64(page * 4096 + 0x800 + (rnd() % 256) * 8, be64(rnd())); break;   /* send */
		case 1: w64(page * 4096 + 0x20, be64(rnd())); break;                       /* CQ arm */
		default: w32(page * 4096 + 0x40 + (rnd() & 1) * 8, be32(rnd())); break;     /* EQ */
		}
	}
	CHECK(1, "%ld random BAR0 accesses and 5000 stray doorbells in %llu s", stores, (unsigned long long)(time(NULL) - t0));
	CHECK((be32(r32(0x4)) >> 16) == 5, "init segment still answers");

	/* 2. The command queue, in a locked page whose physical address we know. */
	uint8_t *mem = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	if (mem == MAP_FAILED) { printf("HOSTILE FAIL mmap buffer\n"); return 1; }
	memset(mem, 0, 4 * 4096);
	uint64_t pq = phys(mem), pb = phys(mem + 4096);
	CHECK(pq && pb, "command queue page at %#llx", (unsigned long long)pq);
	if (!pq) { printf("HOSTILE FAIL pagemap\n"); return 1; }
	q = (volatile struct entry *)mem;
	w32(0x10, be32(pq >> 32));
	w32(0x14, be32(pq & 0xfffff000));   /* nic_interface 0: full driver */
	int st;

	base_entry(0x104, 16, 16);          /* ENABLE_HCA: a sane command first */
	st = run();
	CHECK(st == 0 && (be32(q->out[0]) >> 24) == 0, "ENABLE_HCA completes (status_own %#x, status %#x)", st, be32(q->out[0]) >> 24);

	base_entry(0x7777, 16, 16);
	st = run();
	CHECK(st == 0 && (be32(q->out[0]) >> 24) == 0x02, "unknown opcode: BAD_OP (status %#x)", be32(q->out[0]) >> 24);

	base_entry(0x100, 0xffffffff, 16);
	st = run();
	CHECK(st == (0x7 << 1), "inlen 0xffffffff: delivery IN_LENGTH_ERR (status_own %#x)", st);

	base_entry(0x100, 16, 0x10000000);
	st = run();
	CHECK(st == (0x8 << 1), "outlen 256 MiB: delivery OUT_LENGTH_ERR (status_own %#x)", st);

	base_entry(0x109, 4112, 16);        /* SET_HCA_CAP needs 8 mailbox blocks */
	q->in_ptr = be64(0xdead00000000ULL);
	st = run();
	CHECK(st == (0x5 << 1), "mailbox outside guest memory: IN_PTR_ALIGN_ERR (status_own %#x)", st);

	/* A chain that points back at itself: block 0 whose next is block 0. */
	uint8_t *blk = mem + 4096;
	memset(blk, 0, 576);
	*(uint64_t *)(blk + 0x230) = be64(pb);
	*(uint32_t *)(blk + 0x238) = be32(0);
	base_entry(0x109, 4112, 16);
	q->in_ptr = be64(pb);
	st = run();
	CHECK(st == (0x3 << 1), "looping mailbox chain: BAD_BLK_NUM_ERR (status_own %#x)", st);

	/* A chain that ends too early. */
	*(uint64_t *)(blk + 0x230) = 0;
	st = run();
	CHECK(st == (0x7 << 1), "mailbox chain shorter than inlen: IN_LENGTH_ERR (status_own %#x)", st);

	/* Output chain pointing outside memory. */
	base_entry(0x100, 16, 0x1010);
	q->in[1] = be32(1);
	q->out_ptr = be64(0xbeef00000000ULL);
	st = run();
	CHECK(st == (0x4 << 1), "output mailbox outside guest memory: OUT_PTR_ALIGN_ERR (status_own %#x)", st);

	/* Random entries: each must complete one way or another. */
	int hung = 0;
	for (int i = 0; i < 200; i++) {
		uint32_t *e = (uint32_t *)mem;
		for (int k = 0; k < 16; k++) e[k] = (uint32_t)rnd();
		if (run() == 0xff) hung++;
	}
	CHECK(hung == 0, "200 random command entries all completed (%d hung)", hung);

	/* A wrong type. */
	base_entry(0x104, 16, 16);
	q->type = 3;
	st = run();
	CHECK(st == (0x10 << 1), "entry type 3: CMD_DESCR_ERR (status_own %#x)", st);

	return vt_end();
}
