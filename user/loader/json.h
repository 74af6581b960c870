/* SPDX-License-Identifier: MIT */
/*
 * A small JSON writer for the loader's --json output: objects, arrays,
 * escaped strings, unsigned 64-bit integers, booleans and fixed-point numbers.
 * Inside an object every value takes a key; inside an array (and at the top)
 * key is NULL. A writer never fails half-way: misuse and write errors are
 * remembered and reported by json_end.
 */
#ifndef XROCE_LOADER_JSON_H
#define XROCE_LOADER_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 8

struct json_writer {
	FILE *out;
	bool pretty; /* one member per line, indented; else one line */
	int depth;
	bool in_array[JSON_MAX_DEPTH + 1];
	bool has_members[JSON_MAX_DEPTH + 1];
	int err; /* first error: -EINVAL misuse, or -EIO */
};

void json_begin(struct json_writer *w, FILE *out, bool pretty);
/* Ends the document (with a newline); 0, or the first error met. */
int json_end(struct json_writer *w);

void json_object_begin(struct json_writer *w, const char *key);
void json_object_end(struct json_writer *w);
void json_array_begin(struct json_writer *w, const char *key);
void json_array_end(struct json_writer *w);

void json_string(struct json_writer *w, const char *key, const char *value);
void json_u64(struct json_writer *w, const char *key, uint64_t value);
void json_bool(struct json_writer *w, const char *key, bool value);
/* A finite number with decimals digits after the point. */
void json_fixed(struct json_writer *w, const char *key, double value, int decimals);

#endif /* XROCE_LOADER_JSON_H */
