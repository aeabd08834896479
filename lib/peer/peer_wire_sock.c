/* The receiver over a socket (peer_wire.h: mtc_wire_extract_sock, mtc_wire_receive_file). */
#include "peer_wire_admit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include "blake3/blake3.h"
#include "fsutil.h"
#include "log.h"
#include "xalloc.h"

static const char zero_block[512];

/*
 * The receiving side over a socket: file contents are read into a large
 * buffer, hashed there while it is hot and written out from it. (Measured
 * against splicing socket -> pipe -> file and hashing the pages back from
 * the page cache, this costs the daemon about a third less CPU.) Large
 * buffers come from a pool shared by all uploads, so the daemon's memory
 * stays bounded however many connections it serves; an upload that finds
 * none free uses a small one.
 */
#define RECV_BIG (4 << 20)
#define RECV_SMALL (128 << 10)
#define RECV_POOL 6
#define SOCK_POLL_MS 250
#define PAX_MAX (64 << 10)

static pthread_mutex_t recv_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static char *recv_pool[RECV_POOL];
static int recv_pool_free, recv_pool_made;

static char *recv_buffer(size_t *len)
{
	char *b = NULL;
	int make = 0;

	pthread_mutex_lock(&recv_pool_mu);
	if (recv_pool_free)
		b = recv_pool[--recv_pool_free];
	else if (recv_pool_made < RECV_POOL)
		make = ++recv_pool_made;
	pthread_mutex_unlock(&recv_pool_mu);
	*len = b || make ? RECV_BIG : RECV_SMALL;
	return b ? b : xmalloc(*len);
}

static void recv_buffer_done(char *b, size_t len)
{
	if (len != RECV_BIG) {
		free(b);
		return;
	}
	pthread_mutex_lock(&recv_pool_mu);
	recv_pool[recv_pool_free++] = b;
	pthread_mutex_unlock(&recv_pool_mu);
}

struct sock_in {
	int fd;
	const char *pre; /* bytes of the stream already read */
	size_t pre_len;
	int timeout_s;
	const int *stop;
	struct mtc_bg_pool *pool; /* where what arrives is written and hashed */
	char *buf;
	size_t buf_len;
	long long consumed;
};

/* 0 when fd has data; -1 with err after timeout_s without any, or when stopping. */
static int sock_wait(struct sock_in *in, char *err, size_t errlen)
{
	int waited = 0;
	for (;;) {
		struct pollfd p = { .fd = in->fd, .events = POLLIN };
		int n = poll(&p, 1, SOCK_POLL_MS);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return mtc_fail(err, errlen, "waiting for the stream: %s", strerror(errno));
		if (in->stop && __atomic_load_n(in->stop, __ATOMIC_RELAXED))
			return mtc_fail(err, errlen, "shutting down");
		if ((waited += SOCK_POLL_MS) >= in->timeout_s * 1000)
			return mtc_fail(err, errlen, "no data for %d s", in->timeout_s);
	}
}

static int sock_read(struct sock_in *in, char *dst, size_t len, char *err, size_t errlen)
{
	while (len) {
		ssize_t n;
		if (in->pre_len) {
			n = (ssize_t)(len < in->pre_len ? len : in->pre_len);
			memcpy(dst, in->pre, (size_t)n);
			in->pre += n;
			in->pre_len -= (size_t)n;
		} else {
			n = recv(in->fd, dst, len, MSG_DONTWAIT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				if (sock_wait(in, err, errlen) < 0)
					return -1;
				continue;
			}
			if (n < 0)
				return mtc_fail(err, errlen, "reading the stream: %s", strerror(errno));
			if (n == 0)
				return mtc_fail(err, errlen, "the stream ended early");
		}
		dst += n;
		len -= (size_t)n;
		in->consumed += n;
	}
	return 0;
}

static int sock_skip(struct sock_in *in, size_t len, char *err, size_t errlen)
{
	char pad[512];
	while (len) {
		size_t k = len < sizeof pad ? len : sizeof pad;
		if (sock_read(in, pad, k, err, errlen) < 0)
			return -1;
		len -= k;
	}
	return 0;
}

/*
 * w's bytes of the stream into fd, hashed into w: through the buffer, hashed
 * there while it is hot, a range written at its place in fd. (A range mapped
 * and received into its pages costs more: fallocate clears every page, the
 * mapping faults them in and munmap tears them down.)
 */
static int sock_file(struct sock_in *in, int fd, const char *path, struct mtc_wire_entry *w, char *err,
		     size_t errlen)
{
	struct mtc_wire_hash h;
	int rc = 0;

	mtc_wire_hash_start(&h, w);
	for (long long off = 0; off < w->size && !rc;) {
		size_t k = w->size - off < (long long)in->buf_len ? (size_t)(w->size - off)
								  : in->buf_len;
		uint8_t *dst = (uint8_t *)in->buf;
		if (sock_read(in, (char *)dst, k, err, errlen) < 0)
			rc = -1;
		else if (mtc_wire_put(in->pool, fd, &h, dst, k, off) < 0)
			rc = mtc_fail(err, errlen, "'%.200s': %s", path, strerror(errno));
		off += (long long)k;
	}
	mtc_wire_hash_end(&h);
	return rc;
}

/* A strict octal field (NUL or space terminated); -1 when it is not one. */
static long long octal(const char *f, size_t len)
{
	long long v = 0;
	size_t i = 0;
	while (i < len && f[i] == ' ')
		i++;
	if (i == len || f[i] < '0' || f[i] > '7')
		return -1;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (LLONG_MAX >> 3))
			return -1;
		v = v * 8 + (f[i] - '0');
	}
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return -1;
	return v;
}

static int header_ok(const unsigned char *b)
{
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += i >= 148 && i < 156 ? ' ' : b[i];
	return octal((const char *)b + 148, 8) == (long long)sum && !memcmp(b + 257, "ustar", 6) &&
	       !memcmp(b + 263, "00", 2);
}

/* An 'x' header's pax records: path, size and range taken, sparse files refused, others ignored. */
static int pax_parse(char *p, size_t len, char *path, long long *size, long long *range_off,
		     long long *file_size, char *err, size_t errlen)
{
	size_t off = 0;
	while (off < len) {
		char *end, *key, *eq;
		unsigned long rl = strtoul(p + off, &end, 10);
		if (end == p + off || *end != ' ' || rl < 5 || rl > len - off || p[off + rl - 1] != '\n')
			return mtc_fail(err, errlen, "bad pax header");
		key = end + 1;
		p[off + rl - 1] = '\0';
		if (!(eq = strchr(key, '=')))
			return mtc_fail(err, errlen, "bad pax header");
		*eq = '\0';
		if (!strcmp(key, "path")) {
			if (strlen(eq + 1) >= MTC_WIRE_PATH_MAX)
				return mtc_fail(err, errlen, "path longer than %d bytes",
						MTC_WIRE_PATH_MAX - 1);
			strcpy(path, eq + 1);
		} else if (!strcmp(key, "size")) {
			char *e;
			errno = 0;
			*size = strtoll(eq + 1, &e, 10);
			if (errno || *e || e == eq + 1 || *size < 0)
				return mtc_fail(err, errlen, "bad pax size");
		} else if (!strcmp(key, MTC_WIRE_RANGE_KEY)) {
			if (mtc_wire_parse_range(eq + 1, range_off, file_size, err, errlen) < 0)
				return -1;
		} else if (!strncmp(key, "GNU.sparse", 10)) {
			return mtc_fail(err, errlen, "sparse files are not accepted");
		}
		off += rl;
	}
	return 0;
}

int mtc_wire_receive(int sock, const void *pre, size_t pre_len, int timeout_s, const int *stop, int fd,
		     struct mtc_wire_entry *w, long long *consumed, char *err, size_t errlen)
{
	struct sock_in in = {
		.fd = sock, .pre = pre, .pre_len = pre_len, .timeout_s = timeout_s, .stop = stop
	};
	int rc;

	in.buf = recv_buffer(&in.buf_len);
	rc = sock_file(&in, fd, "the body", w, err, errlen);
	recv_buffer_done(in.buf, in.buf_len);
	if (consumed)
		*consumed = in.consumed;
	return rc;
}

enum mtc_result mtc_wire_extract_sock(int sock, const void *pre, size_t pre_len, int timeout_s,
				      const int *stop, const char *root,
				      const struct mtc_wire_limits *lim,
				      const struct mtc_manifest *expected, struct mtc_wire_list *got,
				      long long *consumed, char *err, size_t errlen)
{
	struct sock_in in = { .fd = sock,
			      .pre = pre,
			      .pre_len = pre_len,
			      .timeout_s = timeout_s,
			      .stop = stop,
			      .pool = lim->pool };
	unsigned char hdr[512];
	char *path = xmalloc(MTC_WIRE_PATH_MAX), *pax = NULL;
	struct mtc_wire_admission ad = { .lim = lim, .expected = expected, .got = got };
	enum mtc_result rc = MTC_FAILURE;
	int rootfd = -1, have_pax = 0;
	long long pax_size = -1, off = 0, file_size = 0;

	if ((rootfd = ad.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		mtc_fail(err, errlen, "'%s': %s", root, strerror(errno));
		goto out;
	}
	in.buf = recv_buffer(&in.buf_len);
	for (;;) {
		const struct mtc_manifest_entry *x;
		struct mtc_wire_entry *w;
		long long size;
		char type, *name;
		int is_dir, fd, c;

		if (sock_read(&in, (char *)hdr, 512, err, errlen) < 0)
			goto out;
		if (!memcmp(hdr, zero_block, 512)) {
			if (have_pax) {
				mtc_fail(err, errlen, "pax header without an entry");
				goto out;
			}
			if (sock_read(&in, (char *)hdr, 512, err, errlen) < 0)
				goto out;
			if (memcmp(hdr, zero_block, 512)) {
				mtc_fail(err, errlen, "data after the end of the archive");
				goto out;
			}
			rc = MTC_OK;
			break;
		}
		if (!header_ok(hdr)) {
			mtc_fail(err, errlen,
				 "bad tar header (not ustar, or its checksum does not match)");
			goto out;
		}
		type = (char)hdr[156];
		size = octal((const char *)hdr + 124, 12);
		if (type == 'x') {
			if (have_pax || size < 0 || size > PAX_MAX) {
				mtc_fail(err, errlen, "bad pax header");
				goto out;
			}
			pax = xrealloc(pax, (size_t)size + 1);
			if (sock_read(&in, pax, (size_t)size, err, errlen) < 0 ||
			    sock_skip(&in, (size_t)((512 - size % 512) % 512), err, errlen) < 0)
				goto out;
			path[0] = '\0';
			pax_size = -1;
			if (pax_parse(pax, (size_t)size, path, &pax_size, &off, &file_size, err,
				      errlen) < 0)
				goto out;
			have_pax = 1;
			continue;
		}
		if (type == '1') {
			mtc_fail(err, errlen, "hard links are not accepted");
			goto out;
		}
		if (type == '2') {
			mtc_fail(err, errlen, "symbolic links are not accepted");
			goto out;
		}
		if (type != '0' && type != '\0' && type != '5') {
			mtc_fail(err, errlen, "only regular files and directories are accepted");
			goto out;
		}
		if (!have_pax || !path[0]) {
			char *p = path;
			if (hdr[345]) {
				p += snprintf(p, 157, "%.155s", (const char *)hdr + 345);
				*p++ = '/';
			}
			snprintf(p, 101, "%.100s", (const char *)hdr);
		}
		if (have_pax && pax_size >= 0)
			size = pax_size;
		have_pax = 0;
		if (size < 0) {
			mtc_fail(err, errlen, "'%.200s': no size", path);
			goto out;
		}
		is_dir = type == '5';
		name = path;
		while (name[0] == '.' && name[1] == '/')
			name += 2;
		if (name != path)
			memmove(path, name, strlen(name) + 1);
		if (is_dir && (!strcmp(path, ".") || !*path))
			continue; /* the root itself */
		if (is_dir && strlen(path) > 1 && path[strlen(path) - 1] == '/')
			path[strlen(path) - 1] = '\0';
		if (mtc_wire_check_path(path, lim->max_depth, err, errlen) < 0)
			goto out;
		if (is_dir)
			size = 0;
		c = mtc_wire_admit(&ad, path, is_dir, size, off, file_size, &fd, &w, &x, err, errlen);
		off = file_size = 0;
		if (c < 0)
			goto out;
		if (c > 0)
			continue;
		if (sock_file(&in, fd, path, w, err, errlen) < 0) {
			close(fd);
			goto out;
		}
		close(fd);
		if (mtc_wire_digest_matches(x, w, err, errlen) < 0) {
			rc = MTC_INTEGRITY;
			goto out;
		}
		if (sock_skip(&in, (size_t)((512 - size % 512) % 512), err, errlen) < 0)
			goto out;
	}
out:
	if (consumed)
		*consumed = in.consumed;
	if (rootfd >= 0)
		close(rootfd);
	if (in.buf)
		recv_buffer_done(in.buf, in.buf_len);
	free(pax);
	free(path);
	return rc;
}
