// SPDX-License-Identifier: GPL-2.0
/*
 * pprof_builder.c - assemble a perftools.profiles.Profile with protobuf-c.
 *
 * Everything is kept as protobuf-c message structs from the start, so
 * encoding is one protobuf_c_message_pack() call; the only extra state is
 * the string and function dedup tables (open addressing on a hash).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"
#include "pprof_builder.h"
#include "grow.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;

struct pprof_builder {
	Profile p;
	ValueType period_type;
	size_t cap_strings, cap_samples, cap_mappings, cap_locations,
	       cap_functions, cap_types, cap_comments;
	/* string -> index + 1 */
	uint32_t *str_index;
	size_t str_index_size;
	/* (name, system_name, file) -> function index + 1 */
	uint32_t *fn_index;
	size_t fn_index_size;
};

static uint64_t hash_bytes(const char *s, uint64_t h)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}


/* ------------------------------------------------------------ strings */

static int str_rehash(struct pprof_builder *b, size_t size)
{
	uint32_t *t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < b->p.n_string_table; i++) {
		size_t s = hash_bytes(b->p.string_table[i], 1469598103934665603ULL) & (size - 1);

		while (t[s])
			s = (s + 1) & (size - 1);
		t[s] = i + 1;
	}
	free(b->str_index);
	b->str_index = t;
	b->str_index_size = size;
	return 0;
}

/* str - index of @s in string_table, added if new; -1 on ENOMEM. */
static int64_t str(struct pprof_builder *b, const char *s)
{
	size_t slot;
	char *copy;

	if (!s)
		s = "";
	if (2 * (b->p.n_string_table + 1) > b->str_index_size &&
	    str_rehash(b, b->str_index_size ? 2 * b->str_index_size : 1024))
		return -1;
	slot = hash_bytes(s, 1469598103934665603ULL) & (b->str_index_size - 1);
	for (; b->str_index[slot]; slot = (slot + 1) & (b->str_index_size - 1))
		if (!strcmp(b->p.string_table[b->str_index[slot] - 1], s))
			return b->str_index[slot] - 1;
	if (grow((void **)&b->p.string_table, &b->cap_strings, b->p.n_string_table + 1,
		 sizeof(char *)))
		return -1;
	copy = strdup(s);
	if (!copy)
		return -1;
	b->p.string_table[b->p.n_string_table] = copy;
	b->str_index[slot] = ++b->p.n_string_table;
	return b->p.n_string_table - 1;
}

struct pprof_builder *pprof_builder__new(void)
{
	struct pprof_builder *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	perftools__profiles__profile__init(&b->p);
	perftools__profiles__value_type__init(&b->period_type);
	/* string_table[0] must be "". */
	if (str(b, "") != 0) {
		pprof_builder__free(b);
		return NULL;
	}
	return b;
}

void pprof_builder__free(struct pprof_builder *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->p.n_string_table; i++)
		free(b->p.string_table[i]);
	free(b->p.string_table);
	for (size_t i = 0; i < b->p.n_sample; i++) {
		Sample *s = b->p.sample[i];

		for (size_t j = 0; j < s->n_label; j++)
			free(s->label[j]);
		free(s->label);
		free(s->location_id);
		free(s->value);
		free(s);
	}
	free(b->p.sample);
	for (size_t i = 0; i < b->p.n_mapping; i++)
		free(b->p.mapping[i]);
	free(b->p.mapping);
	for (size_t i = 0; i < b->p.n_location; i++) {
		Location *l = b->p.location[i];

		for (size_t j = 0; j < l->n_line; j++)
			free(l->line[j]);
		free(l->line);
		free(l);
	}
	free(b->p.location);
	for (size_t i = 0; i < b->p.n_function; i++)
		free(b->p.function[i]);
	free(b->p.function);
	for (size_t i = 0; i < b->p.n_sample_type; i++)
		free(b->p.sample_type[i]);
	free(b->p.sample_type);
	free(b->p.comment);
	free(b->str_index);
	free(b->fn_index);
	free(b);
}

int pprof_builder__sample_type(struct pprof_builder *b, const char *type, const char *unit)
{
	ValueType *vt;

	if (grow((void **)&b->p.sample_type, &b->cap_types, b->p.n_sample_type + 1,
		 sizeof(ValueType *)))
		return -ENOMEM;
	vt = malloc(sizeof(*vt));
	if (!vt)
		return -ENOMEM;
	perftools__profiles__value_type__init(vt);
	vt->type = str(b, type);
	vt->unit = str(b, unit);
	if (vt->type < 0 || vt->unit < 0) {
		free(vt);
		return -ENOMEM;
	}
	b->p.sample_type[b->p.n_sample_type++] = vt;
	return 0;
}

int pprof_builder__period(struct pprof_builder *b, const char *type, const char *unit,
			  int64_t period)
{
	b->period_type.type = str(b, type);
	b->period_type.unit = str(b, unit);
	if (b->period_type.type < 0 || b->period_type.unit < 0)
		return -ENOMEM;
	b->p.period_type = &b->period_type;
	b->p.period = period;
	return 0;
}

int pprof_builder__default_sample_type(struct pprof_builder *b, const char *type)
{
	int64_t i = str(b, type);

	if (i < 0)
		return -ENOMEM;
	b->p.default_sample_type = i;
	return 0;
}

void pprof_builder__time(struct pprof_builder *b, int64_t time_nanos, int64_t duration_nanos)
{
	b->p.time_nanos = time_nanos;
	b->p.duration_nanos = duration_nanos;
}

int pprof_builder__comment(struct pprof_builder *b, const char *text)
{
	int64_t i = str(b, text);

	if (i < 0 || grow((void **)&b->p.comment, &b->cap_comments, b->p.n_comment + 1,
			  sizeof(int64_t)))
		return -ENOMEM;
	b->p.comment[b->p.n_comment++] = i;
	return 0;
}

uint64_t pprof_builder__mapping(struct pprof_builder *b, uint64_t start, uint64_t limit,
				uint64_t offset, const char *file, const char *build_id,
				bool has_functions)
{
	Mapping *m;

	if (grow((void **)&b->p.mapping, &b->cap_mappings, b->p.n_mapping + 1,
		 sizeof(Mapping *)))
		return 0;
	m = malloc(sizeof(*m));
	if (!m)
		return 0;
	perftools__profiles__mapping__init(m);
	m->id = b->p.n_mapping + 1;
	m->memory_start = start;
	m->memory_limit = limit;
	m->file_offset = offset;
	m->filename = str(b, file);
	m->build_id = str(b, build_id);
	m->has_functions = has_functions;
	if (m->filename < 0 || m->build_id < 0) {
		free(m);
		return 0;
	}
	b->p.mapping[b->p.n_mapping++] = m;
	return m->id;
}

void pprof_builder__mapping_flags(struct pprof_builder *b, uint64_t mapping_id,
				  bool has_functions, bool has_filenames,
				  bool has_line_numbers, bool has_inline_frames)
{
	Mapping *m;

	if (!mapping_id || mapping_id > b->p.n_mapping)
		return;
	m = b->p.mapping[mapping_id - 1];
	m->has_functions = has_functions;
	m->has_filenames = has_filenames;
	m->has_line_numbers = has_line_numbers;
	m->has_inline_frames = has_inline_frames;
}

int pprof_builder__drop_frames(struct pprof_builder *b, const char *regexp)
{
	int64_t i = str(b, regexp);

	if (i < 0)
		return -ENOMEM;
	b->p.drop_frames = i;
	return 0;
}

static uint64_t fn_hash(const Function *f)
{
	return ((uint64_t)f->name * 0x9E3779B97F4A7C15ULL) ^
	       ((uint64_t)f->system_name * 0xC2B2AE3D27D4EB4FULL) ^ (uint64_t)f->filename;
}

static int fn_rehash(struct pprof_builder *b, size_t size)
{
	uint32_t *t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < b->p.n_function; i++) {
		size_t s = fn_hash(b->p.function[i]) & (size - 1);

		while (t[s])
			s = (s + 1) & (size - 1);
		t[s] = i + 1;
	}
	free(b->fn_index);
	b->fn_index = t;
	b->fn_index_size = size;
	return 0;
}

uint64_t pprof_builder__function(struct pprof_builder *b, const char *name,
				 const char *system_name, const char *file)
{
	return pprof_builder__function_at(b, name, system_name, file, 0);
}

uint64_t pprof_builder__function_at(struct pprof_builder *b, const char *name,
				    const char *system_name, const char *file,
				    int64_t start_line)
{
	Function key, *f;
	size_t slot;

	perftools__profiles__function__init(&key);
	key.name = str(b, name);
	key.system_name = str(b, system_name ? system_name : name);
	key.filename = str(b, file ? file : "");
	key.start_line = start_line;
	if (key.name < 0 || key.system_name < 0 || key.filename < 0)
		return 0;
	if (2 * (b->p.n_function + 1) > b->fn_index_size &&
	    fn_rehash(b, b->fn_index_size ? 2 * b->fn_index_size : 1024))
		return 0;
	slot = fn_hash(&key) & (b->fn_index_size - 1);
	for (; b->fn_index[slot]; slot = (slot + 1) & (b->fn_index_size - 1)) {
		f = b->p.function[b->fn_index[slot] - 1];
		if (f->name == key.name && f->system_name == key.system_name &&
		    f->filename == key.filename && f->start_line == key.start_line)
			return f->id;
	}
	if (grow((void **)&b->p.function, &b->cap_functions, b->p.n_function + 1,
		 sizeof(Function *)))
		return 0;
	f = malloc(sizeof(*f));
	if (!f)
		return 0;
	*f = key;
	f->id = b->p.n_function + 1;
	b->p.function[b->p.n_function++] = f;
	b->fn_index[slot] = f->id;
	return f->id;
}

uint64_t pprof_builder__location(struct pprof_builder *b, uint64_t mapping_id,
				 uint64_t address, uint64_t function_id)
{
	struct pprof_line line = { .function_id = function_id };

	return pprof_builder__location_lines(b, mapping_id, address, &line, function_id ? 1 : 0);
}

uint64_t pprof_builder__location_lines(struct pprof_builder *b, uint64_t mapping_id,
				       uint64_t address, const struct pprof_line *lines,
				       size_t nr)
{
	Location *l;

	if (grow((void **)&b->p.location, &b->cap_locations, b->p.n_location + 1,
		 sizeof(Location *)))
		return 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		return 0;
	perftools__profiles__location__init(l);
	l->id = b->p.n_location + 1;
	l->mapping_id = mapping_id;
	l->address = address;
	if (nr) {
		l->line = calloc(nr, sizeof(Line *));
		if (!l->line) {
			free(l);
			return 0;
		}
		for (size_t i = 0; i < nr; i++) {
			Line *line = malloc(sizeof(*line));

			if (!line) {
				for (size_t j = 0; j < i; j++)
					free(l->line[j]);
				free(l->line);
				free(l);
				return 0;
			}
			perftools__profiles__line__init(line);
			line->function_id = lines[i].function_id;
			line->line = lines[i].line;
			l->line[i] = line;
		}
		l->n_line = nr;
	}
	b->p.location[b->p.n_location++] = l;
	return l->id;
}

int pprof_builder__sample(struct pprof_builder *b, const uint64_t *locs, size_t nr_locs,
			  const int64_t *values, const struct pprof_label *labels,
			  size_t nr_labels)
{
	size_t nv = b->p.n_sample_type;
	Sample *s;

	if (grow((void **)&b->p.sample, &b->cap_samples, b->p.n_sample + 1, sizeof(Sample *)))
		return -ENOMEM;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	perftools__profiles__sample__init(s);
	s->location_id = malloc((nr_locs ? nr_locs : 1) * sizeof(uint64_t));
	s->value = malloc((nv ? nv : 1) * sizeof(int64_t));
	s->label = calloc(nr_labels ? nr_labels : 1, sizeof(Label *));
	if (!s->location_id || !s->value || !s->label)
		goto err;
	memcpy(s->location_id, locs, nr_locs * sizeof(uint64_t));
	s->n_location_id = nr_locs;
	memcpy(s->value, values, nv * sizeof(int64_t));
	s->n_value = nv;
	for (size_t i = 0; i < nr_labels; i++) {
		Label *l = malloc(sizeof(*l));

		if (!l)
			goto err;
		perftools__profiles__label__init(l);
		s->label[s->n_label++] = l;
		l->key = str(b, labels[i].key);
		if (labels[i].str) {
			l->str = str(b, labels[i].str);
		} else {
			l->num = labels[i].num;
			if (labels[i].num_unit)
				l->num_unit = str(b, labels[i].num_unit);
		}
		if (l->key < 0 || l->str < 0 || l->num_unit < 0)
			goto err;
	}
	b->p.sample[b->p.n_sample++] = s;
	return 0;
err:
	for (size_t j = 0; j < s->n_label; j++)
		free(s->label[j]);
	free(s->label);
	free(s->location_id);
	free(s->value);
	free(s);
	return -ENOMEM;
}

size_t pprof_builder__nr_samples(const struct pprof_builder *b)
{
	return b->p.n_sample;
}

int pprof_builder__encode(struct pprof_builder *b, uint8_t **out, size_t *len)
{
	size_t n = perftools__profiles__profile__get_packed_size(&b->p);
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		return -ENOMEM;
	*len = perftools__profiles__profile__pack(&b->p, buf);
	*out = buf;
	return 0;
}

int pprof_builder__encode_gz(struct pprof_builder *b, uint8_t **out, size_t *len)
{
	uint8_t *raw;
	size_t raw_len;
	int err = pprof_builder__encode(b, &raw, &raw_len);

	if (err)
		return err;
	err = pprof_gzip(raw, raw_len, out, len);
	free(raw);
	return err;
}
