#ifndef MTC_TMPNAME_H
#define MTC_TMPNAME_H

#include <sys/stat.h>

/*
 * Temporaries (mtc(7) §9.5), the one place they are named and judged. A file
 * or directory a program writes before it is whole is named
 *     .mtc-<host>-<pid>-<seq>.<label>.tmp
 * (host: 8 hex digits of this kernel's boot id; label: what it becomes, cut
 * to 64 bytes) or, when a later run must find it again to resume it,
 *     .mtc-<label>.tmp
 * and its writer holds an flock on it from its creation until it is renamed
 * away or removed. Any name that starts ".mtc-" and ends ".tmp" is a
 * temporary. Its writer is gone, and a sweeper removes it, when no one holds
 * its lock and, unless its name carries this kernel's boot id, it is also
 * untouched for mtc_tmp_stale_s(): a lock taken on another host may not be
 * seen here. Where no lock can be held (an object store), that age alone
 * tells a dead writer's temporary.
 */
#define MTC_TMP_STALE_S (24 * 60 * 60)

/* MTC_TMP_STALE_S, or the seconds MTC_TMP_STALE_S in the environment says (for the tests). */
long long mtc_tmp_stale_s(void);

struct mtc_tmp {
	char *path;
	int fd; /* holds the lock: a file's open for writing, a directory's read-only */
};

/* A new temporary in dir for label: a file (opened O_RDWR) or a directory; 0, or -1 with errno. */
int mtc_tmp_create(const char *dir, const char *label, int is_dir, struct mtc_tmp *t);
/*
 * dir/.mtc-<label>.tmp, created if missing (a directory), then locked: what
 * a killed run left is continued. -1 with EBUSY when a live writer holds it.
 */
int mtc_tmp_claim(const char *dir, const char *label, struct mtc_tmp *t);
/* A new temporary file beside path (in its directory, labelled by its last component). */
int mtc_tmp_beside(const char *path, struct mtc_tmp *t);
/*
 * A new private temporary directory under $TMPDIR (else /tmp); the first
 * call of a process removes what dead writers left there, so a run killed
 * with one is swept by the next.
 */
int mtc_tmp_private_dir(const char *label, struct mtc_tmp *t);
/* Drops the lock and frees t: call it after the temporary was renamed away. */
void mtc_tmp_release(struct mtc_tmp *t);
/* Removes the temporary, then releases it; keeps errno. */
void mtc_tmp_discard(struct mtc_tmp *t);

/* 1 when name (a last component) is a temporary's. */
int mtc_tmp_is_name(const char *name);

/* A dead writer's temporary found by a sweep; bytes: a file's size, a directory's contents'. */
typedef void mtc_tmp_found(const char *path, long long bytes, void *arg);

/*
 * Every dead writer's temporary under dir, down to depth levels (1: dir's
 * own entries), never inside one: each passed to found (if set), removed when
 * remove. Temporaries of live writers are left alone. The count found, or -1
 * with errno when dir cannot be read (a missing dir holds none).
 */
long mtc_tmp_sweep(const char *dir, int depth, int remove, mtc_tmp_found *found, void *arg);

#endif
