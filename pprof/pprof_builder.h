/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pprof_builder.h - build a pprof Profile message (profile.proto) piece by
 * piece and serialize it, gzip'd as pprof files are on disk.
 *
 * Strings are interned (string_table[0] is ""), functions are deduplicated
 * by (name, system_name, filename); mappings and locations are added as
 * the caller decides (it knows which addresses belong to which process).
 * Ids start at 1; 0 means "none" everywhere, as in the format.
 */
#ifndef KPPROF_PPROF_BUILDER_H
#define KPPROF_PPROF_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pprof_builder;

/* One sample label: a string label if @str is set, else numeric. */
struct pprof_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;	/* NULL: none */
};

struct pprof_builder *pprof_builder__new(void);
void pprof_builder__free(struct pprof_builder *b);

/* All return 0 / an id, or -ENOMEM / 0 on allocation failure. */
int pprof_builder__sample_type(struct pprof_builder *b, const char *type, const char *unit);
int pprof_builder__period(struct pprof_builder *b, const char *type, const char *unit,
			  int64_t period);
int pprof_builder__default_sample_type(struct pprof_builder *b, const char *type);
void pprof_builder__time(struct pprof_builder *b, int64_t time_nanos, int64_t duration_nanos);
int pprof_builder__comment(struct pprof_builder *b, const char *text);
uint64_t pprof_builder__mapping(struct pprof_builder *b, uint64_t start, uint64_t limit,
				uint64_t offset, const char *file, const char *build_id,
				bool has_functions);
uint64_t pprof_builder__function(struct pprof_builder *b, const char *name,
				 const char *system_name, const char *file);
/* pprof_builder__mapping_flags - what symbolization found for every location of it. */
void pprof_builder__mapping_flags(struct pprof_builder *b, uint64_t mapping_id,
				  bool has_functions, bool has_filenames,
				  bool has_line_numbers, bool has_inline_frames);
/* A function with its source file and first line (Function.start_line). */
uint64_t pprof_builder__function_at(struct pprof_builder *b, const char *name,
				    const char *system_name, const char *file,
				    int64_t start_line);
/* One Line of a location: the function and the line in it. */
struct pprof_line {
	uint64_t function_id;
	int64_t line;
};
/* A location with its inline chain, innermost first (@nr 0: unsymbolized). */
uint64_t pprof_builder__location_lines(struct pprof_builder *b, uint64_t mapping_id,
				       uint64_t address, const struct pprof_line *lines,
				       size_t nr);
/* pprof_builder__drop_frames - Profile.drop_frames, a regexp of frames pprof hides. */
int pprof_builder__drop_frames(struct pprof_builder *b, const char *regexp);
/* @function_id 0: an unsymbolized location (address and mapping only). */
uint64_t pprof_builder__location(struct pprof_builder *b, uint64_t mapping_id,
				 uint64_t address, uint64_t function_id);
/* @values: one per sample type added so far. */
int pprof_builder__sample(struct pprof_builder *b, const uint64_t *locs, size_t nr_locs,
			  const int64_t *values, const struct pprof_label *labels,
			  size_t nr_labels);
size_t pprof_builder__nr_samples(const struct pprof_builder *b);

/* pprof_builder__encode - the serialized message (malloc'd). */
int pprof_builder__encode(struct pprof_builder *b, uint8_t **out, size_t *len);
/* pprof_builder__encode_gz - the same, gzip'd: a .pb.gz file's bytes. */
int pprof_builder__encode_gz(struct pprof_builder *b, uint8_t **out, size_t *len);

/* gzip helpers (zlib), shared with the readers. */
int pprof_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);
int pprof_gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);

#endif
