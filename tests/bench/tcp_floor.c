/*
 * The floor under a push: the least CPU that carries a file over loopback TCP
 * into a tmpfs file, as mtc's sender and receiver do it (sendfile out of the
 * page cache; recv into a 4 MiB buffer and write from it), with no HTTP, no
 * tar framing and no hashing. tests/bench/steady.sh prints it beside the
 * replication CPU of run and the peer daemon.
 *   tcp_floor FILE DEST    prints "RECEIVER_CPU_S SENDER_CPU_S"
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUF (4 << 20)

static double cpu_s(int who)
{
	struct rusage r;
	getrusage(who, &r);
	return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0), in, out, c, status;
	char *buf = malloc(BUF);
	off_t size, sent = 0;
	ssize_t n;
	double c0;
	pid_t pid;

	if (argc != 3 || !buf || (in = open(argv[1], O_RDONLY)) < 0 ||
	    (out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		return 1;
	size = lseek(in, 0, SEEK_END);
	if ((pid = fork()) == 0) {
		c = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(c, (struct sockaddr *)&a, sizeof a))
			_exit(1);
		while (sent < size && sendfile(c, in, &sent, size - sent) > 0)
			;
		_exit(sent == size ? 0 : 1);
	}
	c0 = cpu_s(RUSAGE_SELF);
	if ((c = accept(l, NULL, NULL)) < 0)
		return 1;
	while ((n = recv(c, buf, BUF, MSG_WAITALL)) > 0)
		if (write(out, buf, n) != n)
			return 1;
	if (close(out) || waitpid(pid, &status, 0) != pid || status)
		return 1;
	printf("%.3f %.3f\n", cpu_s(RUSAGE_SELF) - c0, cpu_s(RUSAGE_CHILDREN));
	return 0;
}
