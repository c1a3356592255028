/* The one JSON reader: a pull reader over bytes (luahier_jsonread.h). Recursion-free: the
 * containers open are kept in the reader, so a deep text costs no C stack. */
#include "luahier_jsonread.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the reader expects next, in the value begun. */
enum {
    STATE_VALUE = 1,        /* a value (the top one, or a member's) */
    STATE_FIRST_MEMBER,     /* just after '{': a key or '}' */
    STATE_KEY,              /* a key (after ',') */
    STATE_FIRST_ITEM,       /* just after '[': an item or ']' */
    STATE_ITEM,             /* an item (after ',') */
    STATE_AFTER,            /* a value inside a container was read: ',' or the container's end */
    STATE_DONE              /* the value begun is complete */
};

/* luahier_jsonmember's place. */
enum { MEMBERS_START = 0, MEMBERS_FIRST, MEMBERS_NEXT, MEMBERS_CLOSED };

void luahier_jsoninit(luahier_JSONReader *r, const void *bytes, size_t length, int depth_limit, int nulls_as_nil) {
    r->bytes = (const unsigned char *)bytes;
    r->length = length;
    r->index = 0;
    r->depth_limit = depth_limit < LUAHIER_JSON_MAX_DEPTH ? depth_limit : LUAHIER_JSON_MAX_DEPTH;
    r->nulls_as_nil = nulls_as_nil;
    r->depth = 0;
    r->top_depth = 1;
    r->state = STATE_DONE;
    r->member_state = MEMBERS_START;
    r->string = NULL;
    r->string_length = 0;
    r->integer = 0;
    r->number = 0;
    r->scratch = NULL;
    r->scratch_size = r->scratch_capacity = 0;
    r->message_space[0] = 0;
    r->message = r->message_space;
    r->column = 0;
}

void luahier_jsonfree(luahier_JSONReader *r) {
    free(r->scratch);
    r->scratch = NULL;
    r->scratch_size = r->scratch_capacity = 0;
    if (r->message != r->message_space) free(r->message);
    r->message = r->message_space;
}

/* ---- Failures ---------------------------------------------------------------------------- */

/* Refuses the text: the message, and the byte where it was seen (its column is `at` + 1). */
/* A message quotes at most this many bytes of the input (a key, a number), then "...": the
 * column says where it is, and a line of one long number would otherwise come back whole. */
enum { QUOTED_MOST = 40 };
#define QUOTED(text, length) (int)((length) < QUOTED_MOST ? (length) : QUOTED_MOST), (const char *)(text), \
                             ((length) > QUOTED_MOST ? "..." : "")

static int fail(luahier_JSONReader *r, size_t at, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int needed = vsnprintf(r->message_space, sizeof r->message_space, format, arguments);
    va_end(arguments);
    if (r->message != r->message_space) free(r->message);
    r->message = r->message_space;
    if (needed >= (int)sizeof r->message_space) {
        /* A long message (a long number or key in it): written again, whole. */
        char *whole = (char *)malloc((size_t)needed + 1);
        if (whole) {
            va_start(arguments, format);
            vsnprintf(whole, (size_t)needed + 1, format, arguments);
            va_end(arguments);
            r->message = whole;
        }
    }
    r->column = at + 1;
    r->state = STATE_DONE;
    return LUAHIER_JSON_FAILED;
}

int luahier_jsonfail(luahier_JSONReader *r, const char *message) {
    return fail(r, r->index, "%s", message);
}

/* A byte as messages name it: 'x' when printable, else "byte 0x0A". */
static void describe_letter(unsigned char byte, char text[16]) {
    if (byte >= 0x21 && byte < 0x7F) snprintf(text, 16, "'%c'", byte);
    else snprintf(text, 16, "byte 0x%02X", byte);
}

/* The byte at `at`, or the end of the input. */
static void describe_byte(const luahier_JSONReader *r, size_t at, char text[16]) {
    if (at >= r->length) snprintf(text, 16, "end of input");
    else describe_letter(r->bytes[at], text);
}

/* ---- Bytes ------------------------------------------------------------------------------- */

void luahier_jsonskipspace(luahier_JSONReader *r) {
    const unsigned char *bytes = r->bytes;
    size_t index = r->index, length = r->length;
    while (index < length) {
        unsigned char byte = bytes[index];
        if (byte != ' ' && byte != '\t' && byte != '\n' && byte != '\r') break;
        index++;
    }
    r->index = index;
}

/* Whitespace skipped, the common cases (none, or one space) without a call. */
static inline void skip_space(luahier_JSONReader *r) {
    size_t index = r->index;
    if (index < r->length && r->bytes[index] > ' ') return;
    if (index + 1 < r->length && r->bytes[index] == ' ' && r->bytes[index + 1] > ' ') {
        r->index = index + 1;
        return;
    }
    luahier_jsonskipspace(r);
}

/* The byte at the reader's place, or -1 at the end. */
static int peek(const luahier_JSONReader *r) {
    return r->index < r->length ? r->bytes[r->index] : -1;
}

size_t luahier_utf8prefix(const unsigned char *s, size_t length) {
    size_t i = 0;
    while (i < length) {
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t need;
        unsigned char low = 0x80, high = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c == 0xE0) { need = 2; low = 0xA0; }
        else if (c == 0xED) { need = 2; high = 0x9F; }
        else if (c >= 0xE1 && c <= 0xEF) need = 2;
        else if (c == 0xF0) { need = 3; low = 0x90; }
        else if (c == 0xF4) { need = 3; high = 0x8F; }
        else if (c >= 0xF1 && c <= 0xF3) need = 3;
        else return i;
        if (i + need >= length) return i;
        if (s[i + 1] < low || s[i + 1] > high) return i;
        for (size_t k = 2; k <= need; k++) if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
        i += need + 1;
    }
    return length;
}

size_t luahier_utf8repairedlength(const unsigned char *s, size_t length) {
    size_t size = 0, i = 0;
    while (i < length) {
        size_t valid = luahier_utf8prefix(s + i, length - i);
        size += valid;
        i += valid;
        /* A repair replaces a maximal ill-formed part, one byte or more, by one U+FFFD: each
         * byte counted as one is an upper bound. */
        if (i < length) { size += 3; i++; }
    }
    return size;
}

/* ---- Strings ----------------------------------------------------------------------------- */

/* Room for `more` bytes in the scratch; 0 out of memory. */
static int scratch_reserve(luahier_JSONReader *r, size_t more) {
    if (r->scratch_size + more <= r->scratch_capacity) return 1;
    size_t capacity = r->scratch_capacity ? r->scratch_capacity : 64;
    while (capacity < r->scratch_size + more) capacity *= 2;
    char *grown = (char *)realloc(r->scratch, capacity);
    if (grown == NULL) return 0;
    r->scratch = grown;
    r->scratch_capacity = capacity;
    return 1;
}

/* Four hex digits at the reader's place (after `\u`, whose backslash is at `at`). */
static int hex_quad(luahier_JSONReader *r, size_t at, unsigned *scalar) {
    if (r->index + 4 > r->length) return fail(r, at, "\\u needs four hex digits");
    unsigned value = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char byte = r->bytes[r->index];
        unsigned digit;
        if (byte >= '0' && byte <= '9') digit = byte - '0';
        else if (byte >= 'a' && byte <= 'f') digit = byte - 'a' + 10;
        else if (byte >= 'A' && byte <= 'F') digit = byte - 'A' + 10;
        else return fail(r, at, "\\u needs four hex digits");
        value = value << 4 | digit;
        r->index++;
    }
    *scalar = value;
    return 1;
}

/* One escape at the reader's place (its backslash), decoded into the scratch as UTF-8. */
static int read_escape(luahier_JSONReader *r) {
    size_t at = r->index;
    r->index++;
    if (r->index >= r->length) return fail(r, at, "unterminated string");
    unsigned char letter = r->bytes[r->index++];
    unsigned scalar;
    switch (letter) {
    case '"': case '\\': case '/': scalar = letter; break;
    case 'b': scalar = 0x08; break;
    case 'f': scalar = 0x0C; break;
    case 'n': scalar = 0x0A; break;
    case 'r': scalar = 0x0D; break;
    case 't': scalar = 0x09; break;
    case 'u':
        if (!hex_quad(r, at, &scalar)) return 0;
        if (scalar >= 0xD800 && scalar <= 0xDBFF) {
            if (!(r->index + 1 < r->length && r->bytes[r->index] == '\\' && r->bytes[r->index + 1] == 'u')) {
                return fail(r, at, "lone surrogate \\u%X in a string", scalar);
            }
            size_t second = r->index;
            r->index += 2;
            unsigned low;
            if (!hex_quad(r, second, &low)) return 0;
            if (low < 0xDC00 || low > 0xDFFF) return fail(r, at, "lone surrogate \\u%X in a string", scalar);
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00);
        } else if (scalar >= 0xDC00 && scalar <= 0xDFFF) {
            return fail(r, at, "lone surrogate \\u%X in a string", scalar);
        }
        break;
    default: {
        char text[16];
        describe_letter(letter, text);
        return fail(r, at, "invalid escape \\%s in a string", text);
    }
    }
    if (!scratch_reserve(r, 4)) return fail(r, at, "out of memory reading a string");
    char *p = r->scratch + r->scratch_size;
    if (scalar < 0x80) {
        *p++ = (char)scalar;
    } else if (scalar < 0x800) {
        *p++ = (char)(0xC0 | scalar >> 6);
        *p++ = (char)(0x80 | (scalar & 0x3F));
    } else if (scalar < 0x10000) {
        *p++ = (char)(0xE0 | scalar >> 12);
        *p++ = (char)(0x80 | (scalar >> 6 & 0x3F));
        *p++ = (char)(0x80 | (scalar & 0x3F));
    } else {
        *p++ = (char)(0xF0 | scalar >> 18);
        *p++ = (char)(0x80 | (scalar >> 12 & 0x3F));
        *p++ = (char)(0x80 | (scalar >> 6 & 0x3F));
        *p++ = (char)(0x80 | (scalar & 0x3F));
    }
    r->scratch_size = (size_t)(p - r->scratch);
    return 1;
}

/* The rest of a string from its first escape: decoded into the scratch. `start` is its
 * opening quote, `run` where its bytes began. */
static int read_escaped_string(luahier_JSONReader *r, size_t start, size_t run) {
    r->scratch_size = 0;
    if (!scratch_reserve(r, r->index - run + 16)) return fail(r, start, "out of memory reading a string");
    memcpy(r->scratch, r->bytes + run, r->index - run);
    r->scratch_size = r->index - run;
    while (r->index < r->length) {
        unsigned char byte = r->bytes[r->index];
        if (byte == '"') {
            r->index++;
            size_t valid = luahier_utf8prefix((const unsigned char *)r->scratch, r->scratch_size);
            if (valid != r->scratch_size) return fail(r, start + 1 + valid, "invalid UTF-8 in a string");
            r->string = r->scratch;
            r->string_length = r->scratch_size;
            return 1;
        }
        if (byte == '\\') {
            if (!read_escape(r)) return 0;
            continue;
        }
        if (byte < 0x20) return fail(r, r->index, "control character 0x%02X in a string: escape it", byte);
        if (r->scratch_size == r->scratch_capacity && !scratch_reserve(r, 1)) {
            return fail(r, start, "out of memory reading a string");
        }
        r->scratch[r->scratch_size++] = (char)byte;
        r->index++;
    }
    return fail(r, start, "unterminated string");
}

/* Eight bytes at `p` (unaligned). */
static uint64_t load8(const unsigned char *p) {
    uint64_t word;
    memcpy(&word, p, sizeof word);
    return word;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* The bytes of `word` that a string's plain run cannot hold as they are (a quote, a backslash,
 * a control character) or that begin a check (a byte of a multi-byte sequence): the high bit
 * of each such byte is set. Bits above the lowest may be false alarms (a borrow), never the
 * lowest: it marks the first such byte exactly. */
static uint64_t special_bytes(uint64_t word) {
    uint64_t quote = word ^ (ONES * '"'), backslash = word ^ (ONES * '\\');
    return (((quote - ONES) & ~quote) | ((backslash - ONES) & ~backslash) | (word - ONES * 0x20) | word) & HIGHS;
}

/* A string at the reader's place (its opening quote) into `string`: straight from the input
 * when it has no escape, else decoded into the scratch. Plain runs are scanned eight bytes at
 * a time. */
static int read_string(luahier_JSONReader *r) {
    size_t start = r->index;
    size_t index = start + 1;
    const unsigned char *bytes = r->bytes;
    size_t length = r->length;
    int ascii = 1;
    for (;;) {
        while (index + 8 <= length) {
            uint64_t special = special_bytes(load8(bytes + index));
            if (special) {
                index += (size_t)__builtin_ctzll(special) >> 3;
                break;
            }
            index += 8;
        }
        if (index >= length) break;
        unsigned char byte = bytes[index];
        if (byte == '"') {
            size_t run = start + 1;
            r->index = index + 1;
            if (!ascii) {
                size_t valid = luahier_utf8prefix(bytes + run, index - run);
                if (valid != index - run) return fail(r, run + valid, "invalid UTF-8 in a string");
            }
            r->string = (const char *)bytes + run;
            r->string_length = index - run;
            return 1;
        }
        if (byte == '\\') {
            r->index = index;
            return read_escaped_string(r, start, start + 1);
        }
        if (byte < 0x20) return fail(r, index, "control character 0x%02X in a string: escape it", byte);
        if (byte >= 0x80) ascii = 0;
        index++;
    }
    return fail(r, start, "unterminated string");
}

/* After a key read from `key_start` (its opening quote): whitespace, then ':'. */
static int expect_colon(luahier_JSONReader *r, size_t key_start) {
    size_t key_end = r->index;
    skip_space(r);
    if (peek(r) != ':') {
        char found[16];
        describe_byte(r, r->index, found);
        return fail(r, r->index, "expected ':' after key %.*s%s, found %s",
                    QUOTED(r->bytes + key_start, key_end - key_start), found);
    }
    r->index++;
    return 1;
}

/* A key at the reader's place: '"', the key, ':'. */
static int read_key(luahier_JSONReader *r) {
    if (peek(r) != '"') {
        char found[16];
        describe_byte(r, r->index, found);
        return fail(r, r->index, "expected a string key, found %s", found);
    }
    size_t key_start = r->index;
    if (!read_string(r)) return 0;
    return expect_colon(r, key_start);
}

/* ---- Numbers and words ------------------------------------------------------------------- */

/* `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: an integer when there is neither a
 * fraction nor an exponent. */
static int read_number(luahier_JSONReader *r) {
    const unsigned char *bytes = r->bytes;
    size_t length = r->length, start = r->index, i = start;
#define DIGIT_AT(k) ((k) < length && bytes[k] >= '0' && bytes[k] <= '9')
    int negative = bytes[i] == '-';
    if (negative) i++;
    if (!DIGIT_AT(i)) return fail(r, start, "'-' must be followed by digits");
    /* The digits as an integer (the integer's value, or the fast path's), exact while there
     * are at most 19 (10^19 < 2^64): past that, `overflow` says it is not. */
    uint64_t digits = 0;
    int count = 0, overflow = 0, fraction = 0, exponent = 0;
    if (bytes[i] == '0' && DIGIT_AT(i + 1)) return fail(r, start, "leading zero in a number");
    for (; DIGIT_AT(i); i++, count++) digits = digits * 10 + (uint64_t)(bytes[i] - '0');
    if (count > 19) overflow = 1;
    if (i < length && bytes[i] == '.') {
        i++;
        if (!DIGIT_AT(i)) return fail(r, start, "a '.' must be followed by digits");
        for (; DIGIT_AT(i); i++, fraction++, count++) digits = digits * 10 + (uint64_t)(bytes[i] - '0');
        if (count > 19) overflow = 1;
    }
    if (i < length && (bytes[i] == 'e' || bytes[i] == 'E')) {
        exponent = 1;
        i++;
        if (i < length && (bytes[i] == '+' || bytes[i] == '-')) i++;
        if (!DIGIT_AT(i)) return fail(r, start, "an exponent must have digits");
        while (DIGIT_AT(i)) i++;
    }
#undef DIGIT_AT
    r->index = i;
    const char *text = (const char *)bytes + start;
    size_t text_length = i - start;
    if (fraction == 0 && !exponent) {
        if (!overflow && negative && digits <= (uint64_t)INT64_MAX + 1) {
            r->integer = digits == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)digits;
            return LUAHIER_JSON_INTEGER;
        }
        if (!overflow && !negative && digits <= (uint64_t)INT64_MAX) {
            r->integer = (int64_t)digits;
            return LUAHIER_JSON_INTEGER;
        }
        return fail(r, start, "integer %.*s%s is out of range (64-bit)", QUOTED(text, text_length));
    }
    /* Few digits and no exponent: the digits as an integer and a power of ten are both exact
     * doubles, so one division is correctly rounded (Clinger's fast path), as strtod is. */
    static const double tens[] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16 };
    if (!exponent && !overflow && digits < (1ULL << 53) && fraction <= 16) {
        double number = (double)digits / tens[fraction];
        r->number = negative ? -number : number;
        return LUAHIER_JSON_DOUBLE;
    }
    /* strtod needs a terminated copy (the input is not terminated). Correctly rounded; JSON's
     * number form is the C locale's, which the host never changes. */
    char small[64];
    char *copy = text_length < sizeof small ? small : (char *)malloc(text_length + 1);
    if (copy == NULL) return fail(r, start, "out of memory reading a number");
    memcpy(copy, text, text_length);
    copy[text_length] = 0;
    double number = strtod(copy, NULL);
    if (copy != small) free(copy);
    if (!(number - number == 0)) return fail(r, start, "number %.*s%s is out of range", QUOTED(text, text_length));
    r->number = number;
    return LUAHIER_JSON_DOUBLE;
}

/* `word` (true, false, null) at the reader's place. */
static int expect_word(luahier_JSONReader *r, const char *word, size_t length) {
    if (r->index + length > r->length || memcmp(r->bytes + r->index, word, length) != 0) {
        char found[16];
        describe_byte(r, r->index, found);
        return fail(r, r->index, "unexpected %s, expected a value", found);
    }
    r->index += length;
    return 1;
}

/* ---- Values ------------------------------------------------------------------------------ */

void luahier_jsonbegin(luahier_JSONReader *r, int depth) {
    r->depth = 0;
    r->top_depth = depth;
    r->state = STATE_VALUE;
}

/* A value was read: what comes next is ',' or its container's end, or nothing. */
static int completed(luahier_JSONReader *r, int token) {
    r->state = r->depth == 0 ? STATE_DONE : STATE_AFTER;
    return token;
}

/* Opens a container of `kind` at the reader's place. */
static int open_container(luahier_JSONReader *r, int kind) {
    if (r->top_depth + r->depth > r->depth_limit) {
        return fail(r, r->index, "nesting deeper than %d", r->depth_limit);
    }
    r->kinds[r->depth] = (unsigned char)kind;
    r->counts[r->depth] = 0;
    r->depth++;
    r->index++;
    if (kind == LUAHIER_JSON_IN_OBJECT) {
        r->state = STATE_FIRST_MEMBER;
        return LUAHIER_JSON_BEGIN_OBJECT;
    }
    r->state = STATE_FIRST_ITEM;
    return LUAHIER_JSON_BEGIN_ARRAY;
}

/* A value at the reader's place (whitespace first skipped). */
static int read_value(luahier_JSONReader *r) {
    skip_space(r);
    if (r->index >= r->length) return fail(r, r->index, "unexpected end of input, expected a value");
    switch (r->bytes[r->index]) {
    case '{': return open_container(r, LUAHIER_JSON_IN_OBJECT);
    case '[': return open_container(r, LUAHIER_JSON_IN_ARRAY);
    case '"': return read_string(r) ? completed(r, LUAHIER_JSON_STRING) : LUAHIER_JSON_FAILED;
    case 't': return expect_word(r, "true", 4) ? completed(r, LUAHIER_JSON_TRUE) : LUAHIER_JSON_FAILED;
    case 'f': return expect_word(r, "false", 5) ? completed(r, LUAHIER_JSON_FALSE) : LUAHIER_JSON_FAILED;
    case 'n': return expect_word(r, "null", 4) ? completed(r, LUAHIER_JSON_NULL) : LUAHIER_JSON_FAILED;
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9': {
        int token = read_number(r);
        return token ? completed(r, token) : LUAHIER_JSON_FAILED;
    }
    default: {
        char found[16];
        describe_byte(r, r->index, found);
        return fail(r, r->index, "unexpected %s, expected a value", found);
    }
    }
}

/* An array's item at the reader's place. */
static int read_item(luahier_JSONReader *r) {
    skip_space(r);
    if (r->nulls_as_nil && peek(r) == 'n') {
        return fail(r, r->index, "null in an array (a Lua sequence cannot hold nil)");
    }
    r->counts[r->depth - 1]++;
    return read_value(r);
}

/* Closes the innermost container (its closing byte at the reader's place). */
static int close_container(luahier_JSONReader *r, int token) {
    r->index++;
    r->depth--;
    return completed(r, token);
}

int luahier_jsonnext(luahier_JSONReader *r) {
    switch (r->state) {
    case STATE_VALUE:
        return read_value(r);
    case STATE_FIRST_MEMBER:
        skip_space(r);
        if (peek(r) == '}') return close_container(r, LUAHIER_JSON_END_OBJECT);
        /* fallthrough */
    case STATE_KEY:
        if (!read_key(r)) return LUAHIER_JSON_FAILED;
        r->counts[r->depth - 1]++;
        r->state = STATE_VALUE;
        return LUAHIER_JSON_KEY;
    case STATE_FIRST_ITEM:
        skip_space(r);
        if (peek(r) == ']') return close_container(r, LUAHIER_JSON_END_ARRAY);
        /* fallthrough */
    case STATE_ITEM:
        return read_item(r);
    case STATE_AFTER: {
        skip_space(r);
        int byte = peek(r);
        if (r->kinds[r->depth - 1] == LUAHIER_JSON_IN_OBJECT) {
            if (byte == '}') return close_container(r, LUAHIER_JSON_END_OBJECT);
            if (byte != ',') {
                char found[16];
                describe_byte(r, r->index, found);
                return fail(r, r->index, "expected ',' or '}' in an object, found %s", found);
            }
            r->index++;
            skip_space(r);
            if (!read_key(r)) return LUAHIER_JSON_FAILED;
            r->counts[r->depth - 1]++;
            r->state = STATE_VALUE;
            return LUAHIER_JSON_KEY;
        }
        if (byte == ']') return close_container(r, LUAHIER_JSON_END_ARRAY);
        if (byte != ',') {
            char found[16];
            describe_byte(r, r->index, found);
            return fail(r, r->index, "expected ',' or ']' in an array, found %s", found);
        }
        r->index++;
        return read_item(r);
    }
    case STATE_DONE:
    default:
        return LUAHIER_JSON_DONE;
    }
}

int luahier_jsonexpectend(luahier_JSONReader *r) {
    skip_space(r);
    if (r->index < r->length) {
        char found[16];
        describe_byte(r, r->index, found);
        fail(r, r->index, "unexpected %s after the value", found);
        return 0;
    }
    return 1;
}

int luahier_jsonskipvalue(luahier_JSONReader *r) {
    luahier_jsonbegin(r, 1);
    for (;;) {
        switch (luahier_jsonnext(r)) {
        case LUAHIER_JSON_BEGIN_OBJECT: case LUAHIER_JSON_BEGIN_ARRAY: case LUAHIER_JSON_KEY:
            continue;
        case LUAHIER_JSON_NULL: case LUAHIER_JSON_TRUE: case LUAHIER_JSON_FALSE: case LUAHIER_JSON_INTEGER:
        case LUAHIER_JSON_DOUBLE: case LUAHIER_JSON_STRING: case LUAHIER_JSON_END_OBJECT: case LUAHIER_JSON_END_ARRAY:
            if (r->depth == 0) return 1;
            continue;
        default:
            return 0;
        }
    }
}

int luahier_jsonmember(luahier_JSONReader *r) {
    switch (r->member_state) {
    case MEMBERS_START:
        skip_space(r);
        if (peek(r) != '{') {
            r->member_state = MEMBERS_CLOSED;
            return LUAHIER_JSON_DONE;
        }
        r->index++;
        r->member_state = MEMBERS_FIRST;
        return LUAHIER_JSON_BEGIN_OBJECT;
    case MEMBERS_FIRST:
        skip_space(r);
        if (peek(r) == '}') {
            r->index++;
            r->member_state = MEMBERS_CLOSED;
            return LUAHIER_JSON_END_OBJECT;
        }
        break;
    case MEMBERS_NEXT: {
        skip_space(r);
        int byte = peek(r);
        if (byte == '}') {
            r->index++;
            r->member_state = MEMBERS_CLOSED;
            return LUAHIER_JSON_END_OBJECT;
        }
        if (byte != ',') {
            char found[16];
            describe_byte(r, r->index, found);
            r->member_state = MEMBERS_CLOSED;
            return fail(r, r->index, "expected ',' or '}' in an object, found %s", found);
        }
        r->index++;
        skip_space(r);
        break;
    }
    default:
        return LUAHIER_JSON_END_OBJECT;
    }
    r->member_state = MEMBERS_NEXT;
    if (!read_key(r)) {
        r->member_state = MEMBERS_CLOSED;
        return LUAHIER_JSON_FAILED;
    }
    return LUAHIER_JSON_KEY;
}
