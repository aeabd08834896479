/*
 * The floor under the coordinator's heartbeats: the least an HTTP server can do
 * for one (epoll, one thread, a fixed answer to each request head and body read
 * whole in one recv). tests/bench/coord.sh runs the same heartbeat load against
 * it and against the daemon, so the daemon's CPU is seen against the kernel's
 * share on this machine. With PAUSE_MS it rests that long after each pass, as
 * the daemon's coordinator does (lib/peer/mhd_loop.c).
 *   http_floor PORT_FILE [PAUSE_MS]
 */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			     "Content-Length: 17\r\n\r\n{\"status\":\"done\"}";

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), ep = epoll_create1(0), one = 1;
	struct epoll_event ev = { .events = EPOLLIN }, evs[256];
	char buf[4096];
	FILE *f;
	int pause_ms = argc > 2 ? atoi(argv[2]) : 0;
	const struct timespec pause = { pause_ms / 1000, (pause_ms % 1000) * 1000000L };

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (argc < 2 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, SOMAXCONN) ||
	    getsockname(l, (struct sockaddr *)&a, &len) || !(f = fopen(argv[1], "w")))
		return 1;
	fprintf(f, "%d\n", ntohs(a.sin_port));
	fclose(f);
	ev.data.fd = l;
	epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == l) {
				int c;
				while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					ev.data.fd = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				}
			} else if (recv(fd, buf, sizeof buf, 0) > 0) {
				if (send(fd, answer, sizeof answer - 1, MSG_NOSIGNAL) < 0)
					close(fd);
			} else {
				close(fd);
			}
		}
		if (pause_ms > 0)
			nanosleep(&pause, NULL);
	}
}
