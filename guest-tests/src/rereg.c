/*
 * rereg: ibv_rereg_mr on mlx5 (UMR on the REG_UMR QP), with stock libibverbs on one device.
 *
 *   rereg            every flag combination of IBV_REREG_MR_CHANGE_TRANSLATION / _PD / _ACCESS (alone and
 *                    together, each applied twice so every property goes there and back), data moved through
 *                    the MR after each (RDMA WRITE, RDMA READ, fetch-and-add from an RC QP pair in the MR's
 *                    PD, bytes checked; a right the MR lost or the PD it left must be refused); then 1000
 *                    reg/rereg/dereg cycles. "REREG-BASELINE" before anything is registered and "REREG-END"
 *                    after the last dereg, each followed by a quiet pause, let the harness read the server's
 *                    mkey count; the last line is "REREG PASS <n> checks <c> cycles" or "REREG FAIL ...".
 *   rereg bench DEV  MR registration rate on DEV: ibv_reg_mr + ibv_dereg_mr per second, 4 KiB .. 64 MiB;
 *                    one "MRBENCH <dev> <bytes> <per-second>" line per size.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define VT_NAME "REREG"
#include "vrverbs.h"

#define T IBV_REREG_MR_CHANGE_TRANSLATION
#define P IBV_REREG_MR_CHANGE_PD
#define A IBV_REREG_MR_CHANGE_ACCESS
#define RW_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static struct ibv_context *ctx;
static uint16_t lid;

/* A PD with a staging buffer (its own MR) and a connected RC pair: a posts, b is the target. */
struct side {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	char *stage;
	struct ibv_mr *smr;
};

static struct ibv_qp *mkqp(struct side *s)
{
	return vt_rc_qp(s->pd, s->cq, s->cq, 16, 4, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
}

static void rts(struct ibv_qp *q, uint32_t remote)
{
	vt_rc_rts(q, remote, lid, (struct vt_path){ .timeout = 12, .retry = 3, .rnr_retry = 7, .rd_atomic = 4,
						    .min_rnr_timer = 1 });
}

static void connect_pair(struct side *s)
{
	s->a = mkqp(s); s->b = mkqp(s);
	rts(s->a, s->b->qp_num); rts(s->b, s->a->qp_num);
}

static void side_init(struct side *s)
{
	s->pd = ibv_alloc_pd(ctx);
	s->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	s->stage = aligned_alloc(4096, 1 << 16);
	if (!s->pd || !s->cq || !s->stage) DIE("pd/cq");
	s->smr = ibv_reg_mr(s->pd, s->stage, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	if (!s->smr) DIE("stage reg_mr");
	connect_pair(s);
}

static void side_fini(struct side *s)
{
	ibv_destroy_qp(s->a); ibv_destroy_qp(s->b);
	ibv_dereg_mr(s->smr); ibv_destroy_cq(s->cq); ibv_dealloc_pd(s->pd);
	free(s->stage);
}

/* One signaled WR from s->a; returns its completion status (-1: none within 10 s). */
static int op1(struct side *s, enum ibv_wr_opcode op, uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t add)
{
	struct ibv_sge g = { .addr = (uintptr_t)s->stage, .length = len, .lkey = s->smr->lkey };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &g, .num_sge = 1, .opcode = op, .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = raddr; w.wr.atomic.rkey = rkey; w.wr.atomic.compare_add = add;
	} else {
		w.wr.rdma.remote_addr = raddr; w.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(s->a, &w, &bad)) return -2;
	struct ibv_wc wc;
	double t0 = now();
	while (now() - t0 < 10) {
		int n = ibv_poll_cq(s->cq, 1, &wc);
		if (n == 1) return wc.status;
		if (n < 0) return -3;
		usleep(50);
	}
	return -1;
}

/* After an expected failure the pair is in ERR: a new one. */
static void reset_pair(struct side *s)
{
	struct ibv_wc wc;
	ibv_destroy_qp(s->a); ibv_destroy_qp(s->b);
	while (ibv_poll_cq(s->cq, 1, &wc) > 0)
		;
	connect_pair(s);
}

static unsigned seed = 1;
static void fill(char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) p[i] = (char)((seed = seed * 1103515245 + 12345) >> 16);
}

/* Moves data through `mr` (covering [addr, addr+len), access `acc`) from the pair of side `s` (the MR's PD),
 * and checks that side `other` (another PD) is refused. */
static void verify(const char *what, struct ibv_mr *mr, char *addr, size_t len, int acc, struct side *s, struct side *other)
{
	uint32_t n = len < 4096 ? (uint32_t)len : 4096;
	char *at = addr + len - n;	/* the last bytes: the whole translation is in use */
	char want[4096];
	int st;
	if (acc & IBV_ACCESS_REMOTE_WRITE) {
		fill(s->stage, n); memcpy(want, s->stage, n);
		st = op1(s, IBV_WR_RDMA_WRITE, n, (uintptr_t)at, mr->rkey, 0);
		CHECK(st == IBV_WC_SUCCESS && !memcmp(at, want, n), "%s: RDMA WRITE %u B at +%zu lands (%s)", what, n,
		      (size_t)(at - addr), st >= 0 ? ibv_wc_status_str(st) : "no completion");
	} else {
		st = op1(s, IBV_WR_RDMA_WRITE, 64, (uintptr_t)at, mr->rkey, 0);
		CHECK(st == IBV_WC_REM_ACCESS_ERR, "%s: RDMA WRITE refused without remote write (%s)", what,
		      st >= 0 ? ibv_wc_status_str(st) : "no completion");
		reset_pair(s);
	}
	if (acc & IBV_ACCESS_REMOTE_READ) {
		fill(at, n); memset(s->stage, 0, n);
		st = op1(s, IBV_WR_RDMA_READ, n, (uintptr_t)at, mr->rkey, 0);
		CHECK(st == IBV_WC_SUCCESS && !memcmp(s->stage, at, n), "%s: RDMA READ %u B returns the MR's bytes (%s)", what, n,
		      st >= 0 ? ibv_wc_status_str(st) : "no completion");
	}
	uint64_t *w = (uint64_t *)addr;
	uint64_t old = *w;
	st = op1(s, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, (uintptr_t)w, mr->rkey, 5);
	if (acc & IBV_ACCESS_REMOTE_ATOMIC) {
		CHECK(st == IBV_WC_SUCCESS && *(uint64_t *)s->stage == old && *w == old + 5,
		      "%s: fetch-and-add returns the old value and adds (%s)", what, st >= 0 ? ibv_wc_status_str(st) : "no completion");
	} else {
		CHECK(st == IBV_WC_REM_ACCESS_ERR && *w == old, "%s: fetch-and-add refused without remote atomic (%s)", what,
		      st >= 0 ? ibv_wc_status_str(st) : "no completion");
		reset_pair(s);
	}
	/* The other PD's QP may not use this MR. */
	st = op1(other, IBV_WR_RDMA_READ, 64, (uintptr_t)addr, mr->rkey, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "%s: a QP of the other PD is refused (%s)", what,
	      st >= 0 ? ibv_wc_status_str(st) : "no completion");
	reset_pair(other);
}

static const char *flagname(int f)
{
	static char b[32];
	snprintf(b, sizeof b, "%s%s%s", f & T ? "TRANSLATION|" : "", f & P ? "PD|" : "", f & A ? "ACCESS|" : "");
	b[strlen(b) - 1] = 0;
	return b;
}

static int bench(const char *dev)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_device *d = NULL;
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev)) d = list[i];
	if (!d) { printf("MRBENCH %s: no such device\n", dev); return 1; }
	ctx = ibv_open_device(d);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd) { printf("MRBENCH %s: open/pd failed\n", dev); return 1; }
	size_t max = 64 << 20;
	char *buf = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED) { printf("MRBENCH %s: mmap\n", dev); return 1; }
	for (size_t sz = 4096; sz <= max; sz *= 4) {
		/* Warm-up, then as many cycles as fit in ~2 s (at least 3). */
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, sz, RW_ACCESS);
		if (!mr) { printf("MRBENCH %s %zu reg failed errno %d\n", dev, sz, errno); return 1; }
		ibv_dereg_mr(mr);
		int k = 0;
		double t0 = now(), t;
		do {
			mr = ibv_reg_mr(pd, buf, sz, RW_ACCESS);
			if (!mr || ibv_dereg_mr(mr)) { printf("MRBENCH %s %zu failed errno %d\n", dev, sz, errno); return 1; }
			k++;
			t = now() - t0;
		} while (t < 2.0 || k < 3);
		printf("MRBENCH %s %zu %.1f\n", dev, sz, k / t);
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(600);
	if (argc == 3 && !strcmp(argv[1], "bench")) return bench(argv[2]);
	ctx = vt_open();
	lid = vt_lid(ctx);
	/* Two buffers of different sizes for the translation changes. */
	size_t len1 = 3 * 4096, len2 = 9 * 4096 + 512;
	char *buf1 = aligned_alloc(4096, 16 * 4096), *buf2 = aligned_alloc(4096, 16 * 4096);
	if (!buf1 || !buf2) DIE("alloc");
	memset(buf1, 0, 16 * 4096); memset(buf2, 0, 16 * 4096);
	/* The harness reads the mkey count once it holds still (mlx5_ib's cache may still be filling). */
	printf("REREG-BASELINE\n");
	sleep(10);

	struct side sa, sb;
	side_init(&sa); side_init(&sb);
	int combos[] = { T, P, A, T | P, T | A, P | A, T | P | A };
	for (unsigned c = 0; c < sizeof combos / sizeof combos[0]; c++) {
		int f = combos[c];
		char *addr = buf1; size_t len = len1; int acc = RW_ACCESS; struct side *s = &sa, *o = &sb;
		struct ibv_mr *mr = ibv_reg_mr(s->pd, addr, len, acc);
		if (!mr) DIE("reg_mr");
		char what[96];
		snprintf(what, sizeof what, "reg %zu B", len);
		verify(what, mr, addr, len, acc, s, o);
		for (int step = 0; step < 2; step++) {
			if (f & T) {
				/* buf1 -> buf2 (+512, longer), then back to buf1 at an offset. */
				if (step == 0) { addr = buf2 + 512; len = len2; } else { addr = buf1 + 4096 + 256; len = len1; }
			}
			if (f & P) { struct side *t = s; s = o; o = t; }
			if (f & A) acc = step == 0 ? (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
						   : RW_ACCESS;
			/* libibverbs: access must be 0 unless CHANGE_ACCESS. */
			int r = ibv_rereg_mr(mr, f, s->pd, addr, len, (f & A) ? acc : 0);
			snprintf(what, sizeof what, "rereg %s #%d", flagname(f), step + 1);
			CHECK(r == 0, "%s: ibv_rereg_mr returns 0 (%d)", what, r);
			if (r) DIE("rereg %s", what);
			CHECK(mr->addr == addr && mr->length == len && mr->pd == s->pd, "%s: the MR reports addr/length/pd", what);
			verify(what, mr, addr, len, acc, s, o);
		}
		CHECK(ibv_dereg_mr(mr) == 0, "dereg after %s", flagname(f));
	}

	/* 1000 cycles: reg, rereg (the next combination; translation alternating between the buffers), dereg. */
	int cycles = 0;
	double t0 = now();
	for (int i = 0; i < 1000; i++) {
		int f = combos[i % 7];
		size_t l = 4096 * (1 + i % 4);
		struct ibv_mr *mr = ibv_reg_mr(sa.pd, buf1, l, RW_ACCESS);
		if (!mr) DIE("cycle %d reg", i);
		if (ibv_rereg_mr(mr, f, sb.pd, buf2 + 4096 * (i % 3), l + 100, (f & A) ? RW_ACCESS | IBV_ACCESS_REMOTE_ATOMIC : 0)) DIE("cycle %d rereg %s", i, flagname(f));
		if (i % 100 == 99) {
			/* Every 100th: the MR still moves data. */
			struct side *s = (f & P) ? &sb : &sa, *o = (f & P) ? &sa : &sb;
			char *a = (f & T) ? buf2 + 4096 * (i % 3) : buf1;
			size_t L = (f & T) ? l + 100 : l;
			int acc = (f & A) ? RW_ACCESS | IBV_ACCESS_REMOTE_ATOMIC : RW_ACCESS;
			char what[64];
			snprintf(what, sizeof what, "cycle %d (%s)", i + 1, flagname(f));
			verify(what, mr, a, L, acc, s, o);
		}
		if (ibv_dereg_mr(mr)) DIE("cycle %d dereg", i);
		cycles++;
	}
	CHECK(cycles == 1000, "%d reg/rereg/dereg cycles in %.1f s", cycles, now() - t0);
	side_fini(&sa); side_fini(&sb);
	printf("REREG-END\n");
	sleep(6);
	if (fails) printf("REREG FAIL %d of %d checks\n", fails, checks);
	else printf("REREG PASS %d checks %d cycles\n", checks, cycles);
	ibv_close_device(ctx);
	return fails ? 1 : 0;
}
