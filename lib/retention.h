#ifndef MTC_RETENTION_H
#define MTC_RETENTION_H

#include <stddef.h>
#include <time.h>

/*
 * The retention policy of mtc(7) §8, pure: names and times in, decisions
 * with reasons out. It is backup-warden's (and rotate-backups') algorithm:
 *
 *   sort by (time, name); for each frequency with a count other than 0,
 *   bucket the backups by minute / hour / day / (ISO year, ISO week) /
 *   month / year, take the oldest of each bucket (the newest with
 *   prefer_recent); unless the count is "always": in strict mode drop the
 *   buckets whose chosen backup is older than newest - count units
 *   (calendar months and years, the day clipped to the month's length),
 *   then keep the last count buckets. A backup is kept when any frequency
 *   keeps it.
 *
 * The one deliberate difference from backup-warden: weeks are keyed by
 * (ISO year, ISO week), so a week that spans New Year is one bucket.
 *
 * Protections (the newest valid backup, restore.version, a backup in
 * progress) are set by the caller and keep a backup whatever the policy says.
 */

enum mtc_freq {
	MTC_MINUTELY,
	MTC_HOURLY,
	MTC_DAILY,
	MTC_WEEKLY,
	MTC_MONTHLY,
	MTC_YEARLY,
	MTC_FREQ_COUNT
};

#define MTC_KEEP_ALWAYS (-1LL)

struct mtc_retention_policy {
	long long count[MTC_FREQ_COUNT]; /* 0: frequency unused; MTC_KEEP_ALWAYS */
	int prefer_recent;
	int relaxed;
};

enum mtc_protect {
	MTC_PROTECT_NEWEST_VALID = 1 << 0,
	MTC_PROTECT_RESTORE_VERSION = 1 << 1,
	MTC_PROTECT_IN_PROGRESS = 1 << 2,
};

struct mtc_retention_item {
	const char *name; /* borrowed */
	time_t when;
	unsigned kept_by;  /* out: bit (1 << enum mtc_freq) per frequency that keeps it */
	unsigned protects; /* in: enum mtc_protect bits */
};

const char *mtc_freq_name(enum mtc_freq f);

/* backup-warden's defaults: hourly 72, daily 7, weekly 6, monthly 12, yearly always. */
void mtc_retention_defaults(struct mtc_retention_policy *p);

/* A count: decimal, a sum or product of decimals ("5+2", "24*7"), or "always". -1 if bad. */
int mtc_retention_parse_count(const char *s, long long *out);

/* 1 when every count is 0: such a policy would delete everything and is refused. */
int mtc_retention_keeps_nothing(const struct mtc_retention_policy *p);

/* Sorts items by (when, name) and sets kept_by. */
void mtc_retention_apply(const struct mtc_retention_policy *p, struct mtc_retention_item *items,
			 size_t n);

static inline int mtc_retention_kept(const struct mtc_retention_item *it)
{
	return it->kept_by || it->protects;
}

/* The reasons as text: "hourly, daily" or "newest valid, restore.version"; "" if none. */
void mtc_retention_reasons(const struct mtc_retention_item *it, char *buf, size_t len);

#endif
