/*
 * libmicrohttpd alone, doing what the peer daemon does for one file: GET
 * /NAME answers DIR/NAME from its descriptor (sendfile where MHD can), PUT
 * /NAME writes the body to DIR/NAME. With CERT and KEY it terminates TLS
 * itself (GnuTLS). tests/bench/netstack.sh sets it beside the daemon, whose
 * TLS front, relay and sorter (lib/peer/) stand where MHD's own would.
 *   mhd_file PORT_FILE DIR [CERT KEY]
 */
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *dir;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *b;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		exit(1);
	b = calloc(1, (size_t)n + 1);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
		exit(1);
	fclose(f);
	return b;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned code)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *data,
			      size_t *size, void **con_cls)
{
	char path[4096];
	int *fd = *con_cls;

	if (strchr(url + 1, '/') || snprintf(path, sizeof path, "%s%s", dir, url) >= (int)sizeof path)
		return answer(c, 400);
	if (!strcmp(method, "GET")) {
		struct stat st;
		struct MHD_Response *r;
		enum MHD_Result rc;
		int f = open(path, O_RDONLY);
		if (f < 0 || fstat(f, &st))
			return answer(c, 404);
		r = MHD_create_response_from_fd((uint64_t)st.st_size, f);
		rc = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return rc;
	}
	if (strcmp(method, "PUT"))
		return answer(c, 405);
	if (!fd) {
		fd = malloc(sizeof *fd);
		*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		*con_cls = fd;
		return *fd < 0 ? MHD_NO : MHD_YES;
	}
	if (*size) {
		if (write(*fd, data, *size) != (ssize_t)*size)
			return MHD_NO;
		*size = 0;
		return MHD_YES;
	}
	return answer(c, fsync(*fd) ? 500 : 201);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	int *fd = *con_cls;
	if (fd) {
		close(*fd);
		free(fd);
	}
}

int main(int argc, char **argv)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	sigset_t set;
	int sig;
	FILE *f;

	if (argc != 3 && argc != 5)
		return 2;
	dir = argv[2];
	if (argc == 5) {
		d = MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handle, NULL,
				     MHD_OPTION_HTTPS_MEM_CERT, slurp(argv[3]),
				     MHD_OPTION_HTTPS_MEM_KEY, slurp(argv[4]),
				     MHD_OPTION_THREAD_POOL_SIZE, 4u,
				     MHD_OPTION_SOCK_ADDR, &a, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
	} else {
		d = MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_THREAD_POOL_SIZE,
				     4u, MHD_OPTION_SOCK_ADDR, &a, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
				     MHD_OPTION_END);
	}
	if (!d || !(info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD)) ||
	    getsockname(info->listen_fd, (struct sockaddr *)&a, &len) || !(f = fopen(argv[1], "w")))
		return 1;
	fprintf(f, "%d\n", ntohs(a.sin_port));
	fclose(f);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	return 0;
}
