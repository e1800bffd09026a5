/*
 * scale: creates verbs objects up to what the device advertises, uses some of them, and destroys them all, so
 * the harness can check that the server's object counts and memory go back to their baseline (issue 38 item 3).
 *
 *   scale QPS MRS CQS SAMPLE
 *
 * QPs: RC QPs on one PD, each 256 sharing a CQ and each 1024 an SRQ (as MPI and storage targets share them), one
 * send WQE each; created until QPS (0: the device's max_qp) or the first refusal, which must be a clean errno
 * (ENOMEM/EINVAL/ENOSPC, from the device's LIM). Consecutive QPs are paired and brought to RTS towards each other
 * through the port (loopback); one SEND crosses each SAMPLE-th pair. Then every QP, SRQ and CQ is destroyed.
 * MRs: 4 KiB registrations of distinct pages of one buffer, up to MRS (0: the device's max_mr, at most 65536),
 * then deregistered. CQs: 16-entry CQs up to CQS (0: max_cq), then destroyed.
 * Each phase prints its rate per 1024 objects ("SCALE-RATE <phase> <from> <per second>") so the harness sees
 * whether the rate stays flat as the count grows. Lines:
 *   SCALE-BASELINE                  before the first object (the harness samples the server)
 *   SCALE-QP created=N max=M refusal=ERRNO rts=N sent=N
 *   SCALE-MR registered=N max=M refusal=ERRNO
 *   SCALE-CQ created=N max=M refusal=ERRNO
 *   SCALE-END                       after the last destroy (sampled again)
 *   SCALE PASS <n> checks | SCALE FAIL ...
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define VT_NAME "SCALE"
#include "vrverbs.h"

#define QPS_PER_CQ 256
#define QPS_PER_SRQ 1024
#define BUCKET 1024

static void rate(const char *phase, long n, double *t)
{
	if (n % BUCKET)
		return;
	double t1 = now();
	printf("SCALE-RATE %s %ld %.0f\n", phase, n - BUCKET, BUCKET / (t1 - *t));
	*t = t1;
}

static int clean_refusal(int e)
{
	return e == ENOMEM || e == EINVAL || e == ENOSPC || e == EAGAIN;
}

static void qps(struct ibv_context *ctx, struct ibv_pd *pd, uint16_t lid, long want, long sample)
{
	struct ibv_device_attr da;
	if (ibv_query_device(ctx, &da)) DIE("query_device");
	long max = want ? want : da.max_qp;
	struct ibv_qp **q = calloc(max, sizeof(*q));
	struct ibv_cq **cq = calloc(max / QPS_PER_CQ + 1, sizeof(*cq));
	struct ibv_srq **srq = calloc(max / QPS_PER_SRQ + 1, sizeof(*srq));
	if (!q || !cq || !srq) DIE("calloc");
	long n = 0, rts = 0, sent = 0;
	int refusal = 0;
	double t = now();
	for (; n < max; n++) {
		if (n % QPS_PER_CQ == 0 && !(cq[n / QPS_PER_CQ] = ibv_create_cq(ctx, 2 * QPS_PER_CQ, NULL, NULL, 0))) {
			refusal = errno;
			break;
		}
		if (n % QPS_PER_SRQ == 0) {
			struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
			if (!(srq[n / QPS_PER_SRQ] = ibv_create_srq(pd, &sa))) {
				refusal = errno;
				break;
			}
		}
		struct ibv_qp_init_attr a = { .send_cq = cq[n / QPS_PER_CQ], .recv_cq = cq[n / QPS_PER_CQ],
			.srq = srq[n / QPS_PER_SRQ], .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_send_sge = 1 } };
		if (!(q[n] = ibv_create_qp(pd, &a))) {
			refusal = errno;
			break;
		}
		rate("qp-create", n + 1, &t);
	}
	printf("SCALE-QP-CREATED %ld max=%ld (device max_qp %d) refusal=%d\n", n, max, da.max_qp, refusal);
	CHECK(!refusal || clean_refusal(refusal), "QP %ld refused with a clean errno (%d)", n, refusal);
	/* pairs (2i, 2i+1) to RTS towards each other */
	char *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) DIE("reg_mr");
	t = now();
	for (long i = 0; i + 1 < n; i += 2) {
		for (int k = 0; k < 2; k++) {
			struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
			if (ibv_modify_qp(q[i + k], &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
				DIE("INIT qp %ld", i + k);
		}
		for (int k = 0; k < 2; k++)
			vt_rc_rts(q[i + k], q[i + 1 - k]->qp_num, lid,
				  (struct vt_path){ .timeout = 14, .retry = 7, .rnr_retry = 7, .rd_atomic = 1, .min_rnr_timer = 12 });
		rts += 2;
		if (rts % BUCKET == 0)
			rate("qp-rts", rts, &t);
		if (sample && (i / 2) % sample == 0) {
			struct ibv_sge rs = { .addr = (uintptr_t)buf + 64, .length = 64, .lkey = mr->lkey };
			struct ibv_recv_wr rw = { .wr_id = i + 1, .sg_list = &rs, .num_sge = 1 }, *brw;
			if (ibv_post_srq_recv(srq[(i + 1) / QPS_PER_SRQ], &rw, &brw)) DIE("post_srq_recv");
			struct ibv_sge ss = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
			struct ibv_send_wr sw = { .wr_id = i, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED }, *bsw;
			snprintf(buf, 64, "qp %ld", i);
			if (ibv_post_send(q[i], &sw, &bsw)) DIE("post_send qp %ld", i);
			int got = 0, bad = 0;
			double t0 = now();
			while (got < 2 && now() - t0 < 30) {
				struct ibv_wc wc[2];
				int k = ibv_poll_cq(cq[i / QPS_PER_CQ], 2, wc);
				for (int j = 0; j < k; j++) {
					bad += wc[j].status != IBV_WC_SUCCESS;
					got++;
				}
				if (cq[(i + 1) / QPS_PER_CQ] != cq[i / QPS_PER_CQ]) {
					k = ibv_poll_cq(cq[(i + 1) / QPS_PER_CQ], 2, wc);
					for (int j = 0; j < k; j++) {
						bad += wc[j].status != IBV_WC_SUCCESS;
						got++;
					}
				}
			}
			sent += got == 2 && !bad && !strncmp(buf + 64, buf, 64);
			if (got != 2 || bad)
				printf("SCALE-SEND qp %ld -> %ld: %d completions, %d in error\n", i, i + 1, got, bad);
		}
	}
	long want_sent = sample ? (n / 2 + sample - 1) / sample : 0;
	printf("SCALE-QP created=%ld max=%d refusal=%d rts=%ld sent=%ld of %ld\n", n, da.max_qp, refusal, rts, sent,
	       want_sent);
	CHECK(rts == (n & ~1L), "%ld QPs in RTS", rts);
	CHECK(sent == want_sent, "%ld of %ld sampled pairs exchanged a message", sent, want_sent);
	t = now();
	for (long i = 0; i < n; i++) {
		if (ibv_destroy_qp(q[i])) DIE("destroy_qp %ld", i);
		rate("qp-destroy", i + 1, &t);
	}
	for (long i = 0; i <= max / QPS_PER_SRQ; i++)
		if (srq[i] && ibv_destroy_srq(srq[i])) DIE("destroy_srq");
	for (long i = 0; i <= max / QPS_PER_CQ; i++)
		if (cq[i] && ibv_destroy_cq(cq[i])) DIE("destroy_cq");
	ibv_dereg_mr(mr);
	munmap(buf, 4096);
	free(q), free(cq), free(srq);
}

static void mrs(struct ibv_context *ctx, struct ibv_pd *pd, long want)
{
	struct ibv_device_attr da;
	if (ibv_query_device(ctx, &da)) DIE("query_device");
	long max = want ? want : (da.max_mr < 65536 ? da.max_mr : 65536);
	char *buf = mmap(NULL, max * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct ibv_mr **m = calloc(max, sizeof(*m));
	if (buf == MAP_FAILED || !m) DIE("mmap %ld pages", max);
	long n = 0;
	int refusal = 0;
	double t = now(), t0 = t;
	for (; n < max; n++) {
		if (!(m[n] = ibv_reg_mr(pd, buf + n * 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE))) {
			refusal = errno;
			break;
		}
		rate("mr-reg", n + 1, &t);
	}
	double reg_s = now() - t0;
	printf("SCALE-MR registered=%ld max=%d refusal=%d seconds=%.2f rate=%.0f\n", n, da.max_mr, refusal, reg_s,
	       n / reg_s);
	CHECK(!refusal || clean_refusal(refusal), "MR %ld refused with a clean errno (%d)", n, refusal);
	CHECK(n == max || refusal, "%ld MRs registered", n);
	t = now();
	for (long i = 0; i < n; i++) {
		if (ibv_dereg_mr(m[i])) DIE("dereg_mr %ld", i);
		rate("mr-dereg", i + 1, &t);
	}
	munmap(buf, max * 4096);
	free(m);
}

static void cqs(struct ibv_context *ctx, long want)
{
	struct ibv_device_attr da;
	if (ibv_query_device(ctx, &da)) DIE("query_device");
	long max = want ? want : da.max_cq;
	struct ibv_cq **c = calloc(max, sizeof(*c));
	if (!c) DIE("calloc");
	long n = 0;
	int refusal = 0;
	double t = now();
	for (; n < max; n++) {
		if (!(c[n] = ibv_create_cq(ctx, 16, NULL, NULL, 0))) {
			refusal = errno;
			break;
		}
		rate("cq-create", n + 1, &t);
	}
	printf("SCALE-CQ created=%ld max=%d refusal=%d\n", n, da.max_cq, refusal);
	CHECK(!refusal || clean_refusal(refusal), "CQ %ld refused with a clean errno (%d)", n, refusal);
	for (long i = 0; i < n; i++)
		if (ibv_destroy_cq(c[i])) DIE("destroy_cq %ld", i);
	free(c);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	long nq = argc > 1 ? atol(argv[1]) : 4096, nm = argc > 2 ? atol(argv[2]) : 16384;
	long nc = argc > 3 ? atol(argv[3]) : 4096, sample = argc > 4 ? atol(argv[4]) : 64;
	/* Warm-up: what the kernel creates once, on first use, and keeps (mlx5_ib's UMR QP, CQ and PD appear with
	 * the first registration it serves by UMR) exists before the baseline. */
	struct ibv_context *ctx = vt_open();
	struct ibv_pd *wpd = ibv_alloc_pd(ctx);
	char *wbuf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct ibv_mr *wmr = wpd && wbuf != MAP_FAILED ? ibv_reg_mr(wpd, wbuf, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!wmr) DIE("warm-up registration");
	ibv_dereg_mr(wmr);
	ibv_dealloc_pd(wpd);
	munmap(wbuf, 4096);
	ibv_close_device(ctx);
	printf("SCALE-BASELINE\n");
	sleep(3); /* the harness samples the server (before this process's context and its UARs) */
	ctx = vt_open();
	uint16_t lid = vt_lid(ctx);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd) DIE("alloc_pd");
	if (nq >= 0) qps(ctx, pd, lid, nq, sample);
	if (nm >= 0) mrs(ctx, pd, nm);
	if (nc >= 0) cqs(ctx, nc);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("SCALE-END\n");
	sleep(3); /* sampled again */
	return vt_end();
}
