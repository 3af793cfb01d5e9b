#ifndef EXP_CJSONC_SHIM_H
#define EXP_CJSONC_SHIM_H
#include <json-c/json.h>
#include <json-c/json_tokener.h>
#include <json-c/json_object_iterator.h>
#include <json-c/linkhash.h>
#include <locale.h>

/* Objects of up to this many members are searched by walking them (see exp_json_member). */
#define EXP_JSON_MEMBER_WALK_LIMIT 16

/* The member `key` of the object `object`: its value in *value (NULL for a JSON null) and the name as
 * the object stores it (a pointer that lives as long as the object), or NULL when there is no such member.
 * The stored name lets a reader of a null member still say where it is (JSON null has no object of its own). */
static inline const char *exp_json_member(struct json_object *object, const char *key, struct json_object **value) {
    struct lh_table *table = json_object_get_object(object);
    struct lh_entry *entry = NULL;
    if (json_object_object_length(object) <= EXP_JSON_MEMBER_WALK_LIMIT) {
        /* A datafile's objects are small and read by a handful of names each: walking the members and
         * comparing names (most differ in their first byte) costs a fraction of hashing the name. */
        for (entry = lh_table_head(table); entry; entry = lh_entry_next(entry)) {
            const char *stored = (const char *)lh_entry_k(entry), *wanted = key;
            while (*stored == *wanted && *wanted) { stored++; wanted++; }
            if (*stored == *wanted) break;
        }
    } else {
        entry = lh_table_lookup_entry(table, key);
    }
    if (!entry) return NULL;
    *value = (struct json_object *)lh_entry_v(entry);
    return (const char *)lh_entry_k(entry);
}

/* The first member of an object (NULL when empty) and the one after `entry`, in the order json-c keeps
 * (first position of a name, its last value). */
static inline struct lh_entry *exp_json_first_member(struct json_object *object) {
    return lh_table_head(json_object_get_object(object));
}
static inline struct lh_entry *exp_json_next_member(struct lh_entry *entry) { return lh_entry_next(entry); }
static inline const char *exp_json_member_name(struct lh_entry *entry) { return (const char *)lh_entry_k(entry); }
static inline struct json_object *exp_json_member_value(struct lh_entry *entry) {
    return (struct json_object *)lh_entry_v(entry);
}

/* json_tokener_parse_ex with the calling thread in the C locale for the call. json-c itself switches the
 * thread to a "C" numeric locale around every parse, and builds that locale as a copy of the thread's
 * current one: from the C locale glibc hands back its shared static C locale instead, so a parse costs
 * about 1,800 instructions less (a datafile start makes dozens of parses, one per element). The thread's
 * locale is restored before returning; JSON's grammar does not depend on the locale. */
static inline struct json_object *exp_json_parse(struct json_tokener *tokener, const char *text, int length) {
    locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); /* glibc's static object: no allocation */
    locale_t previous = c_locale ? uselocale(c_locale) : (locale_t)0;
    struct json_object *tree = json_tokener_parse_ex(tokener, text, length);
    if (previous) uselocale(previous);
    return tree;
}

/* The flags every JSON text of the library is parsed with. */
static inline int exp_json_flags(void) { return JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8; }
/* The flags for one value inside a larger text whose UTF-8 the library checked before any of it was parsed
 * (a datafile read element by element, see StreamedDatafile.swift): json-c stops after the value (and the
 * whitespace after it) and json_tokener_get_parse_end says where. json-c's own UTF-8 check is left out
 * there: it could never fail, since the library's check of the whole text is stricter (it also refuses
 * overlong forms, surrogates and scalars past U+10FFFF), and it costs about a tenth of json-c's parse. */
static inline int exp_json_prevalidated_value_flags(void) {
    return JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS;
}
/* The compact form json-c writes: no spaces, '/' not escaped. */
static inline int exp_json_plain(void) { return JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE; }
#endif
