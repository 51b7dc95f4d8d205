/* Names written into JSON and XML (see escape.h): a name is whatever bytes
 * the net file held, and a quote or a '<' in one must not end the string or
 * the attribute it is written into. */
#include "escape.h"

#include <stdint.h>

size_t utf8_char_length(const char *text) {
    const unsigned char *s = (const unsigned char *)text;
    if (s[0] < 0x80) return 1;
    size_t length;
    uint32_t code, smallest; /* below `smallest` the form is overlong */
    if ((s[0] & 0xE0) == 0xC0) {
        length = 2, code = s[0] & 0x1Fu, smallest = 0x80;
    } else if ((s[0] & 0xF0) == 0xE0) {
        length = 3, code = s[0] & 0x0Fu, smallest = 0x800;
    } else if ((s[0] & 0xF8) == 0xF0) {
        length = 4, code = s[0] & 0x07u, smallest = 0x10000;
    } else {
        return 0;
    }
    for (size_t i = 1; i < length; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0; /* also stops at the terminating NUL */
        code = code << 6 | (s[i] & 0x3Fu);
    }
    if (code < smallest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
    return length;
}

void write_json_string(FILE *out, const char *text) {
    fputc('"', out);
    for (const char *s = text; *s;) {
        size_t length = utf8_char_length(s);
        unsigned char c = (unsigned char)*s;
        if (length == 0) {
            fputs("\\ufffd", out);
            s++;
        } else if (length > 1) {
            fwrite(s, 1, length, out);
            s += length;
        } else {
            if (c == '"' || c == '\\') {
                fprintf(out, "\\%c", c);
            } else if (c < 0x20) {
                fprintf(out, "\\u%04x", c);
            } else {
                fputc(c, out);
            }
            s++;
        }
    }
    fputc('"', out);
}

bool xml_can_carry(const char *text) {
    for (const char *s = text; *s;) {
        size_t length = utf8_char_length(s);
        if (length == 0 || (unsigned char)*s < 0x20) return false;
        s += length;
    }
    return true;
}

void write_xml_escaped(FILE *out, const char *text) {
    for (const char *s = text; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: fputc(*s, out);
        }
    }
}
