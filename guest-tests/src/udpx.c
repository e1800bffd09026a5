/* udpx: UDP datagrams for the Ethernet scenarios (busybox nc has no -u).
 *   udpx recv PORT SECS         print each datagram's payload (one line each) for SECS seconds, then
 *                               "UDPX-RECV n=<count>"
 *   udpx send HOST PORT N       send N datagrams "FLOW<i>" 10 ms apart
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct sockaddr_in a = {.sin_family = AF_INET};
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (argc == 4 && !strcmp(argv[1], "recv")) {
        a.sin_port = htons(atoi(argv[2]));
        if (bind(fd, (struct sockaddr *)&a, sizeof a)) {
            perror("udpx: bind");
            return 1;
        }
        time_t end = time(NULL) + atoi(argv[3]);
        int n = 0;
        char buf[2048];
        while (time(NULL) < end) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, 200) <= 0)
                continue;
            ssize_t r = recv(fd, buf, sizeof buf - 1, 0);
            if (r < 0)
                continue;
            buf[r] = 0;
            buf[strcspn(buf, "\n")] = 0;
            printf("%s\n", buf);
            fflush(stdout);
            n++;
        }
        printf("UDPX-RECV n=%d\n", n);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "send")) {
        a.sin_port = htons(atoi(argv[3]));
        if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) {
            fprintf(stderr, "udpx: bad address\n");
            return 2;
        }
        for (int i = 0; i < atoi(argv[4]); i++) {
            char msg[32];
            int len = snprintf(msg, sizeof msg, "FLOW%d\n", i);
            sendto(fd, msg, (size_t)len, 0, (struct sockaddr *)&a, sizeof a);
            usleep(10000);
        }
        return 0;
    }
    fprintf(stderr, "usage: udpx recv PORT SECS | udpx send HOST PORT N\n");
    return 2;
}
