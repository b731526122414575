/*
 * pdcbb_connflood - holds many idle TCP connections open to one address, as a stranger on the
 * network could to a daemon's port, for the bats test of the daemon's connection limits.
 *
 *   pdcbb_connflood IP PORT COUNT SECONDS
 *
 * Raises its own open-files limit to the hard limit, opens COUNT connections (non-blocking,
 * waiting for each batch to be established), prints "connected N of COUNT" and keeps them open,
 * sending nothing, for SECONDS or until it is killed. Exit status 0 when every connection was
 * established, 1 if some were not, 2 on usage errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 256

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: pdcbb_connflood IP PORT COUNT SECONDS\n");
        return 2;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    long count = atol(argv[3]), seconds = atol(argv[4]);
    if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 || count <= 0 || seconds < 0) {
        fprintf(stderr, "pdcbb_connflood: bad address, count or time\n");
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    long connected = 0;
    struct pollfd pf[BATCH];
    for (long done = 0; done < count;) {
        int n = 0;
        for (; n < BATCH && done + n < count; n++) {
            int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                fprintf(stderr, "pdcbb_connflood: socket: %s\n", strerror(errno));
                break;
            }
            if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
                close(fd);
                fd = -1;
            }
            pf[n] = (struct pollfd){.fd = fd, .events = POLLOUT};
        }
        if (n == 0)
            break;
        /* poll returns when any one is ready: wait (up to 5 s) until each of the batch is */
        int waiting = n;
        for (int tries = 0; waiting > 0 && tries < 50; tries++) {
            if (poll(pf, (nfds_t)n, 100) < 0 && errno != EINTR)
                break;
            waiting = 0;
            for (int i = 0; i < n; i++) {
                if (pf[i].fd < 0 || pf[i].revents == 0) {
                    waiting += pf[i].fd >= 0;
                    continue;
                }
                int e = 0;
                socklen_t el = sizeof(e);
                if ((pf[i].revents & POLLOUT) &&
                    getsockopt(pf[i].fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0)
                    connected++;
                pf[i].fd = -pf[i].fd - 1; /* settled: poll ignores negative descriptors */
            }
        }
        done += n;
    }
    printf("connected %ld of %ld\n", connected, count);
    fflush(stdout);
    sleep((unsigned)seconds);
    return connected == count ? 0 : 1;
}
