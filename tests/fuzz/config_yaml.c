/* libFuzzer target: replicator.yaml text into the config parser. */
#include <stddef.h>
#include <stdint.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mtc_config cfg;
	char err[512];

	if (mtc_config_parse_yaml((const char *)data, size, &cfg, err, sizeof err) == 0) {
		json_t *j = mtc_config_to_json(&cfg);
		json_decref(j);
		mtc_config_free(&cfg);
	}
	return 0;
}
