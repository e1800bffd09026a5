/*
 * dm_test: on-device memory (MEMIC) end to end, with stock libibverbs.
 *
 *   dm_test server [port]       allocates device memory (ibv_alloc_dm), fills it with
 *                               ibv_memcpy_to_dm, registers it (ibv_reg_dm_mr), and lets the peer
 *                               RDMA-write, read and fetch-and-add into it; then checks the bytes
 *                               with ibv_memcpy_from_dm.
 *   dm_test client HOST [port]  the peer: RDMA WRITE into the device memory, RDMA READ from it,
 *                               FETCH_AND_ADD on a counter in it, checking every result.
 *
 * Out-of-band exchange over TCP. One line per check; the last line is
 * "DM-TEST PASS <n> checks" or "DM-TEST FAIL ...". Exit 0 only on PASS.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define VT_NAME "DM-TEST"
#include "vrverbs.h"

#define DM_LEN 4096
#define WR_OFF 0     /* peer writes 256 bytes here */
#define RD_OFF 1024  /* peer reads 256 bytes from here */
#define FA_OFF 2048  /* peer fetch-adds this 8-byte counter */
#define FA_INIT 1000ULL
#define FA_N 3

struct info { uint32_t qpn, psn, rkey; uint16_t lid; uint64_t addr; };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;

static void setup(void)
{
	ctx = vt_open();
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq) DIE("pd/cq/qp");
	qp = vt_rc_qp(pd, cq, cq, 16, 16, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
}

static void connect_qp(struct info *me, struct info *peer)
{
	vt_rc_rts(qp, peer->qpn, peer->lid, (struct vt_path){ .timeout = 14, .retry = 7, .rnr_retry = 7, .rd_atomic = 4,
							      .min_rnr_timer = 12, .rq_psn = peer->psn, .sq_psn = me->psn });
}

static void my_info(struct info *me)
{
	me->lid = vt_lid(ctx); me->qpn = qp->qp_num; me->psn = lrand48() & 0xffffff;
}

static int sock_xchg(int s, struct info *me, struct info *peer)
{
	if (write(s, me, sizeof(*me)) != sizeof(*me)) return -1;
	size_t got = 0;
	while (got < sizeof(*peer)) { ssize_t r = read(s, (char *)peer + got, sizeof(*peer) - got); if (r <= 0) return -1; got += r; }
	return 0;
}

static void wait_wc(const char *what, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;
	int n, spins = 0;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) { if (++spins > 200000000) DIE("%s: no completion", what); }
	if (n < 0) DIE("%s: poll_cq", what);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == op, "%s completes: status %s opcode %d", what,
	      ibv_wc_status_str(wc.status), wc.opcode);
}

static int server(int port)
{
	setup();
	struct ibv_alloc_dm_attr da = { .length = DM_LEN };
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &da);
	CHECK(dm != NULL, "ibv_alloc_dm %d bytes", DM_LEN);
	if (!dm) DIE("alloc_dm");
	unsigned char buf[DM_LEN];
	for (int i = 0; i < DM_LEN; i++) buf[i] = (unsigned char)(i * 13 + 5);
	uint64_t init = FA_INIT;
	memcpy(buf + FA_OFF, &init, 8);
	CHECK(ibv_memcpy_to_dm(dm, 0, buf, DM_LEN) == 0, "ibv_memcpy_to_dm");
	unsigned char back[DM_LEN];
	CHECK(ibv_memcpy_from_dm(back, dm, 0, DM_LEN) == 0 && !memcmp(back, buf, DM_LEN), "ibv_memcpy_from_dm reads back what was copied in");
	struct ibv_mr *mr = ibv_reg_dm_mr(pd, dm, 0, DM_LEN, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(mr != NULL, "ibv_reg_dm_mr (zero based, remote read/write/atomic)");
	if (!mr) DIE("reg_dm_mr");

	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = INADDR_ANY };
	if (bind(ls, (void *)&sa, sizeof(sa)) || listen(ls, 1)) DIE("listen");
	printf("DM-SERVER-READY\n"); fflush(stdout);
	int s = accept(ls, NULL, NULL);
	struct info me, peer;
	my_info(&me);
	me.rkey = mr->rkey; me.addr = 0;
	if (sock_xchg(s, &me, &peer)) DIE("exchange");
	connect_qp(&me, &peer);
	char done;
	if (write(s, "r", 1) != 1 || read(s, &done, 1) != 1) DIE("sync");

	CHECK(ibv_memcpy_from_dm(back, dm, 0, DM_LEN) == 0, "ibv_memcpy_from_dm after the peer's operations");
	int wr_ok = 1;
	for (int i = 0; i < 256; i++) if (back[WR_OFF + i] != (unsigned char)(0xa0 ^ i)) wr_ok = 0;
	CHECK(wr_ok, "the peer's RDMA WRITE landed in device memory");
	CHECK(!memcmp(back + WR_OFF + 256, buf + WR_OFF + 256, RD_OFF - 256), "bytes around the write untouched");
	uint64_t v;
	memcpy(&v, back + FA_OFF, 8);
	CHECK(v == FA_INIT + FA_N * 7, "counter after %d fetch-and-adds of 7: %llu", FA_N, (unsigned long long)v);
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_free_dm(dm) == 0, "dereg and free device memory");
	if (write(s, "e", 1) != 1) { }
	close(s);
	return vt_end();
}

static int client(const char *host, int port)
{
	setup();
	static unsigned char local[4096] __attribute__((aligned(64)));
	struct ibv_mr *mr = ibv_reg_mr(pd, local, sizeof(local), IBV_ACCESS_LOCAL_WRITE);
	if (!mr) DIE("reg_mr");
	struct addrinfo *ai;
	char ps[16];
	snprintf(ps, sizeof(ps), "%d", port);
	int s = -1;
	for (int tries = 0; tries < 100 && s < 0; tries++) {
		if (getaddrinfo(host, ps, NULL, &ai) == 0) {
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(s, ai->ai_addr, ai->ai_addrlen)) { close(s); s = -1; sleep(1); }
			freeaddrinfo(ai);
		} else sleep(1);
	}
	if (s < 0) DIE("connect");
	struct info me, peer;
	my_info(&me);
	if (sock_xchg(s, &me, &peer)) DIE("exchange");
	connect_qp(&me, &peer);
	char go;
	if (read(s, &go, 1) != 1) DIE("sync");

	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = 256, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED }, *bad;
	for (int i = 0; i < 256; i++) local[i] = (unsigned char)(0xa0 ^ i);
	wr.opcode = IBV_WR_RDMA_WRITE; wr.wr.rdma.remote_addr = WR_OFF; wr.wr.rdma.rkey = peer.rkey;
	CHECK(ibv_post_send(qp, &wr, &bad) == 0, "post RDMA WRITE 256 bytes to device memory offset %d", WR_OFF);
	wait_wc("RDMA WRITE", IBV_WC_RDMA_WRITE);

	memset(local + 512, 0, 256);
	sge.addr = (uintptr_t)(local + 512);
	wr.opcode = IBV_WR_RDMA_READ; wr.wr.rdma.remote_addr = RD_OFF;
	CHECK(ibv_post_send(qp, &wr, &bad) == 0, "post RDMA READ 256 bytes from device memory offset %d", RD_OFF);
	wait_wc("RDMA READ", IBV_WC_RDMA_READ);
	int rd_ok = 1;
	for (int i = 0; i < 256; i++) if (local[512 + i] != (unsigned char)((RD_OFF + i) * 13 + 5)) rd_ok = 0;
	CHECK(rd_ok, "RDMA READ returned the bytes the server copied in");

	for (int k = 0; k < FA_N; k++) {
		uint64_t *res = (uint64_t *)(local + 1024);
		*res = 0;
		sge.addr = (uintptr_t)res; sge.length = 8;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = FA_OFF; wr.wr.atomic.rkey = peer.rkey; wr.wr.atomic.compare_add = 7;
		CHECK(ibv_post_send(qp, &wr, &bad) == 0, "post FETCH_AND_ADD 7 #%d", k + 1);
		wait_wc("FETCH_AND_ADD", IBV_WC_FETCH_ADD);
		CHECK(*res == FA_INIT + 7ULL * k, "fetch-and-add #%d returned the old value %llu", k + 1, (unsigned long long)*res);
	}
	if (write(s, "d", 1) != 1) DIE("sync");
	char end;
	if (read(s, &end, 1) != 1) { }
	close(s);
	return vt_end();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid());
	alarm(120);
	if (argc >= 2 && !strcmp(argv[1], "server")) return server(argc > 2 ? atoi(argv[2]) : 18600);
	if (argc >= 3 && !strcmp(argv[1], "client")) return client(argv[2], argc > 3 ? atoi(argv[3]) : 18600);
	fprintf(stderr, "usage: dm_test server [port] | dm_test client HOST [port]\n");
	return 2;
}
