/*
 * err_test: provokes the error completions an RNIC must report, with stock
 * libibverbs on one device (two RC QPs connected to each other through the
 * device's own port), and checks each ibv_wc_status and that the device still
 * works afterwards.
 *
 *   remote access: bad rkey, out of bounds, missing permission  -> IBV_WC_REM_ACCESS_ERR
 *   local protection: bad lkey                                  -> IBV_WC_LOC_PROT_ERR
 *   RNR: no receive posted, rnr_retry 0                         -> IBV_WC_RNR_RETRY_EXC_ERR
 *   RNR: rnr_retry 7, receive posted late                       -> success
 *   retry exhaustion: peer QP that does not exist               -> IBV_WC_RETRY_EXC_ERR
 *   flush: every WR posted after the error                      -> IBV_WC_WR_FLUSH_ERR, one each, in order
 *
 * One line per check; the last line is "ERR-TEST PASS <n> checks" or "ERR-TEST FAIL ...".
 */
#include <string.h>
#include <unistd.h>

#define VT_NAME "ERR-TEST"
#include "vrverbs.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint16_t lid;
static char buf[1 << 16] __attribute__((aligned(4096)));
static struct ibv_mr *mr_all, *mr_ro;

struct end { struct ibv_cq *cq; struct ibv_qp *qp; };

static struct end mk(void)
{
	struct end e;
	e.cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!e.cq) DIE("create cq/qp");
	e.qp = vt_rc_qp(pd, e.cq, e.cq, 32, 32, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	return e;
}

static void to_rts(struct end *e, uint32_t remote_qpn, int timeout, int retry, int rnr_retry)
{
	vt_rc_rts(e->qp, remote_qpn, lid, (struct vt_path){ .timeout = timeout, .retry = retry, .rnr_retry = rnr_retry,
							    .rd_atomic = 4, .min_rnr_timer = 1 });
}

static void pair(struct end *a, struct end *b, int rnr_retry)
{
	*a = mk(); *b = mk();
	to_rts(a, b->qp->qp_num, 12, 3, rnr_retry);
	to_rts(b, a->qp->qp_num, 12, 3, 7);
}

static void destroy(struct end *e)
{
	ibv_destroy_qp(e->qp);
	ibv_destroy_cq(e->cq);
}

/* Waits up to `secs` for one completion. */
static int wc1(struct end *e, struct ibv_wc *wc, double secs)
{
	double t0 = now();
	for (;;) {
		int n = ibv_poll_cq(e->cq, 1, wc);
		if (n) return n;
		if (now() - t0 > secs) return 0;
		usleep(100);
	}
}

static int post(struct end *e, enum ibv_wr_opcode op, uint64_t wr_id, void *laddr, uint32_t len, uint32_t lkey,
		uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = { .addr = (uintptr_t)laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	w.wr.rdma.remote_addr = raddr; w.wr.rdma.rkey = rkey;
	return ibv_post_send(e->qp, &w, &bad);
}

static int post_recv(struct end *e, uint64_t wr_id, void *addr, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)addr, .length = len, .lkey = mr_all->lkey };
	struct ibv_recv_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;
	return ibv_post_recv(e->qp, &w, &bad);
}

static void expect(struct end *e, enum ibv_wc_status st, uint64_t wr_id, const char *what, double secs)
{
	struct ibv_wc wc;
	int n = wc1(e, &wc, secs);
	CHECK(n == 1 && wc.status == st && wc.wr_id == wr_id, "%s: %s (wr_id %llu)", what,
	      n == 1 ? ibv_wc_status_str(wc.status) : "no completion", n == 1 ? (unsigned long long)wc.wr_id : 0ULL);
}

static void remote_access_case(const char *what, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct end a, b;
	pair(&a, &b, 7);
	post(&a, op, 1, buf, len, mr_all->lkey, raddr, rkey);
	expect(&a, IBV_WC_REM_ACCESS_ERR, 1, what, 10);
	/* Everything posted after the error is flushed, one completion each, in order. */
	for (int i = 0; i < 3; i++) post(&a, IBV_WR_RDMA_WRITE, 10 + i, buf, 8, mr_all->lkey, (uintptr_t)buf, mr_all->rkey);
	for (int i = 0; i < 3; i++) expect(&a, IBV_WC_WR_FLUSH_ERR, 10 + i, "  flushed after the error", 5);
	struct ibv_qp_attr qa; struct ibv_qp_init_attr qi;
	CHECK(ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR, "  requester QP is in ERR");
	destroy(&a); destroy(&b);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	ctx = vt_open();
	pd = ibv_alloc_pd(ctx);
	if (!pd) DIE("open/pd");
	lid = vt_lid(ctx);
	mr_all = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	mr_ro = ibv_reg_mr(pd, buf + 32768, 4096, IBV_ACCESS_REMOTE_READ);
	if (!mr_all || !mr_ro) DIE("reg_mr");

	remote_access_case("RDMA WRITE with a bad rkey", IBV_WR_RDMA_WRITE, (uintptr_t)buf, mr_all->rkey ^ 0x100, 64);
	remote_access_case("RDMA READ past the end of the MR", IBV_WR_RDMA_READ, (uintptr_t)buf + sizeof(buf) - 8, mr_all->rkey, 64);
	remote_access_case("RDMA WRITE to an MR without remote write", IBV_WR_RDMA_WRITE, (uintptr_t)buf + 32768, mr_ro->rkey, 64);

	{ /* Local protection: a gather entry through a key that does not exist. */
		struct end a, b;
		pair(&a, &b, 7);
		post(&a, IBV_WR_RDMA_WRITE, 2, buf, 64, mr_all->lkey ^ 0x100, (uintptr_t)buf, mr_all->rkey);
		expect(&a, IBV_WC_LOC_PROT_ERR, 2, "RDMA WRITE with a bad lkey", 10);
		destroy(&a); destroy(&b);
	}
	{ /* RNR, no retries. */
		struct end a, b;
		pair(&a, &b, 0);
		double t0 = now();
		post(&a, IBV_WR_SEND, 3, buf, 32, mr_all->lkey, 0, 0);
		expect(&a, IBV_WC_RNR_RETRY_EXC_ERR, 3, "SEND with no receive posted, rnr_retry 0", 10);
		printf("     (after %.1f ms)\n", (now() - t0) * 1e3);
		destroy(&a); destroy(&b);
	}
	{ /* RNR, retry forever, receive posted late. */
		struct end a, b;
		pair(&a, &b, 7);
		strcpy(buf + 4096, "late receive");
		post(&a, IBV_WR_SEND, 4, buf + 4096, 16, mr_all->lkey, 0, 0);
		usleep(50000);
		post_recv(&b, 5, buf + 8192, 64);
		expect(&a, IBV_WC_SUCCESS, 4, "SEND with rnr_retry 7 and a receive posted 50 ms late", 10);
		expect(&b, IBV_WC_SUCCESS, 5, "  the late receive got it", 5);
		CHECK(!strcmp(buf + 8192, "late receive"), "  payload intact");
		destroy(&a); destroy(&b);
	}
	{ /* Retry exhaustion: nobody answers. */
		struct end a = mk();
		to_rts(&a, 0xfffff0, 10, 2, 7);
		double t0 = now();
		post(&a, IBV_WR_RDMA_WRITE, 6, buf, 64, mr_all->lkey, (uintptr_t)buf, mr_all->rkey);
		expect(&a, IBV_WC_RETRY_EXC_ERR, 6, "RDMA WRITE to a QP that does not exist (timeout 10, retry_cnt 2)", 30);
		printf("     (after %.1f ms; local ACK timeout 4.096 us x 2^10 = 4.2 ms, 3 tries)\n", (now() - t0) * 1e3);
		destroy(&a);
	}
	{ /* The device keeps working. */
		struct end a, b;
		pair(&a, &b, 7);
		post_recv(&b, 7, buf + 12288, 64);
		strcpy(buf + 16384, "still working");
		post(&a, IBV_WR_SEND, 8, buf + 16384, 16, mr_all->lkey, 0, 0);
		expect(&a, IBV_WC_SUCCESS, 8, "SEND on a fresh QP pair after all the errors", 10);
		expect(&b, IBV_WC_SUCCESS, 7, "  received", 5);
		CHECK(!strcmp(buf + 12288, "still working"), "  payload intact");
		destroy(&a); destroy(&b);
	}
	return vt_end();
}
