#ifndef MTC_STORE_TRANSFER_H
#define MTC_STORE_TRANSFER_H

/*
 * The transfer engine an object-store backend stands on; not for programs.
 * An operation (struct op) is a small state machine: prepare() states its
 * next request, finish() judges the answer, complete() tells whoever waits.
 * One curl multi handle drives them all, up to opt.parallel at once; a
 * retry backs off with the one policy of http.c until the op's deadline.
 * Downloads (transfer_get.c) are the engine's whole: a first short range,
 * then one stream or parallel ranges into one pre-allocated temporary,
 * resumable from a sidecar, CRC32C checked, renamed into place when whole.
 * What differs between object stores is the api (struct xfer_api): how a
 * request is authorised, what a response header means, an error body's
 * message, and the URL of a ranged read.
 */

#include <pthread.h>
#include <stdint.h>

#include <curl/curl.h>

#include "buf.h"
#include "store_impl.h"

#define XFER_ERRBODY_MAX (64 * 1024)
#define XFER_BODY_MAX (64 << 20) /* a listing page or an object resource */

struct op;
struct op_type;
struct xfer_upload;
struct req;
struct engine;

struct xfer_api {
	/*
	 * Authorises the prepared r: gives a bearer token in *token, or adds its
	 * own headers (a signature). refresh: the last answer was 401.
	 */
	int (*authorize)(struct op *op, struct req *r, int refresh, char **token, char *err,
			 size_t errlen);
	/* A response header the engine does not read itself (generation, checksum). */
	void (*header)(struct req *r, const char *name, char *value);
	/* The server's reason in an error's body, or "" (then the body's start is shown). */
	void (*message)(const struct req *r, char *out, size_t outlen);
	/* States in r a read of op->name, pinned to op->generation when it is set. */
	void (*get)(struct op *op, struct req *r);
	/* 1 when the answer says the credential expired (beside 401); NULL: never. */
	int (*expired)(const struct req *r);
	/*
	 * 1 when the answer names where the bucket really is and the api now
	 * addresses it there (an S3 bucket in another region): sent again, once
	 * an op. NULL: never.
	 */
	int (*moved)(struct op *op, const struct req *r);
	/* What to check after a 401 or 403: which credential, where it comes from. */
	const char *denied_hint;
};

/*
 * A backend's engine state: the first member of its s->impl, so that
 * s->impl is a struct xfer.
 */
struct xfer {
	const struct xfer_api *api;
	char *prefix; /* "" or ends in '/': object name = prefix + key */
	CURLM *multi;
	CURL **idle;
	size_t n_idle;
	long long first;     /* the opening range of a download, before its size is known */
	long long threshold; /* a file this big moves as slices */
	int slices;
	double backoff_base, backoff_cap;
	unsigned seed;
	pthread_mutex_t run_lock;
	struct engine *engine;
	const struct op_type *small; /* the backend's small ops, of the kinds below first */
	const struct xfer_upload *up;
	struct mtc_store_ops ops; /* s->ops */
};

/* How a backend uploads: its op type, and how an op of it is set to send a file or bytes. */
struct xfer_upload {
	const struct op_type *type;
	/* op->fd is open on path, op->size its size: the upload, whole or in parts; -1: op failed */
	int (*file)(struct op *op, const char *path);
	/* an upload of len bytes at buf, copied */
	void (*buf)(struct op *op, const void *buf, size_t len);
};

/* What the engine asks of xfer.small (op->state); a backend's own kinds follow XK_OWN. */
enum { XK_BUF, XK_RANGE, XK_STAT, XK_DELETE, XK_OWN };

struct req {
	CURL *easy;
	const char *method;
	struct curl_slist *headers;
	char *url;
	char *path, *query; /* a signing api's: not encoded; authorize() makes url of them */
	long status;
	CURLcode cc;
	char errbuf[CURL_ERROR_SIZE];
	int abort_errno;
	/* request body: memory, or body_len bytes of a file from body_off */
	char *body;
	int body_fd;
	long long body_off, body_len, body_sent;
	/* response: 2xx bodies go to the sink (a file at sink_off, or memory), others to err */
	int sink_fd;
	long long sink_off, written;
	int sink_mem;
	size_t mem_max;	    /* sink_mem: the caller's cap */
	struct mtc_buf mem; /* its cap set by the answer's status */
	int crc_on;
	uint32_t crc;
	/* response headers */
	char *location;
	char *etag;
	long long range_end; /* 308 Range: bytes=0-N → N; -1 when absent */
	long long total;     /* Content-Range total; -1 when absent */
	long long generation;
	int have_crc;
	uint32_t srv_crc;
};

enum verdict { V_DONE, V_AGAIN, V_RETRY, V_FAIL, V_WAIT };

/* A range of a sliced download, whole from off for len bytes, with their CRC32C. */
struct slice {
	long long off, len;
	uint32_t crc;
	long long generation;  /* a part of a composite upload: the object it became */
	unsigned char md5[16]; /* a part of a multipart upload: its MD5 (what S3's ETag is) */
};
enum op_state { O_READY, O_ACTIVE, O_SLEEPING, O_WAITING, O_FINISHED };

struct op_type {
	/* 0: r is to be sent; 1: nothing to send, op->now says what then; -1: failed */
	int (*prepare)(struct op *op, struct req *r);
	enum verdict (*finish)(struct op *op, struct req *r);
	void (*complete)(struct op *op);
	/* a slice's bytes so far into its sink, and their CRC32C (NULL: not kept) */
	void (*received)(struct op *op, long long done, uint32_t crc);
};

struct op {
	const struct op_type *t;
	struct mtc_store *s;
	struct xfer *xf;
	struct req req;
	enum op_state ostate;
	int state, attempt, retried, refreshed, moved, err, crc_retries;
	double deadline, wake;
	char lasterr[512];
	struct op *parent;
	int pending, child_err;
	char *name;
	const char *key;
	struct mtc_store_xfer *x;
	const char *path;
	char *tmp;
	int fd, flags, resume; /* resume: a download into a caller's partial file, one stream */
	long long size, off, len, done, generation;
	uint32_t crc, expect_crc;
	int have_expect;
	char *session;
	char *body; /* a request body the op owns */
	long long body_len;
	/* list */
	struct mtc_store_list *list;
	char *page_token;
	const char *lprefix, *ldelim;
	int ltemps; /* list: composite uploads' parts too */
	/* a sliced transfer: the parent's ranges; a child's own is slot */
	struct slice *sl;
	size_t n_sl, slot;
	char **tags;	  /* a multipart upload's parts as the server names them (S3 ETags), n_sl */
	char *sidecar;	  /* where the parent records sl (NULL: nowhere) */
	long long saved;  /* a slice: bytes recorded so far */
	enum verdict now; /* what prepare() decided when it sends no request */
	int failed_with;  /* a composite upload cleaning up after this errno */
	/* memory results */
	char **outbuf;
	size_t *outlen, max;
	void *rangebuf;
	struct mtc_store_object *stat_out;
	void *arg; /* a backend's own state for the op */
};

/*
 * Sets up xf (s->impl's first member) for s: the multi handle, slicing and
 * backoff; retry_env names the variable that may set the first backoff (ms).
 * s->ops become the engine's but for own's list, delete_prefix, leftovers
 * and close.
 */
void xfer_init(struct xfer *xf, struct mtc_store *s, const struct xfer_api *api, const char *prefix,
	       const char *retry_env, const struct mtc_store_ops *own);
void xfer_close(struct xfer *xf);

struct op *xfer_op_new(struct mtc_store *s, const struct op_type *t);
/* A small op of t's own kind (op->state) on key's object. */
struct op *xfer_small_op(struct mtc_store *s, const struct op_type *t, int kind, const char *key);
/* The store's get_buf, get_range, stat and del: the backend's small ops (xfer.small). */
int xfer_get_buf(struct mtc_store *s, const char *key, size_t max, char **buf, size_t *len);
int xfer_get_range(struct mtc_store *s, const char *key, long long off, void *buf, size_t len);
int xfer_stat(struct mtc_store *s, const char *key, struct mtc_store_object *out);
int xfer_delete(struct mtc_store *s, const char *key);
/* States in r where an XK_BUF or an XK_RANGE op's answer goes. */
void xfer_sink_buf(struct op *op, struct req *r);
void xfer_sink_range(struct op *op, struct req *r);
/* Judges the answer to them (not a transient one, not a 404). */
enum verdict xfer_finish_buf(struct op *op, struct req *r);
enum verdict xfer_finish_range(struct op *op, struct req *r);
/* Lists what is under prefix with the list op t (op->ltemps: temps) into out, sorted. */
int xfer_list(struct mtc_store *s, const struct op_type *t, const char *prefix, const char *delim,
	      int temps, struct mtc_store_list *out);
/* The store's put_file, put_many and put_buf, by the backend's xfer.up. */
int xfer_put_file(struct mtc_store *s, const char *key, const char *path, int flags);
int xfer_put_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags);
int xfer_put_buf(struct mtc_store *s, const char *key, const void *buf, size_t len, int flags);
void xfer_op_free(struct op *op);
/* prefix + key (malloc'd). */
char *xfer_name(struct xfer *xf, const char *key);

/* Runs ops (and the children they add) to the end; -1 if any failed, with the first reason. */
int xfer_run(struct mtc_store *s, struct op **ops, size_t n);
/*
 * The op for one object of a batch: 0 when it is to be sent; 1 when nothing
 * is (done here); -1 when it cannot be (*op holds why: err and lasterr).
 */
typedef int xfer_make(struct mtc_store *s, struct mtc_store_xfer *x, int flags, struct op **op);
/* Runs the ops make gives for x's n objects; -1 when one failed, the first one's reason kept. */
int xfer_run_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n, int flags, xfer_make *make);
/* An upload's end: its file closed; a part tells its parent (notify), an object its xfer. */
void xfer_upload_complete(struct op *op, void (*notify)(struct op *part));
/* Runs op alone, then frees it. */
int xfer_run_one(struct mtc_store *s, struct op *op);
/* Adds op (a child of a running op) to the running engine. */
void xfer_add(struct engine *e, struct op *op);
/* Moves op on as v says: again now, again after a backoff, waiting, or over. */
void xfer_settle(struct engine *e, struct op *op, enum verdict v);

/* Records why op failed with errno e; returns V_FAIL. */
int xfer_fail(struct op *op, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "<what> '<name>': HTTP 403: <message>", errno from the status. */
enum verdict xfer_fail_with(struct op *op, struct req *r, const char *what);
void xfer_header(struct req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when another try may change the answer. */
int xfer_transient(const struct req *r);
void xfer_put_body(struct req *r, int fd, long long off, long long len);

void xfer_add_slice(struct op *p, long long off, long long len, uint32_t crc);
/* Adds to p's engine a child of p, of p's type, sending p's slice i as name (owned) from state. */
void xfer_add_part(struct op *p, size_t i, char *name, int state);
int xfer_crc_of_range(int fd, long long off, long long size, uint32_t *crc);

/* The store's get_many and get_file on the engine (transfer_get.c). */
int xfer_get_many(struct mtc_store *s, struct mtc_store_xfer *x, size_t n);
int xfer_get_file(struct mtc_store *s, const char *key, const char *path);

#endif
