#ifndef CONCORD_CLIBSSH2_SHIM_H
#define CONCORD_CLIBSSH2_SHIM_H
#include <libssh2.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Opens a TCP connection to `host`:`port`, trying each address getaddrinfo gives, each for at
   most `timeout_ms` (0: as long as the system waits). Returns a blocking socket, or -1 with errno
   set (EHOSTUNREACH when the name did not resolve). When `cancel_fd` (-1: none) becomes readable
   the connect in progress is given up at once: -1 with errno ECANCELED. */
static inline int concord_tcp_connect(const char *host, int port, int timeout_ms, int cancel_fd) {
    struct addrinfo hints, *found = NULL, *entry;
    char service[16];
    int fd = -1, saved = EHOSTUNREACH;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof service, "%d", port);
    if (getaddrinfo(host, service, &hints, &found) != 0 || !found) { errno = EHOSTUNREACH; return -1; }
    for (entry = found; entry; entry = entry->ai_next) {
        fd = socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, entry->ai_protocol);
        if (fd < 0) { saved = errno; continue; }
        int flags = fcntl(fd, F_GETFL, 0);
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
        int result = connect(fd, entry->ai_addr, entry->ai_addrlen);
        if (result < 0 && errno == EINPROGRESS) {
            struct pollfd waiting[2] = { { .fd = fd, .events = POLLOUT }, { .fd = cancel_fd, .events = POLLIN } };
            int ready;
            do { ready = poll(waiting, 2, timeout_ms > 0 ? timeout_ms : -1); } while (ready < 0 && errno == EINTR);
            int problem = 0;
            socklen_t length = sizeof problem;
            if (ready == 0) { problem = ETIMEDOUT; }
            else if (ready < 0) { problem = errno; }
            else if (waiting[1].revents) { problem = ECANCELED; }
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &problem, &length) < 0) { problem = errno; }
            result = problem ? -1 : 0;
            if (problem) errno = problem;
        }
        if (result == 0) { fcntl(fd, F_SETFL, flags); break; }
        saved = errno;
        close(fd);
        fd = -1;
        if (saved == ECANCELED) break;
    }
    freeaddrinfo(found);
    if (fd < 0) errno = saved;
    return fd;
}
#endif
