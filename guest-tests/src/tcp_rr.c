/* tcp_rr: a netperf TCP_RR-like request/response latency test (bench-eth).
 *   tcp_rr -s PORT                 serve: echo every SIZE-byte request back, one connection at a time, forever
 *   tcp_rr -c HOST PORT N SIZE     N round trips of SIZE bytes (TCP_NODELAY); prints
 *                                  "TCP_RR size=<b> n=<n> median_us=<x> p99_us=<y> trans_per_s=<z>"
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int full(int fd, char *buf, size_t len, int wr) {
    size_t done = 0;
    while (done < len) {
        ssize_t r = wr ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int one = 1;
    char buf[65536];
    if (argc == 3 && !strcmp(argv[1], "-s")) {
        int ls = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
        setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4)) {
            perror("tcp_rr: bind/listen");
            return 1;
        }
        for (;;) {
            int fd = accept(ls, NULL, NULL);
            unsigned size;
            if (fd < 0)
                continue;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            /* the client first sends the request size (4 bytes) */
            if (full(fd, (char *)&size, 4, 0) == 0 && size > 0 && size <= sizeof buf)
                while (full(fd, buf, size, 0) == 0 && full(fd, buf, size, 1) == 0)
                    ;
            close(fd);
        }
    }
    if (argc != 6 || strcmp(argv[1], "-c")) {
        fprintf(stderr, "usage: tcp_rr -s PORT | tcp_rr -c HOST PORT N SIZE\n");
        return 2;
    }
    int n = atoi(argv[4]);
    unsigned size = (unsigned)atoi(argv[5]);
    if (n <= 0 || size == 0 || size > sizeof buf) {
        fprintf(stderr, "tcp_rr: bad N or SIZE\n");
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
    if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
        perror("tcp_rr: connect");
        return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    memset(buf, 0x5a, size);
    double *lat = calloc((size_t)n, sizeof *lat);
    if (!lat || full(fd, (char *)&size, 4, 1))
        return 1;
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        double t = now_us();
        if (full(fd, buf, size, 1) || full(fd, buf, size, 0)) {
            fprintf(stderr, "tcp_rr: connection lost after %d round trips\n", i);
            return 1;
        }
        lat[i] = now_us() - t;
    }
    double total = now_us() - t0;
    qsort(lat, (size_t)n, sizeof *lat, cmp);
    printf("TCP_RR size=%u n=%d median_us=%.1f p99_us=%.1f trans_per_s=%.0f\n", size, n, lat[n / 2],
           lat[(int)(n * 0.99)], n / (total / 1e6));
    return 0;
}
