/*
 * timestamp: the device clock through stock libibverbs/libmlx5.
 *
 *   ibv_query_device_ex: hca_core_clock (kHz) and completion_timestamp_mask non-zero
 *   ibv_query_rt_values_ex: succeeds, never goes backwards over many reads, and advances at
 *     hca_core_clock against the guest's CLOCK_MONOTONIC (ratio within 0.5..2: TCG)
 *   ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP on an RC loopback pair (one device,
 *     two QPs connected through its port): every completion has a timestamp, they never decrease,
 *     all lie between ibv_query_rt_values_ex reads taken before posting and after polling, and
 *     sends spaced 20 ms apart get timestamps about 20 ms of clock apart
 *   IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK: optional; where libmlx5 offers it, completion
 *     wall-clock times within 500 ms of the guest's CLOCK_REALTIME
 *
 * One line per check; the last line is "TIMESTAMP PASS <n> checks" or "TIMESTAMP FAIL ...".
 */
#include <string.h>
#include <unistd.h>

#define VT_NAME "TIMESTAMP"
#include "vrverbs.h"

#define N 32
static char buf[2 * N * 64] __attribute__((aligned(4096)));
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint16_t lid;

static uint64_t hca_now(void)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	int rc = ibv_query_rt_values_ex(ctx, &v);
	if (rc || !(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK)) DIE("ibv_query_rt_values_ex: %s", strerror(rc));
	return (uint64_t)v.raw_clock.tv_sec * 1000000000ull + v.raw_clock.tv_nsec;
}

static struct ibv_qp *mkqp(struct ibv_cq *cq)
{
	return vt_rc_qp(pd, cq, cq, N, N, 0);
}

static void to_rts(struct ibv_qp *q, uint32_t remote)
{
	vt_rc_rts(q, remote, lid, (struct vt_path){ .timeout = 14, .retry = 7, .rnr_retry = 7, .rd_atomic = 1,
						    .min_rnr_timer = 1 });
}

static void send1(struct ibv_qp *a, struct ibv_qp *b, int i)
{
	struct ibv_sge r = { .addr = (uintptr_t)(buf + (N + i) * 64), .length = 64, .lkey = mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 1000 + i, .sg_list = &r, .num_sge = 1 }, *rbad;
	if (ibv_post_recv(b, &rw, &rbad)) DIE("post_recv");
	struct ibv_sge s = { .addr = (uintptr_t)(buf + i * 64), .length = 64, .lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	if (ibv_post_send(a, &w, &bad)) DIE("post_send");
}

/* Polls the extended CQ for `want` completions (10 s at most); their timestamps into ts[]. */
static int poll_ts(struct ibv_cq_ex *cq, int want, uint64_t *ts, uint64_t *ids)
{
	int got = 0;
	double t0 = now();
	while (got < want && now() - t0 < 10) {
		struct ibv_poll_cq_attr pa = {};
		int rc = ibv_start_poll(cq, &pa);
		if (rc == ENOENT) {
			usleep(200);
			continue;
		}
		if (rc) DIE("start_poll %d", rc);
		do {
			if (cq->status != IBV_WC_SUCCESS)
				printf("     completion wr_id %llu: %s\n", (unsigned long long)cq->wr_id,
				       ibv_wc_status_str(cq->status));
			if (got < want) {
				ts[got] = ibv_wc_read_completion_ts(cq);
				ids[got] = cq->wr_id;
			}
			got++;
		} while (ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	return got;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(120);
	ctx = vt_open();
	pd = ibv_alloc_pd(ctx);
	if (!pd) DIE("pd");
	lid = vt_lid(ctx);
	mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) DIE("reg_mr");

	struct ibv_device_attr_ex dx;
	memset(&dx, 0, sizeof dx);
	int rc = ibv_query_device_ex(ctx, NULL, &dx);
	CHECK(rc == 0 && dx.hca_core_clock != 0 && dx.completion_timestamp_mask != 0,
	      "ibv_query_device_ex: hca_core_clock %llu kHz, completion_timestamp_mask 0x%llx",
	      (unsigned long long)dx.hca_core_clock, (unsigned long long)dx.completion_timestamp_mask);
	double khz = dx.hca_core_clock ? (double)dx.hca_core_clock : 1;

	/* The raw clock: monotonic, at the advertised rate. */
	uint64_t last = hca_now(), first = last;
	int back = 0;
	for (int i = 0; i < 2000; i++) {
		uint64_t t = hca_now();
		back += t < last;
		last = t;
	}
	CHECK(back == 0 && last > first, "ibv_query_rt_values_ex: 2000 reads, never backwards, advanced %llu ticks",
	      (unsigned long long)(last - first));
	double g0 = now();
	uint64_t h0 = hca_now();
	usleep(300000);
	uint64_t h1 = hca_now();
	double g1 = now();
	double ratio = (h1 - h0) / ((g1 - g0) * khz * 1000);
	CHECK(ratio > 0.5 && ratio < 2.0, "raw clock over %.0f ms of guest time: %llu ticks = %.3f x hca_core_clock",
	      (g1 - g0) * 1e3, (unsigned long long)(h1 - h0), ratio);

	/* Completion timestamps. */
	struct ibv_cq_init_attr_ex ca = { .cqe = 4 * N, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
					  IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &ca);
	CHECK(cq != NULL, "ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP: %s", cq ? "ok" : strerror(errno));
	if (!cq) DIE("create_cq_ex");
	struct ibv_qp *a = mkqp(ibv_cq_ex_to_cq(cq)), *b = mkqp(ibv_cq_ex_to_cq(cq));
	to_rts(a, b->qp_num);
	to_rts(b, a->qp_num);

	uint64_t ts[2 * N], ids[2 * N];
	uint64_t before = hca_now();
	for (int i = 0; i < N / 2; i++)
		send1(a, b, i);
	int got = poll_ts(cq, N, ts, ids);
	uint64_t after = hca_now();
	int zero = 0, dec = 0, out = 0;
	for (int i = 0; i < got && i < N; i++) {
		zero += ts[i] == 0;
		dec += i && ts[i] < ts[i - 1];
		out += ts[i] < before || ts[i] > after;
	}
	CHECK(got == N, "%d sends and receives: %d completions", N / 2, got);
	CHECK(got && !zero && !dec && !out, "every completion timestamped, non-decreasing, within [%llu, %llu] "
	      "(first %llu, last %llu; %d zero, %d decreasing, %d outside)", (unsigned long long)before,
	      (unsigned long long)after, (unsigned long long)ts[0], (unsigned long long)ts[got > N ? N - 1 : got - 1],
	      zero, dec, out);

	/* Sends spaced 20 ms apart: their completion timestamps about 20 ms of clock apart. */
	uint64_t prev = 0;
	int spaced_ok = 0, spaced = 8;
	double min_ms = 1e9, max_ms = 0;
	for (int i = 0; i < spaced; i++) {
		send1(a, b, N / 2 + i);
		uint64_t t2[2], id2[2];
		if (poll_ts(cq, 2, t2, id2) != 2) {
			CHECK(0, "spaced send %d did not complete", i);
			break;
		}
		uint64_t t = t2[0] > t2[1] ? t2[0] : t2[1];
		if (prev) {
			double ms = (t - prev) / khz;
			min_ms = ms < min_ms ? ms : min_ms;
			max_ms = ms > max_ms ? ms : max_ms;
			spaced_ok += ms >= 10 && ms < 2000;
		}
		prev = t;
		usleep(20000);
	}
	CHECK(spaced_ok == spaced - 1, "sends 20 ms apart: completion timestamps %.1f..%.1f ms apart "
	      "(at hca_core_clock)", min_ms, max_ms);

	/* The wall-clock variant (libmlx5 converts through the kernel's clock info page): optional; where
	 * offered, a completion's wall-clock time must lie within 500 ms of the guest's CLOCK_REALTIME. */
	struct ibv_cq_init_attr_ex cw = { .cqe = 16, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK };
	struct ibv_cq_ex *wcq = ibv_create_cq_ex(ctx, &cw);
	printf("     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK: %s\n", wcq ? "offered" : strerror(errno));
	if (wcq) {
		struct ibv_qp *c = mkqp(ibv_cq_ex_to_cq(wcq)), *d = mkqp(ibv_cq_ex_to_cq(wcq));
		to_rts(c, d->qp_num);
		to_rts(d, c->qp_num);
		struct timespec r0, r1;
		clock_gettime(CLOCK_REALTIME, &r0);
		send1(c, d, 0);
		int got = 0;
		uint64_t wall[2] = { 0, 0 };
		double t0 = now();
		while (got < 2 && now() - t0 < 10) {
			struct ibv_poll_cq_attr pa2 = {};
			if (ibv_start_poll(wcq, &pa2)) {
				usleep(200);
				continue;
			}
			do {
				if (got < 2)
					wall[got] = ibv_wc_read_completion_wallclock_ns(wcq);
				got++;
			} while (ibv_next_poll(wcq) == 0);
			ibv_end_poll(wcq);
		}
		clock_gettime(CLOCK_REALTIME, &r1);
		double lo = r0.tv_sec + r0.tv_nsec / 1e9 - 0.5, hi = r1.tv_sec + r1.tv_nsec / 1e9 + 0.5;
		double w0 = wall[0] / 1e9, w1 = wall[1] / 1e9;
		CHECK(got == 2 && w0 > lo && w0 < hi && w1 > lo && w1 < hi && wall[1] >= wall[0],
		      "wall-clock completion times %.6f, %.6f within 500 ms of CLOCK_REALTIME [%.6f, %.6f]", w0, w1,
		      lo + 0.5, hi - 0.5);
		ibv_destroy_qp(c);
		ibv_destroy_qp(d);
		ibv_destroy_cq(ibv_cq_ex_to_cq(wcq));
	}

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return vt_end();
}
