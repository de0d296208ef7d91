// SPDX-License-Identifier: GPL-2.0
/*
 * top.c - `kpprof top FILE`: the flat/cum table `go tool pprof -top` prints,
 * for one sample type of a pprof file, with no Go toolchain.  Frames are
 * named by function (the innermost line of a location); an unsymbolized
 * frame shows its address and object.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "profile.pb-c.h"
#include "pprof_builder.h"
#include "session.h"
#include "verbs.h"

typedef Perftools__Profiles__Profile Profile;

struct row {
	char *name;
	int64_t flat, cum;
	size_t last_sample;	/* to count cum once per sample */
};

static void top_usage(FILE *f)
{
	fprintf(f,
		"Usage: kpprof top [-n N] [-i SAMPLE_TYPE] FILE\n"
		"Prints the N (default 20) functions with the most flat value of\n"
		"SAMPLE_TYPE (default: the profile's default, else its last type).\n");
}

static const char *s_at(const Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "";
}

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "re");
	struct stat st;
	int err = 0;

	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		return -EINVAL;
	}
	*buf = malloc(st.st_size ? st.st_size : 1);
	if (!*buf) {
		fclose(f);
		return -ENOMEM;
	}
	*len = fread(*buf, 1, st.st_size, f);
	if (*len != (size_t)st.st_size)
		err = -EIO;
	fclose(f);
	if (err)
		free(*buf);
	return err;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Name of location @id: its innermost function, or address + object. */
static char *loc_name(const Profile *p, uint64_t id)
{
	char buf[512];
	const Perftools__Profiles__Location *l = NULL;

	if (id && id <= p->n_location && p->location[id - 1]->id == id)
		l = p->location[id - 1];
	for (size_t i = 0; !l && i < p->n_location; i++)
		if (p->location[i]->id == id)
			l = p->location[i];
	if (!l)
		return strdup("?");
	if (l->n_line) {
		uint64_t fid = l->line[0]->function_id;

		if (fid && fid <= p->n_function && p->function[fid - 1]->id == fid)
			return strdup(s_at(p, p->function[fid - 1]->name));
		for (size_t i = 0; i < p->n_function; i++)
			if (p->function[i]->id == fid)
				return strdup(s_at(p, p->function[i]->name));
	}
	const char *obj = "";

	for (size_t i = 0; i < p->n_mapping; i++)
		if (p->mapping[i]->id == l->mapping_id) {
			obj = s_at(p, p->mapping[i]->filename);
			if (strrchr(obj, '/'))
				obj = strrchr(obj, '/') + 1;
		}
	snprintf(buf, sizeof(buf), "%#llx%s%s", (unsigned long long)l->address,
		 *obj ? " " : "", obj);
	return strdup(buf);
}

static void print_value(int64_t v, const char *unit)
{
	if (!strcmp(unit, "bytes")) {
		double d = v;
		const char *u = "B";

		if (llabs(v) >= 1 << 30) { d /= 1 << 30; u = "GB"; }
		else if (llabs(v) >= 1 << 20) { d /= 1 << 20; u = "MB"; }
		else if (llabs(v) >= 1 << 10) { d /= 1 << 10; u = "kB"; }
		printf("%9.2f%-2s", d, u);
	} else if (!strcmp(unit, "nanoseconds")) {
		printf("%9.3fms", v / 1e6);
	} else {
		printf("%11lld", (long long)v);
	}
}

int top_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "nodes", required_argument, NULL, 'n' },
		{ "sample-index", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *index_name = NULL, *unit;
	uint64_t nodes = 20;
	uint8_t *gz = NULL, *raw = NULL;
	size_t gz_len = 0, raw_len = 0, nrows = 0, vi;
	struct row *rows = NULL;
	int64_t total = 0, sum = 0;
	Profile *p;
	int opt, err;

	while ((opt = getopt_long(argc, argv, "n:i:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (kpp_parse_u64("top", "-n", optarg, &nodes))
				return 1;
			break;
		case 'i':
			index_name = optarg;
			break;
		case 'h':
			top_usage(stdout);
			return 0;
		default:
			top_usage(stderr);
			return 1;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "kpprof top: give exactly one profile file (kpprof top FILE)\n");
		return 1;
	}
	err = read_file(argv[optind], &gz, &gz_len);
	if (err) {
		fprintf(stderr, "kpprof top: cannot read %s: %s\n", argv[optind], strerror(-err));
		return 1;
	}
	err = pprof_gunzip(gz, gz_len, &raw, &raw_len);
	free(gz);
	if (err) {
		fprintf(stderr, "kpprof top: %s is not a gzip'd pprof profile\n", argv[optind]);
		return 1;
	}
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	free(raw);
	if (!p || !p->n_sample_type) {
		fprintf(stderr, "kpprof top: %s is not a pprof profile (protobuf does not decode)\n",
			argv[optind]);
		if (p)
			perftools__profiles__profile__free_unpacked(p, NULL);
		return 1;
	}
	/* As pprof: -i names a type; else the default type; else the last. */
	vi = p->n_sample_type - 1;
	if (!index_name && p->default_sample_type)
		index_name = s_at(p, p->default_sample_type);
	if (index_name) {
		size_t i;

		for (i = 0; i < p->n_sample_type; i++)
			if (!strcmp(s_at(p, p->sample_type[i]->type), index_name))
				break;
		if (i == p->n_sample_type) {
			fprintf(stderr, "kpprof top: %s has no sample type '%s'\n",
				argv[optind], index_name);
			perftools__profiles__profile__free_unpacked(p, NULL);
			return 1;
		}
		vi = i;
	}
	unit = s_at(p, p->sample_type[vi]->unit);

	/*
	 * One row per distinct name; locations are named once, and rows are
	 * found through a hash table, so large profiles stay fast.
	 */
	size_t *loc_row = calloc(p->n_location + 1, sizeof(*loc_row));
	size_t hsize = 1024;
	size_t *hash;

	while (hsize < 2 * (p->n_location + 1))
		hsize *= 2;
	hash = calloc(hsize, sizeof(*hash));
	rows = calloc(p->n_location + 1, sizeof(*rows));
	if (!loc_row || !hash || !rows) {
		fprintf(stderr, "kpprof top: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < p->n_location; i++) {
		char *name = loc_name(p, p->location[i]->id);
		uint64_t h = 1469598103934665603ULL;
		size_t slot;

		if (!name)
			return 1;
		for (const char *c = name; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
		for (slot = h & (hsize - 1); hash[slot]; slot = (slot + 1) & (hsize - 1))
			if (!strcmp(rows[hash[slot] - 1].name, name))
				break;
		if (!hash[slot]) {
			rows[nrows].name = name;
			rows[nrows].last_sample = SIZE_MAX;
			hash[slot] = ++nrows;
		} else {
			free(name);
		}
		loc_row[i] = hash[slot] - 1;
	}
	for (size_t si = 0; si < p->n_sample; si++) {
		const Perftools__Profiles__Sample *s = p->sample[si];
		int64_t v = vi < s->n_value ? s->value[vi] : 0;

		total += v;
		for (size_t k = 0; k < s->n_location_id; k++) {
			uint64_t id = s->location_id[k];
			size_t li = SIZE_MAX;
			struct row *r;

			if (id && id <= p->n_location && p->location[id - 1]->id == id)
				li = id - 1;
			for (size_t i = 0; li == SIZE_MAX && i < p->n_location; i++)
				if (p->location[i]->id == id)
					li = i;
			if (li == SIZE_MAX)
				continue;
			r = &rows[loc_row[li]];
			if (k == 0)
				r->flat += v;
			if (r->last_sample != si) {
				r->cum += v;
				r->last_sample = si;
			}
		}
	}
	free(loc_row);
	free(hash);
	qsort(rows, nrows, sizeof(*rows), cmp_row);
	printf("Type: %s\n", s_at(p, p->sample_type[vi]->type));
	printf("Total: ");
	print_value(total, unit);
	printf("\n%11s %6s %6s %11s %6s\n", "flat", "flat%", "sum%", "cum", "cum%");
	for (size_t j = 0; j < nrows && j < nodes; j++) {
		sum += rows[j].flat;
		print_value(rows[j].flat, unit);
		printf(" %5.2f%% %5.2f%% ", total ? 100.0 * rows[j].flat / total : 0,
		       total ? 100.0 * sum / total : 0);
		print_value(rows[j].cum, unit);
		printf(" %5.2f%%  %s\n", total ? 100.0 * rows[j].cum / total : 0, rows[j].name);
	}
	for (size_t j = 0; j < nrows; j++)
		free(rows[j].name);
	free(rows);
	perftools__profiles__profile__free_unpacked(p, NULL);
	return 0;
}
