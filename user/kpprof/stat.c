// SPDX-License-Identifier: GPL-2.0
/* stat.c - `kpprof stat`: the module's ring and drop statistics. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collector_stats.h"
#include "dev.h"
#include "rates.h"
#include "verbs.h"

int stat_main(int argc, char *argv[])
{
	struct kpprof_stats st;
	struct kpprof_info info;
	struct kpprof_config c;
	int fd, err;

	if (argc > 1) {
		if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
			printf("Usage: kpprof stat\nShows the ring, record and drop counters of the module.\n");
			return 0;
		}
		fprintf(stderr, "kpprof stat: unexpected argument '%s' (kpprof stat takes none)\n", argv[1]);
		return 1;
	}
	fd = kpprof_dev__open();
	if (fd < 0) {
		fprintf(stderr, "kpprof stat: %s: %s\n", KPPROF_DEVICE_PATH, kpprof_dev__explain(fd));
		return 1;
	}
	err = kpprof_dev__info(fd, &info);
	if (!err)
		err = kpprof_dev__stats(fd, &st);
	if (!err)
		err = kpprof_dev__get_config(fd, &c);
	close(fd);
	if (err) {
		fprintf(stderr, "kpprof stat: %s\n", kpprof_dev__explain(err));
		return 1;
	}
	printf("abi_version       %u\n", info.abi_version);
	printf("ring_size         %llu bytes\n", (unsigned long long)info.ring_size);
	printf("max_record_size   %u bytes\n", info.max_record_size);
	printf("consumer          %s\n", st.consumer_attached ? "attached" : "none");
	printf("cycle             %llu\n", (unsigned long long)st.cycle);
	printf("accepted          %llu records, %llu bytes\n", (unsigned long long)st.accepted,
	       (unsigned long long)st.accepted_bytes);
	printf("dropped ring_full %llu\n", (unsigned long long)st.dropped[KPPROF_DROP_RING_FULL]);
	printf("dropped disabled  %llu\n", (unsigned long long)st.dropped[KPPROF_DROP_DISABLED]);
	printf("dropped share     %llu (a uid over its %llu bytes)\n",
	       (unsigned long long)st.dropped[KPPROF_DROP_SHARE],
	       (unsigned long long)info.producer_share);
	printf("dropped nomem     %llu (no kernel memory to copy a record in)\n",
	       (unsigned long long)st.dropped[KPPROF_DROP_NOMEM]);
	printf("rejected          %llu\n", (unsigned long long)st.rejected);
	printf("unread            %llu bytes (prod_pos %llu, cons_pos %llu)\n",
	       (unsigned long long)(st.prod_pos - st.cons_pos), (unsigned long long)st.prod_pos,
	       (unsigned long long)st.cons_pos);
	printf("wakeups           %llu\n", (unsigned long long)st.wakeups);
	printf("producer rings    %u of %llu bytes (at most %llu bytes in all)\n", st.pring_count,
	       (unsigned long long)info.pring_size, (unsigned long long)info.pring_total_max);
	printf("ring drained      %llu records\n", (unsigned long long)st.pring_drained);
	printf("ring lost full    %llu (producers' own rings full)\n",
	       (unsigned long long)st.pring_lost);
	printf("ring invalid      %llu (malformed records, ring resets, loss claims cut)\n",
	       (unsigned long long)st.pring_invalid);
	printf("ring refused      %llu (pring_total_max reached: SUBMIT instead)\n",
	       (unsigned long long)st.pring_refused);
	/* An older module has no doorbell: its 0 would read as "no kicks". */
	if (info.features & KPPROF_FEAT_DOORBELL)
		printf("ring doorbells    %llu (producers' kicks by page fault)\n",
		       (unsigned long long)st.pring_doorbells);
	else
		printf("ring doorbells    none (this module has no doorbell: producers do not kick)\n");
	kpp_config__print(stdout, &c);
	/* coll-state: the running collector's own counters (refusals by reason). */
	kpp_collector_stats__print(stdout);
	return 0;
}
