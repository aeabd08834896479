#ifndef MTC_CONFIG_H
#define MTC_CONFIG_H

#include <stddef.h>

#include <jansson.h>

/*
 * The replicator config (mtc(7) §3.1). Read from replicator.yaml by
 * mtc-handshake, handed to the other programs as JSON (--config FILE|-).
 * Optional integers are -1 when absent.
 */
enum mtc_framework { MTC_FW_ORBAX, MTC_FW_PYTORCH_DISTRIBUTED, MTC_FW_PYTORCH };

struct mtc_config {
	char *job_name;
	enum mtc_framework framework;
	int node_rank;
	int nodes;
	int *peer_ranks; /* NULL when not given */
	int n_peer_ranks;
	int peers_per_node;
	int peers_per_node_ignored;	   /* a peers-per-node that disagreed with peer-ranks, else -1 */
	int data_parallelism;		   /* assume-data-parallelism, -1 when absent */
	long long backup_interval_minutes; /* -1 when absent */
	long long backup_interval_steps;   /* -1 when absent */
	int workers_per_node;
};

#define MTC_CONFIG_MAX_BYTES (64 * 1024)

const char *mtc_framework_name(enum mtc_framework fw);

/* Parses replicator.yaml text. On error returns -1 with a one-line reason in err. */
int mtc_config_parse_yaml(const char *text, size_t len, struct mtc_config *cfg, char *err,
			  size_t errlen);
/* Validates a JSON object of the same keys (the accepted config). */
int mtc_config_from_json(json_t *obj, struct mtc_config *cfg, char *err, size_t errlen);
/* Loads the accepted config from a JSON file, or stdin for "-". */
int mtc_config_load(const char *path, struct mtc_config *cfg, char *err, size_t errlen);
/* The accepted config as JSON, defaults filled in. */
json_t *mtc_config_to_json(const struct mtc_config *cfg);
/*
 * D, the number of identical data-parallel replicas, when usable: more than
 * one and dividing the nodes into rows (mtc(7) §3.7, §5.3). Otherwise 1, and
 * the deduplication that D allows stays off, as in the reference.
 */
int mtc_config_replicas(const struct mtc_config *cfg);
void mtc_config_free(struct mtc_config *cfg);

/* Parses a non-negative decimal integer that fits in a long long; -1 if it is not one. */
int mtc_parse_uint(const char *s, long long *out);

#endif
