#include <stdlib.h>

#include "naming.h"
#include "tap.h"

static void valid_ckpt(const char *name, const char *job, long long step, int rank, int worker,
		       enum mtc_ext ext)
{
	struct mtc_ckpt_name n;
	int rc = mtc_parse_ckpt_name(name, &n);
	ok(rc == 0 && !strcmp(n.job, job) && n.step == step && n.rank == rank && n.worker == worker &&
		   n.ext == ext,
	   "valid checkpoint name '%s'", name);
	if (rc == 0) {
		char *back = mtc_ckpt_name(n.job, n.step, n.rank, n.worker, n.ext);
		is_str(back, name, "'%s' formats back to itself", name);
		free(back);
	}
}

static void invalid_ckpt(const char *name)
{
	struct mtc_ckpt_name n;
	ok(mtc_parse_ckpt_name(name, &n) != 0, "invalid checkpoint name '%s'", name);
}

static void backup(const char *name, int valid)
{
	ok((mtc_parse_backup_name(name, NULL) == 0) == valid, "%s backup name '%s'",
	   valid ? "valid" : "invalid", name);
}

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

int main(void)
{
	valid_ckpt("job-s5-n0-w0.meta", "job", 5, 0, 0, MTC_EXT_META);
	valid_ckpt("job-s5-n0-w0.save", "job", 5, 0, 0, MTC_EXT_SAVE);
	valid_ckpt("job-s5-n0-w0.restore", "job", 5, 0, 0, MTC_EXT_RESTORE);
	valid_ckpt("job-s5-n0-w0.tmp", "job", 5, 0, 0, MTC_EXT_TMP);
	valid_ckpt("my-job-s1-n2-w3-s100-n7-w1.meta", "my-job-s1-n2-w3", 100, 7, 1, MTC_EXT_META);
	valid_ckpt("a-s1-n2--s0-n0-w0.meta", "a-s1-n2-", 0, 0, 0, MTC_EXT_META);
	valid_ckpt("j.x-s9223372036854775807-n2147483647-w0.meta", "j.x", 9223372036854775807LL,
		   2147483647, 0, MTC_EXT_META);
	valid_ckpt("llama3-70b-s12000-n511-w7.save", "llama3-70b", 12000, 511, 7, MTC_EXT_SAVE);

	invalid_ckpt("job-s5-n0.meta");
	/* job names: UTF-8 text, never the programs' own dot names */
	valid_ckpt("caf\xc3\xa9-s1-n0-w0.meta", "caf\xc3\xa9", 1, 0, 0, MTC_EXT_META);
	invalid_ckpt(".mtc-upload-x-s1-n0-w0.meta");
	invalid_ckpt(".job-s1-n0-w0.meta");
	invalid_ckpt("j\xff-s1-n0-w0.meta");
	invalid_ckpt("j\xc3-s1-n0-w0.meta");
	invalid_ckpt("j\xc0\xaf-s1-n0-w0.meta");
	invalid_ckpt("j\xed\xa0\x80-s1-n0-w0.meta");
	invalid_ckpt("job-s5-n0-w0");
	invalid_ckpt("job-s5-n0-w0.data");
	invalid_ckpt("job-s5-n0-w0.meta.tmp");
	invalid_ckpt("-s5-n0-w0.meta");
	invalid_ckpt("s5-n0-w0.meta");
	invalid_ckpt("job-s05-n0-w0.meta");
	invalid_ckpt("job-s5-n00-w0.meta");
	invalid_ckpt("job-s-n0-w0.meta");
	invalid_ckpt("job-s5-n0-w.meta");
	invalid_ckpt("job-s5-n-1-w0.meta");
	invalid_ckpt("job-s+5-n0-w0.meta");
	invalid_ckpt("job-s9223372036854775808-n0-w0.meta");
	invalid_ckpt("job-s1-n2147483648-w0.meta");
	invalid_ckpt("job_s5_n0_w0.meta");
	invalid_ckpt("a/b-s5-n0-w0.meta");
	invalid_ckpt("..-s5-n0-w0.meta");
	invalid_ckpt("j b-s5-n0-w0.meta");
	invalid_ckpt("");

	char h[MTC_HASH_MAX + 1];
	ok(mtc_parse_data_name(H64 ".data", h) == 0 && !strcmp(h, H64), "file hash .data");
	ok(mtc_parse_data_name("D" H64 ".data", h) == 0 && !strcmp(h, "D" H64), "dir hash .data");
	ok(mtc_is_dir_hash("D" H64) && !mtc_is_dir_hash(H64), "D marks a directory digest");
	ok(mtc_parse_data_name(H64, h) != 0, "hash without .data");
	ok(mtc_parse_data_name("d" H64 ".data", h) != 0, "lowercase d is not a dir hash");
	ok(mtc_parse_data_name("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef.data",
			       h) != 0,
	   "uppercase hex is not a hash");
	ok(mtc_parse_data_name("0123.data", h) != 0, "short hash");
	ok(mtc_parse_data_name(H64 "0.data", h) != 0, "long hash");
	ok(mtc_parse_data_name(H64 ".data.tmp", h) != 0, "trailing text");
	ok(mtc_is_hash(H64) && !mtc_is_hash(H64 "a") && !mtc_is_hash("") && !mtc_is_hash("D"),
	   "bare hashes");

	backup("2025-06-30_14-30", 1);
	backup("2024-02-29_00-00", 1);
	backup("1999-12-31_23-59", 1);
	backup("2025-02-29_00-00", 0);
	backup("2025-13-01_00-00", 0);
	backup("2025-06-31_00-00", 0);
	backup("2025-06-30_24-00", 0);
	backup("2025-06-30_14-60", 0);
	backup("2025-06-30 14-30", 0);
	backup("2025-06-30_14-30.tmp", 0);
	backup("2025-6-30_14-30", 0);
	backup("restore.version", 0);

	time_t t;
	char name[17];
	mtc_parse_backup_name("2025-06-30_14-30", &t);
	is_int(t, 1751293800, "backup names are UTC");
	mtc_backup_name(t, name);
	is_str(name, "2025-06-30_14-30", "backup name formats back");

	long long step;
	ok(mtc_parse_step_dir("100", &step) == 0 && step == 100, "step dir 100");
	ok(mtc_parse_step_dir("0", &step) == 0 && step == 0, "step dir 0");
	ok(mtc_parse_step_dir("0100", &step) != 0, "step dir with leading zero");
	ok(mtc_parse_step_dir("100.orbax-checkpoint-tmp", &step) != 0, "orbax tmp dir");
	ok(mtc_parse_step_dir("step=100", &step) != 0, "nemo dir before its rename");
	ok(mtc_parse_step_dir("", &step) != 0, "empty name");
	return done();
}
