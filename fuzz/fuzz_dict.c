// SPDX-License-Identifier: Apache-2.0
/*
 * Event dictionary parser (docs/events.md): hmb_dict_parse() on the input;
 * a dictionary that parses is then used the way the analyzer uses it --
 * every event looked up by opcode and by name, its phase events, and each
 * event's fields read from and formatted out of a payload of every length
 * up to 64 bytes past its last field (shorter payloads included).
 */
#include <hmbtrace.h>
#include <hmbtrace_dict.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t payload[HMB_RECORD_MAX_PAYLOAD];
	struct hmb_dict *d = NULL;
	struct hmb_error err;
	char line[1024];

	if (hmb_dict_parse(&d, (const char *)data, size, "fuzz.dict", &err)) {
		FZ_ASSERT(err.code == HMB_E_DICT || err.code == HMB_E_NOMEM);
		return 0;
	}
	for (size_t i = 0; i < hmb_dict_count(d); i++) {
		const struct hmb_dict_event *ev = hmb_dict_event_at(d, i);

		FZ_ASSERT(ev);
		FZ_ASSERT(hmb_dict_lookup(d, ev->opcode));
		FZ_ASSERT(hmb_dict_by_name(d, ev->name));
		for (size_t len = 0; len <= 96; len += 5) {
			memset(payload, 0xa5, sizeof(payload));
			hmb_dict_format(ev, payload, len, line, sizeof(line));
			for (unsigned int f = 0; f < ev->nfields; f++) {
				uint64_t v;

				if (hmb_dict_get(&ev->fields[f], payload, len, &v) == 0)
					hmb_dict_set(&ev->fields[f], payload,
						     len, v + 1);
			}
		}
	}
	for (int p = 0; p < HMB_PHASE_COUNT; p++)
		hmb_dict_phase_event(d, (enum hmb_phase)p);
	hmb_dict_free(d);
	return 0;
}
