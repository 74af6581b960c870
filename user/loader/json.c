// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <math.h>

#include "json.h"

void json_begin(struct json_writer *w, FILE *out, bool pretty)
{
	*w = (struct json_writer){.out = out, .pretty = pretty};
}

static void newline_indent(struct json_writer *w, int depth)
{
	if (!w->pretty)
		return;
	fputc('\n', w->out);
	for (int i = 0; i < depth; i++)
		fputs("  ", w->out);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if s starts none. */
static int utf8_sequence_length(const unsigned char *s)
{
	int len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and code points past U+10FFFF are invalid. */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/* s as a JSON string; bytes that are not UTF-8 become U+FFFD, so the output always parses. */
static void write_string(struct json_writer *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', w->out);
	while (*p) {
		int len;

		switch (*p) {
		case '"':
			fputs("\\\"", w->out);
			break;
		case '\\':
			fputs("\\\\", w->out);
			break;
		case '\n':
			fputs("\\n", w->out);
			break;
		case '\r':
			fputs("\\r", w->out);
			break;
		case '\t':
			fputs("\\t", w->out);
			break;
		default:
			if (*p < 0x20) {
				fprintf(w->out, "\\u%04x", *p);
				break;
			}
			len = utf8_sequence_length(p);
			if (!len) {
				fputs("\\ufffd", w->out);
				break;
			}
			fwrite(p, 1, len, w->out);
			p += len;
			continue;
		}
		p++;
	}
	fputc('"', w->out);
}

/* Separator, indentation and key before a value; false (and err set) on misuse. */
static bool member(struct json_writer *w, const char *key)
{
	bool keyed = w->depth > 0 && !w->in_array[w->depth];

	if (w->err)
		return false;
	if (!!key != keyed || (w->depth == 0 && w->has_members[0])) {
		w->err = -EINVAL;
		return false;
	}
	if (w->depth > 0) {
		if (w->has_members[w->depth])
			fputc(',', w->out);
		newline_indent(w, w->depth);
	}
	w->has_members[w->depth] = true;
	if (key) {
		write_string(w, key);
		fputs(w->pretty ? ": " : ":", w->out);
	}
	return true;
}

static void open_container(struct json_writer *w, const char *key, bool array)
{
	if (!member(w, key))
		return;
	if (w->depth == JSON_MAX_DEPTH) {
		w->err = -EINVAL;
		return;
	}
	fputc(array ? '[' : '{', w->out);
	w->depth++;
	w->in_array[w->depth] = array;
	w->has_members[w->depth] = false;
}

static void close_container(struct json_writer *w, bool array)
{
	if (w->err)
		return;
	if (w->depth == 0 || w->in_array[w->depth] != array) {
		w->err = -EINVAL;
		return;
	}
	if (w->has_members[w->depth])
		newline_indent(w, w->depth - 1);
	fputc(array ? ']' : '}', w->out);
	w->depth--;
}

void json_object_begin(struct json_writer *w, const char *key)
{
	open_container(w, key, false);
}

void json_object_end(struct json_writer *w)
{
	close_container(w, false);
}

void json_array_begin(struct json_writer *w, const char *key)
{
	open_container(w, key, true);
}

void json_array_end(struct json_writer *w)
{
	close_container(w, true);
}

void json_string(struct json_writer *w, const char *key, const char *value)
{
	if (member(w, key))
		write_string(w, value);
}

void json_u64(struct json_writer *w, const char *key, uint64_t value)
{
	if (member(w, key))
		fprintf(w->out, "%" PRIu64, value);
}

void json_bool(struct json_writer *w, const char *key, bool value)
{
	if (member(w, key))
		fputs(value ? "true" : "false", w->out);
}

void json_fixed(struct json_writer *w, const char *key, double value, int decimals)
{
	if (!isfinite(value)) {
		w->err = w->err ?: -EINVAL;
		return;
	}
	if (member(w, key))
		fprintf(w->out, "%.*f", decimals, value);
}

int json_end(struct json_writer *w)
{
	if (!w->err && (w->depth != 0 || !w->has_members[0]))
		w->err = -EINVAL;
	if (w->err)
		return w->err;
	fputc('\n', w->out);
	if (fflush(w->out) || ferror(w->out))
		w->err = -EIO;
	return w->err;
}
