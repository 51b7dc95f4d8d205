/* Names written into JSON and XML: each format's escaping, and the UTF-8
 * check both need (a name is bytes; both formats are Unicode text). */
#ifndef PNEXPLORE_ESCAPE_H
#define PNEXPLORE_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The length of the UTF-8 character at `s` (1 to 4), or 0 if the bytes there
 * are not one (a stray continuation byte, an overlong form, a surrogate, past
 * U+10FFFF, or cut short). */
size_t utf8_char_length(const char *s);
/* A JSON string literal, quotes included: '"', '\' and control characters
 * escaped, bytes that are not UTF-8 written as U+FFFD. */
void write_json_string(FILE *out, const char *text);
/* True if XML 1.0 can carry the text: UTF-8 without control characters. */
bool xml_can_carry(const char *text);
/* Text or an attribute value in XML: & < > " ' as entities; the text must
 * pass xml_can_carry. */
void write_xml_escaped(FILE *out, const char *text);

#endif
