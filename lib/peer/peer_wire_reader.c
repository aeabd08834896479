#include "peer_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "beneath.h"
#include "fsutil.h"
#include "log.h"
#include "walk.h"
#include "xalloc.h"

/*
 * The sending side: a pull-based ustar/pax writer, so the HTTP library
 * reads file contents straight into its own buffer (one copy, no thread).
 */
struct wire_file {
	char *abs, *rel;
	int is_dir;
	long long size;		  /* the bytes sent: the file's, or its range's */
	long long off, file_size; /* a range (file_size > 0) */
};

struct mtc_wire_reader {
	int rootfd; /* the tree's root, every file opened beneath it; -1 for a file object */
	struct wire_file *files;
	size_t n, cap, cur;
	char hdr[3 * 512 + MTC_WIRE_PATH_MAX + 128];
	size_t hdr_len, hdr_off;
	int fd;
	long long left, pad;
	int phase; /* 0 header, 1 data, 2 padding, 3 trailer, 4 done */
	int raw;   /* one file's bytes, no tar framing */
};

static long long stream_total(const struct mtc_wire_reader *r);

static const char *leave_reason(int e)
{
	return e == EXDEV || e == ELOOP ? "a symlink that leads out of the tree: refused" : strerror(e);
}

struct scan {
	struct mtc_wire_reader *r;
	char *err;
	size_t errlen;
};

/* A walk's visit (walk.h): every file and directory below the root, in path order. */
static int scan_entry(const struct mtc_walk_entry *e, void *arg)
{
	struct scan *sc = arg;
	struct mtc_wire_reader *r = sc->r;
	int is_dir;

	if (e->error == ELOOP && e->reading)
		return mtc_fail(sc->err, sc->errlen, "'%s': too deep", e->path);
	if (e->error)
		return mtc_fail(sc->err, sc->errlen, "'%s': %s", e->path, leave_reason(e->error));
	if (!S_ISREG(e->st.st_mode) && !S_ISDIR(e->st.st_mode))
		return mtc_fail(sc->err, sc->errlen, "'%s': neither a file nor a directory", e->path);
	if (strlen(e->rel) >= MTC_WIRE_PATH_MAX)
		return mtc_fail(sc->err, sc->errlen, "'%s': path too long", e->path);
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->files = xrealloc(r->files, r->cap * sizeof *r->files);
	}
	is_dir = S_ISDIR(e->st.st_mode);
	r->files[r->n++] = (struct wire_file){ .abs = xstrdup(e->path),
					       .rel = xstrdup(e->rel),
					       .is_dir = is_dir,
					       .size = is_dir ? 0 : e->st.st_size };
	return 0;
}

static int scan(struct mtc_wire_reader *r, const char *root, char *err, size_t errlen)
{
	struct scan sc = { r, err, errlen };
	struct mtc_walk w = { .root = root,
			      .flags = MTC_WALK_SORTED | MTC_WALK_BENEATH,
			      .max_depth = 256,
			      .rootfd = r->rootfd,
			      .visit = scan_entry,
			      .arg = &sc };
	return mtc_walk(&w);
}

/* A reader of the tree at root, which must not itself be a symlink; NULL with err. */
static struct mtc_wire_reader *reader_at(const char *root, char *err, size_t errlen)
{
	struct mtc_wire_reader *r = xcalloc(1, sizeof *r);
	r->fd = -1;
	r->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r->rootfd < 0) {
		mtc_fail(err, errlen, "'%s': %s", root,
			 errno == ELOOP ? "a symlink: refused" : strerror(errno));
		free(r);
		return NULL;
	}
	return r;
}

/* Opens the reader's current file f: beneath the root, or the file object itself. */
static int open_file(struct mtc_wire_reader *r, const struct wire_file *f)
{
	if (r->rootfd < 0)
		return open(f->abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	return mtc_open_beneath(r->rootfd, f->rel, O_RDONLY);
}

struct mtc_wire_reader *mtc_wire_reader_open(const char *root, long long *total, char *err,
					     size_t errlen)
{
	struct mtc_wire_reader *r = reader_at(root, err, errlen);
	if (!r)
		return NULL;
	if (scan(r, root, err, errlen) < 0) {
		mtc_wire_reader_close(r);
		return NULL;
	}
	if (total)
		*total = stream_total(r);
	return r;
}

/* A part as a file of the reader: a whole file or directory, or a range within the file. */
static int add_part(struct mtc_wire_reader *r, const char *root, const struct mtc_wire_part *p,
		    char *err, size_t errlen)
{
	struct stat st;
	char *abs = xasprintf("%s/%s", root, p->path);
	long long size;

	errno = 0;
	if (mtc_stat_beneath(r->rootfd, p->path, &st) < 0 ||
	    (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) || strlen(p->path) >= MTC_WIRE_PATH_MAX) {
		mtc_fail(err, errlen, "'%s': %s", abs,
			 errno ? leave_reason(errno) : "neither a file nor a directory");
		free(abs);
		return -1;
	}
	size = S_ISDIR(st.st_mode) ? 0 : st.st_size;
	if (p->len >= 0 && (S_ISDIR(st.st_mode) || p->off < 0 || p->off + p->len > size)) {
		mtc_fail(err, errlen, "'%s': no range of %lld bytes at %lld in it", abs, p->len, p->off);
		free(abs);
		return -1;
	}
	r->files[r->n++] = (struct wire_file){ abs,
					       xstrdup(p->path),
					       S_ISDIR(st.st_mode),
					       p->len >= 0 ? p->len : size,
					       p->len >= 0 ? p->off : 0,
					       p->len >= 0 ? size : 0 };
	return 0;
}

struct mtc_wire_reader *mtc_wire_reader_open_list(const char *root, const struct mtc_wire_part *parts,
						  size_t n, long long *total, char *err, size_t errlen)
{
	struct mtc_wire_reader *r = reader_at(root, err, errlen);
	if (!r)
		return NULL;
	r->files = xcalloc(n ? n : 1, sizeof *r->files);
	for (size_t i = 0; i < n; i++)
		if (add_part(r, root, &parts[i], err, errlen) < 0) {
			mtc_wire_reader_close(r);
			return NULL;
		}
	if (total)
		*total = stream_total(r);
	return r;
}

struct mtc_wire_reader *mtc_wire_reader_open_file(const char *path, long long off, long long len,
						  long long *total, char *err, size_t errlen)
{
	struct mtc_wire_reader *r;
	struct stat st;

	errno = 0;
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		mtc_fail(err, errlen, "'%s': %s", path,
			 errno		       ? strerror(errno)
			 : S_ISLNK(st.st_mode) ? "a symlink: refused"
					       : "not a file");
		return NULL;
	}
	if (len < 0) {
		off = 0;
		len = st.st_size;
	} else if (off < 0 || off + len > st.st_size) {
		mtc_fail(err, errlen, "'%s': no range of %lld bytes at %lld in it", path, len, off);
		return NULL;
	}
	r = xcalloc(1, sizeof *r);
	r->fd = -1;
	r->rootfd = -1;
	r->files = xcalloc(1, sizeof *r->files);
	r->files[0] = (struct wire_file){
		.abs = xstrdup(path), .rel = xstrdup(""), .size = len, .off = off
	};
	r->n = 1;
	r->raw = 1;
	r->phase = 1;
	r->left = len;
	if (total)
		*total = len;
	return r;
}

void mtc_wire_reader_close(struct mtc_wire_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	if (r->rootfd >= 0)
		close(r->rootfd);
	for (size_t i = 0; i < r->n; i++) {
		free(r->files[i].abs);
		free(r->files[i].rel);
	}
	free(r->files);
	free(r);
}

static void ustar_header(char *h, const char *name, char type, long long size)
{
	unsigned sum = 0;
	memset(h, 0, 512);
	snprintf(h, 100, "%s", name);
	memcpy(h + 100, type == '5' ? "0000755" : "0000644", 8);
	memcpy(h + 108, "0000000", 8);
	memcpy(h + 116, "0000000", 8);
	snprintf(h + 124, 12, "%011llo", size);
	memcpy(h + 136, "00000000000", 12);
	h[156] = type;
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
}

static size_t pax_record(char *out, const char *key, const char *value)
{
	size_t body = strlen(key) + strlen(value) + 3, len = body + 1;
	while (snprintf(NULL, 0, "%zu", len) + body != len)
		len++;
	return (size_t)sprintf(out, "%zu %s=%s\n", len, key, value);
}

/* f's pax records into rec (MTC_WIRE_PATH_MAX + 128 bytes): what ustar cannot hold, and a range. */
static size_t pax_records(const struct wire_file *f, char *rec)
{
	char num[64];
	size_t rl = 0;
	if (strlen(f->rel) >= 100)
		rl += pax_record(rec + rl, "path", f->rel);
	if (f->size > 077777777777LL) {
		snprintf(num, sizeof num, "%lld", f->size);
		rl += pax_record(rec + rl, "size", num);
	}
	if (f->file_size) {
		snprintf(num, sizeof num, "%lld %lld", f->off, f->file_size);
		rl += pax_record(rec + rl, MTC_WIRE_RANGE_KEY, num);
	}
	return rl;
}

/* Header(s) of files[cur] into hdr: a pax 'x' header first when it has records. */
static void make_header(struct mtc_wire_reader *r)
{
	const struct wire_file *f = &r->files[r->cur];
	char rec[MTC_WIRE_PATH_MAX + 128];
	size_t rl = pax_records(f, rec);

	r->hdr_len = r->hdr_off = 0;
	if (rl) {
		ustar_header(r->hdr, "././@PaxHeader", 'x', (long long)rl);
		memcpy(r->hdr + 512, rec, rl);
		memset(r->hdr + 512 + rl, 0, (512 - rl % 512) % 512);
		r->hdr_len = 512 + (rl + 511) / 512 * 512;
	}
	ustar_header(r->hdr + r->hdr_len, f->rel, f->is_dir ? '5' : '0',
		     f->size > 077777777777LL ? 0 : f->size);
	r->hdr_len += 512;
}

static long long stream_total(const struct mtc_wire_reader *r)
{
	char rec[MTC_WIRE_PATH_MAX + 128];
	long long total = 1024;
	for (size_t i = 0; i < r->n; i++) {
		const struct wire_file *f = &r->files[i];
		size_t rl = pax_records(f, rec);
		total += 512 + (f->size + 511) / 512 * 512;
		if (rl)
			total += 512 + (long long)(rl + 511) / 512 * 512;
	}
	return total;
}

/* The stream copied out segment by segment: the same state as peek and advance. */
ssize_t mtc_wire_reader_read(struct mtc_wire_reader *r, char *buf, size_t len, char *err, size_t errlen)
{
	size_t done = 0;

	while (done < len) {
		const char *mem;
		int fd;
		off_t off;
		ssize_t n = mtc_wire_reader_peek(r, &mem, &fd, &off, err, errlen);
		size_t k;

		if (n <= 0)
			return n < 0 ? -1 : (ssize_t)done;
		k = (size_t)n < len - done ? (size_t)n : len - done;
		if (fd < 0) {
			memcpy(buf + done, mem, k);
		} else {
			ssize_t got = pread(fd, buf + done, k, off);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				return mtc_fail(err, errlen, "'%s': %s", r->files[r->cur].abs,
						got < 0 ? strerror(errno) : "shrank while being sent");
			k = (size_t)got;
		}
		done += k;
		mtc_wire_reader_advance(r, k);
	}
	return (ssize_t)done;
}

#define SEGMENT_MAX (64LL << 20)

ssize_t mtc_wire_reader_peek(struct mtc_wire_reader *r, const char **mem, int *fd, off_t *off, char *err,
			     size_t errlen)
{
	static const char zeros[512];

	*fd = -1;
	for (;;) {
		if (r->phase == 4)
			return 0;
		if (r->phase == 0 && r->hdr_len == 0) {
			if (r->cur == r->n) {
				memset(r->hdr, 0, 1024);
				r->hdr_len = 1024;
				r->hdr_off = 0;
				r->phase = 3;
			} else {
				make_header(r);
			}
		}
		if (r->phase == 0 || r->phase == 3) {
			*mem = r->hdr + r->hdr_off;
			return (ssize_t)(r->hdr_len - r->hdr_off);
		}
		if (r->phase == 1) {
			const struct wire_file *f = &r->files[r->cur];
			if (r->fd < 0 && (r->fd = open_file(r, f)) < 0)
				return mtc_fail(err, errlen, "'%s': %s", f->abs, leave_reason(errno));
			if (r->left > 0) {
				*fd = r->fd;
				*off = (off_t)(f->off + f->size - r->left);
				return (ssize_t)(r->left < SEGMENT_MAX ? r->left : SEGMENT_MAX);
			}
			close(r->fd);
			r->fd = -1;
			r->phase = 2;
		}
		if (r->phase == 2) {
			if (r->pad > 0) {
				*mem = zeros;
				return (ssize_t)r->pad;
			}
			r->phase = r->raw ? 4 : 0;
			r->cur++;
		}
	}
}

void mtc_wire_reader_advance(struct mtc_wire_reader *r, size_t n)
{
	if (r->phase == 0 || r->phase == 3) {
		r->hdr_off += n;
		if (r->hdr_off < r->hdr_len)
			return;
		r->hdr_len = 0;
		if (r->phase == 3) {
			r->phase = 4;
		} else if (r->files[r->cur].is_dir) {
			r->cur++;
		} else {
			r->left = r->files[r->cur].size;
			r->pad = (512 - r->left % 512) % 512;
			r->phase = 1;
		}
	} else if (r->phase == 1) {
		r->left -= (long long)n;
	} else if (r->phase == 2) {
		r->pad -= (long long)n;
	}
}
