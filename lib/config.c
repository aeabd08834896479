#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "fsutil.h"
#include "naming.h"
#include "log.h"
#include "xalloc.h"

#define MAX_DEPTH 8
#define MAX_PEERS 4096

static const char *framework_names[] = { "orbax", "pytorch.distributed", "pytorch" };

const char *mtc_framework_name(enum mtc_framework fw) { return framework_names[fw]; }

/* $VAR and ${VAR} from the environment; unknown variables stay as written (Python's expandvars). */
static char *expand_env(const char *s)
{
	size_t cap = strlen(s) + 1, len = 0;
	char *out = xmalloc(cap);

#define PUT(p, n)                                      \
	do {                                           \
		while (len + (n) + 1 > cap)            \
			out = xrealloc(out, cap *= 2); \
		memcpy(out + len, (p), (n));           \
		len += (n);                            \
	} while (0)

	while (*s) {
		const char *name = NULL, *end = NULL;
		size_t n = 0;
		if (s[0] == '$' && s[1] == '{') {
			end = strchr(s + 2, '}');
			if (end) {
				name = s + 2;
				n = (size_t)(end - name);
				end++;
			}
		} else if (s[0] == '$' && (isalpha((unsigned char)s[1]) || s[1] == '_')) {
			name = s + 1;
			while (isalnum((unsigned char)name[n]) || name[n] == '_')
				n++;
			end = name + n;
		}
		if (name && n) {
			char *var = xmalloc(n + 1);
			memcpy(var, name, n);
			var[n] = '\0';
			const char *val = getenv(var);
			free(var);
			if (val) {
				PUT(val, strlen(val));
				s = end;
				continue;
			}
			PUT(s, (size_t)(end - s));
			s = end;
			continue;
		}
		PUT(s, 1);
		s++;
	}
	out[len] = '\0';
	return out;
#undef PUT
}

/* Python's int(): optional whitespace and sign, digits with single underscores between. */
static int python_int(const char *s, long long *out)
{
	char digits[32];
	size_t n = 0;
	int neg = 0;

	while (isspace((unsigned char)*s))
		s++;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s) || *s == '_'; s++) {
		if (*s == '_') {
			if (!isdigit((unsigned char)s[1]))
				return -1;
			continue;
		}
		if (n == sizeof digits - 1)
			return -1;
		digits[n++] = *s;
	}
	while (isspace((unsigned char)*s))
		s++;
	if (*s)
		return -1;
	digits[n] = '\0';
	errno = 0;
	long long v = strtoll(digits, NULL, 10);
	if (errno)
		return -1;
	*out = neg ? -v : v;
	return 0;
}

static json_t *scalar_value(const yaml_event_t *ev)
{
	const char *raw = (const char *)ev->data.scalar.value;
	int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	long long v;

	if (plain && (!*raw || !strcmp(raw, "~") || !strcmp(raw, "null") || !strcmp(raw, "Null") ||
		      !strcmp(raw, "NULL")))
		return json_null();
	char *expanded = expand_env(raw);
	json_t *j = python_int(expanded, &v) == 0 ? json_integer(v) : json_string(expanded);
	free(expanded);
	return j ? j : json_string("");
}

struct yaml_reader {
	yaml_parser_t parser;
	char *err;
	size_t errlen;
	json_t *raw; /* top-level key -> its value as written, when $VAR expansion changed it */
};

static int next_event(struct yaml_reader *r, yaml_event_t *ev)
{
	if (yaml_parser_parse(&r->parser, ev))
		return 0;
	return mtc_fail(r->err, r->errlen, "not valid YAML: %s at line %zu column %zu",
			r->parser.problem ? r->parser.problem : "syntax error",
			r->parser.problem_mark.line + 1, r->parser.problem_mark.column + 1);
}

static json_t *read_node(struct yaml_reader *r, yaml_event_t *ev, int depth);

static json_t *read_collection(struct yaml_reader *r, int mapping, int depth)
{
	json_t *coll = mapping ? json_object() : json_array();
	yaml_event_t ev;

	if (depth > MAX_DEPTH) {
		mtc_fail(r->err, r->errlen, "not a replicator config: nested deeper than %d levels",
			 MAX_DEPTH);
		goto bad;
	}
	for (;;) {
		if (next_event(r, &ev) < 0)
			goto bad;
		if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return coll;
		}
		if (!mapping) {
			json_t *item = read_node(r, &ev, depth + 1);
			if (!item)
				goto bad;
			json_array_append_new(coll, item);
			continue;
		}
		if (ev.type != YAML_SCALAR_EVENT) {
			yaml_event_delete(&ev);
			mtc_fail(r->err, r->errlen,
				 "not a replicator config: a key is not a plain value");
			goto bad;
		}
		char *key = xstrdup((const char *)ev.data.scalar.value);
		yaml_event_delete(&ev);
		if (json_object_get(coll, key)) {
			mtc_fail(r->err, r->errlen, "key '%s' appears twice", key);
			free(key);
			goto bad;
		}
		if (next_event(r, &ev) < 0) {
			free(key);
			goto bad;
		}
		if (depth == 0 && ev.type == YAML_SCALAR_EVENT &&
		    strchr((const char *)ev.data.scalar.value, '$'))
			json_object_set_new(r->raw, key,
					    json_string((const char *)ev.data.scalar.value));
		json_t *val = read_node(r, &ev, depth + 1);
		if (!val) {
			free(key);
			goto bad;
		}
		json_object_set_new(coll, key, val);
		free(key);
	}
bad:
	json_decref(coll);
	return NULL;
}

/* Consumes ev. Anchors and aliases are refused: a config never needs them, a YAML bomb does. */
static json_t *read_node(struct yaml_reader *r, yaml_event_t *ev, int depth)
{
	json_t *j = NULL;

	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor)
			goto anchor;
		j = scalar_value(ev);
		break;
	case YAML_SEQUENCE_START_EVENT:
		if (ev->data.sequence_start.anchor)
			goto anchor;
		j = read_collection(r, 0, depth);
		break;
	case YAML_MAPPING_START_EVENT:
		if (ev->data.mapping_start.anchor)
			goto anchor;
		j = read_collection(r, 1, depth);
		break;
	case YAML_ALIAS_EVENT:
anchor:
		mtc_fail(r->err, r->errlen,
			 "not a replicator config: YAML anchors and aliases are not allowed");
		break;
	default:
		mtc_fail(r->err, r->errlen, "not a replicator config: unexpected YAML structure");
		break;
	}
	yaml_event_delete(ev);
	return j;
}

static json_t *yaml_to_json(const char *text, size_t len, json_t *raw, char *err, size_t errlen)
{
	struct yaml_reader r = { .err = err, .errlen = errlen, .raw = raw };
	yaml_event_t ev;
	json_t *doc = NULL;
	int docs = 0;

	yaml_parser_initialize(&r.parser);
	yaml_parser_set_input_string(&r.parser, (const unsigned char *)text, len);
	for (;;) {
		if (next_event(&r, &ev) < 0)
			goto bad;
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_END_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		if (ev.type == YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&ev);
			if (++docs > 1) {
				mtc_fail(err, errlen,
					 "not a replicator config: more than one YAML document");
				goto bad;
			}
			continue;
		}
		json_decref(doc);
		doc = read_node(&r, &ev, 0);
		if (!doc)
			goto bad;
	}
	yaml_parser_delete(&r.parser);
	if (!doc || json_is_null(doc)) {
		json_decref(doc);
		mtc_fail(err, errlen, "file is empty");
		return NULL;
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		mtc_fail(err, errlen, "not a replicator config: the top level is not a YAML mapping");
		return NULL;
	}
	return doc;
bad:
	json_decref(doc);
	yaml_parser_delete(&r.parser);
	return NULL;
}

static int validate(json_t *obj, json_t *raw, struct mtc_config *cfg, char *err, size_t errlen);

int mtc_config_parse_yaml(const char *text, size_t len, struct mtc_config *cfg, char *err, size_t errlen)
{
	json_t *doc, *raw;
	int rc;

	if (len == 0)
		return mtc_fail(err, errlen, "file is empty");
	if (len > MTC_CONFIG_MAX_BYTES)
		return mtc_fail(err, errlen, "file is larger than %d bytes", MTC_CONFIG_MAX_BYTES);
	if (memchr(text, '\0', len))
		return mtc_fail(err, errlen, "not a replicator config: the file holds a NUL byte");
	raw = json_object();
	doc = yaml_to_json(text, len, raw, err, errlen);
	rc = doc ? validate(doc, raw, cfg, err, errlen) : -1;
	json_decref(doc);
	json_decref(raw);
	return rc;
}

/* An integer key: absent → *out untouched and 0; wrong type or below min → error. */
/*
 * What an error message shows of a value: the text as written when $VAR
 * expansion changed it, so that a message (which may reach the status files)
 * never carries what a variable held.
 */
static const char *shown(json_t *raw, const char *key, const char *value)
{
	const char *r = json_string_value(json_object_get(raw, key));
	return r ? r : value;
}

static int get_int(json_t *obj, json_t *raw, const char *key, long long min, long long max, int required,
		   long long *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		if (required)
			return mtc_fail(err, errlen, "missing required key '%s'", key);
		return 0;
	}
	if (!json_is_integer(v)) {
		if (json_is_string(v))
			return mtc_fail(err, errlen, "'%s' must be an integer, not '%s'", key,
					shown(raw, key, json_string_value(v)));
		return mtc_fail(err, errlen, "'%s' must be an integer", key);
	}
	long long x = json_integer_value(v);
	if (x < min || x > max) {
		char num[32];
		snprintf(num, sizeof num, "%lld", x);
		return mtc_fail(err, errlen, "'%s' must be at %s %lld, not %s", key,
				x < min ? "least" : "most", x < min ? min : max, shown(raw, key, num));
	}
	*out = x;
	return 0;
}

static int validate(json_t *obj, json_t *raw, struct mtc_config *cfg, char *err, size_t errlen)
{
	long long nodes = 0, rank = 0, ppn = -1, dp = -1, mins = -1, steps = -1, wpn = 1;
	json_t *v;

	memset(cfg, 0, sizeof *cfg);
	cfg->peers_per_node_ignored = -1;
	if (!json_is_object(obj))
		return mtc_fail(err, errlen, "not a replicator config: not a mapping");

	v = json_object_get(obj, "job-name");
	if (!v || json_is_null(v))
		return mtc_fail(err, errlen, "missing required key 'job-name'");
	char num[32];
	const char *job = json_is_string(v) ? json_string_value(v) : NULL;
	if (json_is_integer(v)) {
		snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
		job = num;
	}
	if (!job)
		return mtc_fail(err, errlen, "'job-name' must be a string");
	if (!mtc_valid_job_name(job))
		return mtc_fail(err, errlen, "'job-name' '%s' cannot be used in file names",
				shown(raw, "job-name", job));

	v = json_object_get(obj, "framework");
	if (!v || json_is_null(v))
		return mtc_fail(err, errlen, "missing required key 'framework'");
	const char *fw = json_is_string(v) ? json_string_value(v) : "";
	int fwi;
	for (fwi = 0; fwi < 3; fwi++)
		if (!strcmp(fw, framework_names[fwi]))
			break;
	if (fwi == 3)
		return mtc_fail(err, errlen,
				"'framework' must be orbax, pytorch.distributed or pytorch, not '%s'",
				shown(raw, "framework", fw));

	if (get_int(obj, raw, "nodes", 1, 1 << 20, 1, &nodes, err, errlen) ||
	    get_int(obj, raw, "node-rank", 0, INT_MAX, 1, &rank, err, errlen) ||
	    get_int(obj, raw, "peers-per-node", 0, INT_MAX, 0, &ppn, err, errlen) ||
	    get_int(obj, raw, "assume-data-parallelism", 1, INT_MAX, 0, &dp, err, errlen) ||
	    get_int(obj, raw, "backup-interval-minutes", 0, LLONG_MAX / 60, 0, &mins, err, errlen) ||
	    get_int(obj, raw, "backup-interval-steps", 0, LLONG_MAX, 0, &steps, err, errlen) ||
	    get_int(obj, raw, "workers-per-node", 1, 1 << 16, 0, &wpn, err, errlen))
		return -1;
	if (rank >= nodes)
		return mtc_fail(err, errlen, "'node-rank' %lld is out of range for %lld nodes", rank,
				nodes);
	if (mins < 0 && steps < 0)
		return mtc_fail(
			err, errlen,
			"missing required key 'backup-interval-minutes' (or 'backup-interval-steps')");

	v = json_object_get(obj, "peer-ranks");
	if (v && !json_is_null(v)) {
		size_t i, n;
		if (!json_is_array(v))
			return mtc_fail(err, errlen, "'peer-ranks' must be a list like [1, 2]");
		n = json_array_size(v);
		if (n > MAX_PEERS)
			return mtc_fail(err, errlen, "'peer-ranks' has more than %d entries", MAX_PEERS);
		cfg->peer_ranks = xcalloc(n, sizeof *cfg->peer_ranks);
		cfg->n_peer_ranks = (int)n;
		for (i = 0; i < n; i++) {
			json_t *p = json_array_get(v, i);
			long long r;
			if (!json_is_integer(p)) {
				mtc_config_free(cfg);
				return mtc_fail(err, errlen, "'peer-ranks' entry %zu is not an integer",
						i + 1);
			}
			r = json_integer_value(p);
			if (r < 0 || r >= nodes) {
				mtc_config_free(cfg);
				return mtc_fail(err, errlen,
						"'peer-ranks' names rank %lld, out of range for %lld nodes",
						r, nodes);
			}
			if (r == rank) {
				mtc_config_free(cfg);
				return mtc_fail(err, errlen,
						"'peer-ranks' names this node's own rank %lld", r);
			}
			for (size_t k = 0; k < i; k++)
				if (cfg->peer_ranks[k] == r) {
					mtc_config_free(cfg);
					return mtc_fail(err, errlen,
							"'peer-ranks' names rank %lld twice", r);
				}
			cfg->peer_ranks[i] = (int)r;
		}
		cfg->peers_per_node_ignored = ppn >= 0 && ppn != (long long)n ? (int)ppn : -1;
		ppn = (long long)n;
	} else if (ppn < 0) {
		return mtc_fail(err, errlen, "missing required key 'peer-ranks' (or 'peers-per-node')");
	}
	if (ppn > nodes - 1) {
		mtc_config_free(cfg);
		return mtc_fail(err, errlen, "'peers-per-node' %lld is more than the %lld other nodes",
				ppn, nodes - 1);
	}

	cfg->job_name = xstrdup(job);
	cfg->framework = (enum mtc_framework)fwi;
	cfg->node_rank = (int)rank;
	cfg->nodes = (int)nodes;
	cfg->peers_per_node = (int)ppn;
	cfg->data_parallelism = (int)dp;
	cfg->backup_interval_minutes = mins;
	cfg->backup_interval_steps = steps;
	cfg->workers_per_node = (int)wpn;
	return 0;
}

int mtc_config_from_json(json_t *obj, struct mtc_config *cfg, char *err, size_t errlen)
{
	return validate(obj, NULL, cfg, err, errlen);
}

int mtc_config_load(const char *path, struct mtc_config *cfg, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *doc;
	int rc;

	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!f)
		return mtc_fail(err, errlen, "%s", strerror(errno));
	doc = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	if (f != stdin)
		fclose(f);
	if (!doc)
		return mtc_fail(err, errlen, "not a JSON config: %s at line %d", jerr.text, jerr.line);
	rc = mtc_config_from_json(doc, cfg, err, errlen);
	json_decref(doc);
	return rc;
}

json_t *mtc_config_to_json(const struct mtc_config *cfg)
{
	json_t *o = json_object();
	json_object_set_new(o, "job-name", json_string(cfg->job_name));
	json_object_set_new(o, "framework", json_string(framework_names[cfg->framework]));
	json_object_set_new(o, "node-rank", json_integer(cfg->node_rank));
	json_object_set_new(o, "nodes", json_integer(cfg->nodes));
	if (cfg->peer_ranks) {
		json_t *a = json_array();
		for (int i = 0; i < cfg->n_peer_ranks; i++)
			json_array_append_new(a, json_integer(cfg->peer_ranks[i]));
		json_object_set_new(o, "peer-ranks", a);
	}
	json_object_set_new(o, "peers-per-node", json_integer(cfg->peers_per_node));
	if (cfg->data_parallelism > 0)
		json_object_set_new(o, "assume-data-parallelism", json_integer(cfg->data_parallelism));
	if (cfg->backup_interval_minutes >= 0)
		json_object_set_new(o, "backup-interval-minutes",
				    json_integer(cfg->backup_interval_minutes));
	if (cfg->backup_interval_steps >= 0)
		json_object_set_new(o, "backup-interval-steps",
				    json_integer(cfg->backup_interval_steps));
	json_object_set_new(o, "workers-per-node", json_integer(cfg->workers_per_node));
	return o;
}

int mtc_config_replicas(const struct mtc_config *cfg)
{
	int d = cfg->data_parallelism;
	return d > 1 && cfg->nodes % d == 0 ? d : 1;
}

void mtc_config_free(struct mtc_config *cfg)
{
	free(cfg->job_name);
	free(cfg->peer_ranks);
	cfg->job_name = NULL;
	cfg->peer_ranks = NULL;
}

int mtc_parse_uint(const char *s, long long *out)
{
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}
