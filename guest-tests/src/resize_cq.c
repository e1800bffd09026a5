/*
 * resize_cq: ibv_resize_cq with completions not yet polled, through stock
 * libibverbs/libmlx5 on one device (two RC QPs connected to each other
 * through the device's own port).
 *
 * The CQ under test (T) takes QP A's send completions and QP B's receive
 * completions. Each cycle posts n receives on B and n signaled SENDs on A
 * (each SEND carries its sequence number), waits until every payload has
 * landed and the ACKs are back (so 2n CQEs sit unpolled in T), resizes T
 * (up or down), then polls: every CQE must be there, sends and receives each
 * in posting order (wr_id), none twice, nothing more. Then a batch of
 * traffic as large as the new CQ allows runs through the resized CQ. The
 * cycles repeat so the indices wrap the buffers many times, including
 * pending CQEs that straddle the old buffer's end. A resize below the number
 * of unpolled CQEs must fail and leave the CQ intact.
 *
 * One line per check; the last line is "RESIZE-CQ PASS <n> checks <r> resizes"
 * or "RESIZE-CQ FAIL ...".
 */
#include <string.h>
#include <unistd.h>

#define VT_NAME "RESIZE-CQ"
#include "vrverbs.h"

static int resizes;

#define SLOT 64
#define MAXN 512
static char sbuf[MAXN * SLOT] __attribute__((aligned(4096)));
static char rbuf[MAXN * SLOT] __attribute__((aligned(4096)));
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *smr, *rmr;
static struct ibv_cq *T, *O;
static struct ibv_qp *A, *B;
static uint16_t lid;
static uint64_t seq; /* sequence number of the next SEND */
static uint64_t next_send, next_recv; /* next wr_id expected from each class */

static struct ibv_qp *mkqp(struct ibv_cq *scq, struct ibv_cq *rcq)
{
	return vt_rc_qp(pd, scq, rcq, MAXN, MAXN, 0);
}

static void to_rts(struct ibv_qp *q, uint32_t remote)
{
	vt_rc_rts(q, remote, lid, (struct vt_path){ .timeout = 14, .retry = 7, .rnr_retry = 7, .rd_atomic = 1,
						    .min_rnr_timer = 1 });
}

/* Posts n receives on B and n SENDs on A; waits until every payload landed, then lets the ACKs return. */
static int burst(int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t s = seq + i;
		char *r = rbuf + (s % MAXN) * SLOT;
		memset(r, 0, SLOT);
		struct ibv_sge g = { .addr = (uintptr_t)r, .length = SLOT, .lkey = rmr->lkey };
		struct ibv_recv_wr w = { .wr_id = s, .sg_list = &g, .num_sge = 1 }, *bad;
		if (ibv_post_recv(B, &w, &bad)) DIE("post_recv %d", i);
	}
	for (int i = 0; i < n; i++) {
		uint64_t s = seq + i;
		char *p = sbuf + (s % MAXN) * SLOT;
		snprintf(p, SLOT, "send %llu", (unsigned long long)s);
		struct ibv_sge g = { .addr = (uintptr_t)p, .length = SLOT, .lkey = smr->lkey };
		struct ibv_send_wr w = { .wr_id = s, .sg_list = &g, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED }, *bad;
		if (ibv_post_send(A, &w, &bad)) DIE("post_send %d", i);
	}
	double t0 = now();
	for (int i = 0; i < n; i++) {
		uint64_t s = seq + i;
		char want[SLOT];
		snprintf(want, SLOT, "send %llu", (unsigned long long)s);
		while (strcmp(rbuf + (s % MAXN) * SLOT, want)) {
			if (now() - t0 > 20) {
				seq += n;
				return 0;
			}
			usleep(200);
		}
	}
	usleep(100000); /* the ACKs of the last SENDs */
	seq += n;
	return 1;
}

/* Polls T until `want` CQEs came (or 10 s): sends and receives each in order, all successful; the first
 * poll must return at least min(64, `present`) CQEs (those known to be in the CQ before the call). */
static int drain(int want, int present, const char *what)
{
	struct ibv_wc wc[64];
	int got = 0, bad = 0, first = -1;
	double t0 = now();
	while (got < want && now() - t0 < 10) {
		int n = ibv_poll_cq(T, 64, wc);
		if (n < 0) DIE("poll_cq");
		if (first < 0 && n > 0) first = n;
		if (!n) usleep(200);
		for (int i = 0; i < n; i++, got++) {
			uint64_t *next = wc[i].opcode == IBV_WC_RECV ? &next_recv : &next_send;
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != *next ||
			    (wc[i].opcode != IBV_WC_RECV && wc[i].opcode != IBV_WC_SEND)) {
				if (!bad++)
					printf("     %s: CQE %d: %s opcode %d wr_id %llu, expected %llu\n", what, got,
					       ibv_wc_status_str(wc[i].status), wc[i].opcode,
					       (unsigned long long)wc[i].wr_id, (unsigned long long)*next);
				*next = wc[i].wr_id;
			}
			(*next)++;
		}
	}
	usleep(20000);
	int extra = ibv_poll_cq(T, 64, wc);
	int need = present < 64 ? present : 64;
	CHECK(got == want && !bad && extra == 0 && first >= need,
	      "%s: %d of %d CQEs (%d in the first poll, >= %d), in order%s, nothing more (%d)",
	      what, got, want, first < 0 ? 0 : first, need, bad ? " NOT" : "", extra);
	return got;
}

/* One cycle: 2n CQEs pending, resize to `cqe`, poll them, then a full CQ's worth through the new buffer. */
static void cycle(int n, int cqe)
{
	int before = T->cqe;
	if (!burst(n)) {
		CHECK(0, "cycle n=%d: payloads did not land", n);
		return;
	}
	int rc = ibv_resize_cq(T, cqe);
	resizes += !rc;
	CHECK(rc == 0, "resize %d -> %d (asked %d) with %d CQEs unpolled: %s", before, T->cqe, cqe, 2 * n,
	      rc ? strerror(rc) : "ok");
	char what[96];
	snprintf(what, sizeof what, "  after the resize to %d", T->cqe);
	drain(2 * n, n, what); /* the n receive CQEs were written when the payloads landed */
	/* Fill the new CQ (in bursts the SQ takes) and poll it: owner bits of the new size, across its wrap. */
	int left = T->cqe + 1 + T->cqe / 2, total = left;
	while (left > 0) {
		int k = left > T->cqe / 2 ? T->cqe / 2 : left;
		if (k > MAXN) k = MAXN;
		if (!burst(k)) {
			CHECK(0, "traffic after the resize did not land");
			return;
		}
		if (drain(2 * k, k, "  traffic through the resized CQ") != 2 * k) return;
		left -= k;
	}
	printf("     (%d sends, %d CQEs through the %d-entry CQ; producer index now %llu)\n", total, 2 * total,
	       T->cqe + 1, (unsigned long long)(2 * seq));
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(240);
	ctx = vt_open();
	pd = ibv_alloc_pd(ctx);
	if (!pd) DIE("pd");
	lid = vt_lid(ctx);
	smr = ibv_reg_mr(pd, sbuf, sizeof sbuf, IBV_ACCESS_LOCAL_WRITE);
	rmr = ibv_reg_mr(pd, rbuf, sizeof rbuf, IBV_ACCESS_LOCAL_WRITE);
	if (!smr || !rmr) DIE("reg_mr");
	T = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	O = ibv_create_cq(ctx, 2 * MAXN, NULL, NULL, 0);
	if (!T || !O) DIE("create_cq");
	printf("     CQ under test: %d entries\n", T->cqe);
	A = mkqp(T, O);
	B = mkqp(O, T);
	to_rts(A, B->qp_num);
	to_rts(B, A->qp_num);

	/* Plain traffic first: the consumer index is then not at a buffer boundary. */
	burst(5);
	drain(10, 5, "warm-up: 10 CQEs before any resize");

	/* Up, then down step by step, then up again; pending CQEs wrap the old buffer's end. */
	for (int round = 0; round < 2; round++) {
		cycle(12, 200); /* 32 -> 256 entries with 24 CQEs pending */
		cycle(60, 120); /* 256 -> 128 with 120 pending */
		cycle(25, 60);  /* 128 -> 64 with 50 pending */
		cycle(13, 16);  /* 64 -> 32 with 26 pending */
	}

	/* Below the number of unpolled CQEs: refused, nothing lost. */
	{
		int before = T->cqe;
		if (!burst(12))
			CHECK(0, "payloads did not land");
		int rc = ibv_resize_cq(T, 8);
		CHECK(rc != 0 && T->cqe == before, "resize %d -> 8 with 24 CQEs unpolled refused: %s", before,
		      rc ? strerror(rc) : "it succeeded");
		drain(24, 12, "  after the refused resize");
		cycle(4, 8);   /* 32 -> 16 with 8 pending: allowed */
		cycle(6, 300); /* 16 -> 512 with 12 pending */
	}

	ibv_destroy_qp(A);
	ibv_destroy_qp(B);
	ibv_destroy_cq(T);
	ibv_destroy_cq(O);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	if (fails)
		printf("RESIZE-CQ FAIL %d of %d checks\n", fails, checks);
	else
		printf("RESIZE-CQ PASS %d checks %d resizes\n", checks, resizes);
	return fails != 0;
}
