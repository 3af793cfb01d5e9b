/*
 * Optional accelerator for Client.decide and Client.variation_key, and UserContext.decide's native call and
 * result (user_decide, at the end), (the ctypes binding works without it).
 *
 * The cost of a Python decide is mostly the binding's, not the library's: a Python frame, argument
 * conversion, a new str for the result. With this module installed, Client.decide and
 * Client.variation_key are C method descriptors (FastMethod): `client.variation_key(user, flag, attrs)`
 * runs no Python code at all. They take the UTF-8 of str arguments straight from the str objects, fill
 * the exp_attribute array on the C stack, call exp_decide through the address the binding resolved with
 * ctypes (so both always use the same libexperiment.so), and return cached str objects for the keys.
 *
 * Everything outside the fast path goes to the binding's Python method, which applies the same rules: a
 * closed client (or one this module does not know), an unusual call shape (wrong argument count, unknown
 * keyword), a str subclass, a non-dict attributes mapping, any other value type (dict, list, objects: the
 * "other" attribute kind), an int beyond 64 bits, a string with NUL or lone surrogates (the length-delimited
 * exp_decide_n), more than MAX_FAST_ATTRIBUTES attributes. A non-OK status (not ready, unknown flag, ...)
 * also goes to the Python method, which returns the reference SDK's error decision and logs why: nothing was
 * decided or sent by the failed call, so deciding again there changes nothing.
 *
 * The GIL is released during exp_decide when the call may wait: when the client's profile store may do
 * I/O (SQLite, the default, or Redis: reads, writes, busy timeouts, network), and when it may send an
 * impression (the event queue appends to its journal, sometimes a SQLite transaction), i.e. unless
 * DISABLE_DECISION_EVENT is in the call's or the client's default options. Otherwise (profile_store "none"
 * or the host's callbacks, no impression) the call takes a fraction of a microsecond and waits on nothing,
 * and the GIL stays held: releasing and taking it back would add ~50 ns (15%) uncontended, and a GIL
 * hand-off to another thread under contention. The binding held it for every call before, too.
 * Library callbacks into Python made during the call (logger, listeners, dispatcher, profile callbacks)
 * take the GIL with PyGILState_Ensure, which works in both cases. A call holds its own reference to the
 * client's native handle (client._h) and to the attribute keys and values it passes, so a close() or a
 * dict change made meanwhile (by a callback, or another thread) takes effect after the call, as on the
 * ctypes path.
 * The module state below is only touched with the GIL held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "experiment.h"

enum { MAX_FAST_ATTRIBUTES = 64, KEY_CACHE_SIZE = 64, VARIABLES_CACHE_SIZE = 16, OPTIONS_CACHE_SIZE = 4 };

typedef exp_status (*decide_fn)(exp_client *, const char *, const char *, const exp_attribute *, size_t,
                                unsigned int, exp_decision *);
typedef void (*release_fn)(exp_decision *);
typedef exp_status (*text_n_fn)(const exp_decision *, exp_decision_field, size_t, const char **, size_t *);

/* ------------------------------------------------------------------------------------------------
 * Module state, set once by install()
 * ------------------------------------------------------------------------------------------------ */

static decide_fn g_decide;
static release_fn g_release;
static text_n_fn g_text_n;            /* exp_decision_text_n: a decision string's length, NUL bytes included */
static PyTypeObject *g_client_type;   /* experiment.Client */
static Py_ssize_t g_handle_offset;    /* offset of the Client._h slot (the _Handle keeping the client alive) */
static Py_ssize_t g_native_offset;    /* offset of the Client._native slot (a Native, or None) */
static PyObject *g_raise_status;      /* _raise(status): raises the binding's exception for a status */
static PyObject *g_options_to_int;    /* decide_options_to_int(options) */
static PyObject *g_option_bits;       /* decide_options_to_int's dict: tuple of options -> bits */
static PyTypeObject *g_option_type;   /* DecideOption */
static unsigned long g_all_option_bits;
static PyTypeObject *g_decision_type; /* Decision */
static PyObject *g_variables;         /* _variables(bytes) -> dict: parses and caches variables JSON */
static PyObject *g_variables_cache;   /* _variables' dict: bytes -> (flat dict or None, marshal snapshot) */
static PyObject *g_field_names[6];    /* flag_key, enabled, variation_key, rule_key, variables, reasons */
static Py_ssize_t g_field_offsets[6]; /* their __slots__ offsets, when Decision has slots (Python 3.11+) */
static int g_fields_slotted;
static PyObject *g_argument_names[4]; /* user_id, flag_key, attributes, options */

/* ------------------------------------------------------------------------------------------------
 * Native: the exp_client address of one Client (stored in its _native slot)
 * ------------------------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    exp_client *client;
    int store_may_wait; /* its profile store may wait on I/O (SQLite, Redis, unknown) */
    int events_off;     /* its default decide options include DISABLE_DECISION_EVENT */
} Native;

static PyObject *native_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *address;
    int store_may_wait, events_off;
    if (!PyArg_ParseTuple(args, "Opp:Native", &address, &store_may_wait, &events_off) ||
        (kwargs && PyDict_GET_SIZE(kwargs))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Native(...) takes no keyword arguments");
        return NULL;
    }
    void *client = PyLong_AsVoidPtr(address);
    if (client == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Native: NULL client address");
        return NULL;
    }
    Native *self = (Native *)type->tp_alloc(type, 0);
    if (self) {
        self->client = (exp_client *)client;
        self->store_may_wait = store_may_wait;
        self->events_off = events_off;
    }
    return (PyObject *)self;
}

static PyMemberDef native_members[] = {
    {"store_may_wait", T_INT, offsetof(Native, store_may_wait), READONLY, "its decides run without the GIL"},
    {"events_off", T_INT, offsetof(Native, events_off), READONLY,
     "decides send no impression by default (else those without DISABLE_DECISION_EVENT run without the GIL)"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject NativeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "experiment._speedups.Native",
    .tp_doc = "Native(address, store_may_wait, events_off): the exp_client address a Client decides with on the\n"
              "fast path; whether its profile store may wait on I/O; whether its default decide options\n"
              "disable impression events. Both decide whether exp_decide runs without the GIL.",
    .tp_basicsize = sizeof(Native),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_members = native_members,
    .tp_new = native_new,
};

/* ------------------------------------------------------------------------------------------------
 * Arguments
 * ------------------------------------------------------------------------------------------------ */

/* UTF-8 of an exact str without NUL; NULL (and no Python error set) when the fast path must not take it. */
static inline const char *fast_text(PyObject *value) {
    if (!PyUnicode_CheckExact(value)) return NULL;
    const char *text;
    Py_ssize_t size;
    if (PyUnicode_IS_COMPACT_ASCII(value)) {
        text = (const char *)PyUnicode_DATA(value);
        size = PyUnicode_GET_LENGTH(value);
    } else {
        text = PyUnicode_AsUTF8AndSize(value, &size); /* cached in the str object */
        if (text == NULL) {
            PyErr_Clear(); /* lone surrogates: the Python method reports them */
            return NULL;
        }
    }
    if (memchr(text, 0, (size_t)size) != NULL) return NULL;
    return text;
}

/* One attribute value; 0 when the fast path must not take it. bool before int (bool is an int). */
static inline int fast_value(PyObject *value, exp_value *out) {
    if (PyUnicode_CheckExact(value)) {
        const char *text = fast_text(value);
        if (text == NULL) return 0;
        out->type = EXP_VALUE_STRING;
        out->string_value = text;
    } else if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow != 0) return 0;
        out->type = EXP_VALUE_INT;
        out->int_value = number;
    } else if (value == Py_None) {
        out->type = EXP_VALUE_NULL;
    } else if (value == Py_True || value == Py_False) {
        out->type = EXP_VALUE_BOOL;
        out->bool_value = value == Py_True;
    } else if (PyFloat_CheckExact(value)) {
        out->type = EXP_VALUE_DOUBLE;
        out->double_value = PyFloat_AS_DOUBLE(value);
    } else {
        return 0;
    }
    return 1;
}

/* Fills `attributes` from a dict (or None); -1 when the fast path must not take it. The strings point
   into the dict's str objects; `held` gets each key and value (2 per attribute) and the caller takes
   references to them for the call, so a Python callback made during exp_decide (a listener that changes
   the dict) cannot free them under the library. */
static Py_ssize_t fast_attributes(PyObject *mapping, exp_attribute *attributes, PyObject **held) {
    if (mapping == NULL || mapping == Py_None) return 0;
    if (!PyDict_CheckExact(mapping) || PyDict_GET_SIZE(mapping) > MAX_FAST_ATTRIBUTES) return -1;
    Py_ssize_t position = 0, count = 0;
    PyObject *key, *value;
    while (PyDict_Next(mapping, &position, &key, &value)) {
        exp_attribute *attribute = &attributes[count];
        memset(attribute, 0, sizeof *attribute);
        attribute->key = fast_text(key);
        if (attribute->key == NULL || !fast_value(value, &attribute->value)) return -1;
        held[2 * count] = key;
        held[2 * count + 1] = value;
        count++;
    }
    return count;
}

/* Tuples of options seen last, by identity (held, so the address stays theirs), with their bits. */
static struct {
    PyObject *options;
    unsigned int bits;
} g_recent_options[OPTIONS_CACHE_SIZE];
static unsigned g_recent_next;

static void remember_options(PyObject *options, unsigned int bits) {
    unsigned slot = g_recent_next++ % OPTIONS_CACHE_SIZE;
    Py_INCREF(options);
    Py_XSETREF(g_recent_options[slot].options, options);
    g_recent_options[slot].bits = bits;
}

/* The EXP_DECIDE_* bits of an options argument, as the Python method computes them: 0 with the bits, -1
   with decide_options_to_int's error, 1 when the Python method should take the call (an unhashable tuple,
   on which its own cache lookup raises). */
static int option_bits(PyObject *options, unsigned int *bits) {
    *bits = 0;
    if (options == NULL || options == Py_None) return 0;
    int is_tuple = PyTuple_CheckExact(options);
    if (is_tuple) {
        if (PyTuple_GET_SIZE(options) == 0) return 0;
        for (int i = 0; i < OPTIONS_CACHE_SIZE; i++) {
            if (g_recent_options[i].options == options) {
                *bits = g_recent_options[i].bits;
                return 0;
            }
        }
        PyObject *known = PyDict_GetItemWithError(g_option_bits, options); /* borrowed */
        if (known == NULL && PyErr_Occurred()) {
            PyErr_Clear();
            return 1;
        }
        if (known != NULL && PyLong_CheckExact(known)) {
            unsigned long value = PyLong_AsUnsignedLong(known);
            if (value == (unsigned long)-1 && PyErr_Occurred()) return -1;
            *bits = (unsigned int)value;
            remember_options(options, *bits);
            return 0;
        }
    } else if (PyLong_CheckExact(options) || Py_IS_TYPE(options, g_option_type)) {
        long value = PyLong_AsLong(options);
        if (value == -1 && PyErr_Occurred()) PyErr_Clear();
        else if (value >= 0 && ((unsigned long)value & ~g_all_option_bits) == 0) {
            *bits = (unsigned int)value;
            return 0;
        }
    }
    PyObject *converted = PyObject_CallOneArg(g_options_to_int, options);
    if (converted == NULL) return -1;
    unsigned long value = PyLong_AsUnsignedLong(converted);
    Py_DECREF(converted);
    if (value == (unsigned long)-1 && PyErr_Occurred()) return -1;
    *bits = (unsigned int)value;
    if (is_tuple) remember_options(options, *bits);
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Results
 * ------------------------------------------------------------------------------------------------ */

/* The first of the two entries (a 2-way set) a C string's address may use in a table of `size` entries. */
static inline size_t cache_set(const void *address, size_t size) {
    uint64_t mixed = (uint64_t)(uintptr_t)address * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(mixed >> 40) % (size / 2) * 2;
}

/* str objects for the keys a decision names (variation and rule keys), by the C string's address. An
   entry is used only when its text equals the C string, so a reused address with other text (a replaced
   datafile) gets a new str. Only ASCII keys are kept. A miss moves the set's first entry to second place. */
static struct {
    const char *address;
    PyObject *text;
} g_keys[KEY_CACHE_SIZE];

static inline int same_key(PyObject *cached, const char *text) {
    Py_ssize_t length = PyUnicode_GET_LENGTH(cached);
    /* strncmp stops at the C string's end; the cached text has no NUL. */
    return strncmp((const char *)PyUnicode_DATA(cached), text, (size_t)length) == 0 && text[length] == 0;
}

/* The length of `field` of a decision (whose text is `text`), NUL bytes included: a datafile key may
   hold "\u0000". Falls back to strlen if the library answers an error (it does not for a filled decision). */
static size_t text_length(const exp_decision *decision, exp_decision_field field, size_t index, const char *text) {
    const char *same = NULL;
    size_t length = 0;
    if (g_text_n(decision, field, index, &same, &length) != EXP_OK || same != text) length = strlen(text);
    return length;
}

/* A key of `decision` as str. Repeated keys come from the small address table (only NUL-free texts are
   kept there, so same_key's strncmp sees all of them); a miss asks the library for the length. */
static PyObject *key_text(const exp_decision *decision, exp_decision_field field, const char *text) {
    if (text == NULL) Py_RETURN_NONE;
    size_t set = cache_set(text, KEY_CACHE_SIZE);
    for (size_t slot = set; slot < set + 2; slot++) {
        PyObject *cached = g_keys[slot].text;
        if (cached != NULL && g_keys[slot].address == text && same_key(cached, text)) {
            Py_INCREF(cached);
            return cached;
        }
    }
    size_t length = text_length(decision, field, 0, text);
    PyObject *made = PyUnicode_DecodeUTF8(text, (Py_ssize_t)length, "replace");
    if (made != NULL && PyUnicode_IS_COMPACT_ASCII(made) && memchr(text, 0, length) == NULL) {
        Py_XDECREF(g_keys[set + 1].text);
        g_keys[set + 1] = g_keys[set];
        Py_INCREF(made);
        g_keys[set].text = made;
        g_keys[set].address = text;
    }
    return made;
}

/* The variables dict of a decision, as the binding's _variables(bytes) makes it: each caller gets a dict
   of its own. A small table by address of variables_json (checked against the text, like g_keys) holds
   _variables' cache entry, so a repeated JSON text costs a dict copy (or a marshal load for nested
   values) without a bytes object or a Python call. */
static struct {
    const char *address;
    PyObject *json;  /* bytes */
    PyObject *entry; /* (flat dict or None, marshal snapshot or None) */
} g_variables_seen[VARIABLES_CACHE_SIZE];

static PyObject *entry_copy(PyObject *entry) {
    PyObject *flat = PyTuple_GET_ITEM(entry, 0);
    if (flat != Py_None) return PyDict_Copy(flat);
    PyObject *snapshot = PyTuple_GET_ITEM(entry, 1);
    return PyMarshal_ReadObjectFromString(PyBytes_AS_STRING(snapshot), PyBytes_GET_SIZE(snapshot));
}

static int usable_entry(PyObject *entry) {
    return entry != NULL && PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 2 &&
           (PyTuple_GET_ITEM(entry, 0) == Py_None ? PyBytes_CheckExact(PyTuple_GET_ITEM(entry, 1))
                                                  : PyDict_CheckExact(PyTuple_GET_ITEM(entry, 0)));
}

static PyObject *variables_dict(const char *json) {
    if (json == NULL || (json[0] == '{' && json[1] == '}' && json[2] == 0)) return PyDict_New();
    size_t set = cache_set(json, VARIABLES_CACHE_SIZE);
    size_t length = strlen(json);
    for (size_t slot = set; slot < set + 2; slot++) {
        PyObject *seen = g_variables_seen[slot].json;
        if (g_variables_seen[slot].address == json && seen != NULL && (size_t)PyBytes_GET_SIZE(seen) == length &&
            memcmp(PyBytes_AS_STRING(seen), json, length) == 0)
            return entry_copy(g_variables_seen[slot].entry);
    }
    PyObject *raw = PyBytes_FromStringAndSize(json, (Py_ssize_t)length);
    if (raw == NULL) return NULL;
    PyObject *result = PyObject_CallOneArg(g_variables, raw);
    PyObject *entry = result ? PyDict_GetItemWithError(g_variables_cache, raw) : NULL; /* borrowed */
    if (usable_entry(entry)) {
        Py_XDECREF(g_variables_seen[set + 1].json);
        Py_XDECREF(g_variables_seen[set + 1].entry);
        g_variables_seen[set + 1] = g_variables_seen[set];
        Py_INCREF(entry);
        g_variables_seen[set].entry = entry;
        g_variables_seen[set].json = raw; /* takes the reference */
        g_variables_seen[set].address = json;
        raw = NULL;
    }
    if (result != NULL && PyErr_Occurred()) PyErr_Clear(); /* a failed lookup only means: not kept here */
    Py_XDECREF(raw);
    return result;
}

static PyObject *reason_list(const exp_decision *decision) {
    PyObject *reasons = PyList_New((Py_ssize_t)decision->reason_count);
    if (reasons == NULL) return NULL;
    for (size_t index = 0; index < decision->reason_count; index++) {
        const char *text = decision->reasons[index];
        /* A reason may quote a user id holding NUL bytes: its whole length comes from the library. */
        PyObject *reason = text ? PyUnicode_DecodeUTF8(text, (Py_ssize_t)text_length(decision, EXP_DECISION_REASON,
                                                                                   index, text), "replace")
                                : (Py_INCREF(Py_None), Py_None);
        if (reason == NULL) {
            Py_DECREF(reasons);
            return NULL;
        }
        PyList_SET_ITEM(reasons, (Py_ssize_t)index, reason);
    }
    return reasons;
}

/* A Decision filled like the binding's _make_decision (past the frozen dataclass's __setattr__), from six
   new references, which it takes (NULLs mean a failure before: they are released and NULL returned). */
static PyObject *new_decision(PyObject *values[6]) {
    PyObject *result = NULL;
    int complete = 1;
    for (int i = 0; i < 6; i++) complete = complete && values[i] != NULL;
    if (complete) result = g_decision_type->tp_alloc(g_decision_type, 0);
    if (result != NULL && g_fields_slotted) {
        for (int i = 0; i < 6; i++) {
            *(PyObject **)((char *)result + g_field_offsets[i]) = values[i];
            values[i] = NULL;
        }
    } else {
        for (int i = 0; result != NULL && i < 6; i++) {
            if (PyObject_GenericSetAttr(result, g_field_names[i], values[i]) < 0) Py_CLEAR(result);
        }
    }
    for (int i = 0; i < 6; i++) Py_XDECREF(values[i]);
    return result;
}

static PyObject *make_decision(PyObject *flag_key, const exp_decision *decision) {
    PyObject *values[6] = {flag_key, decision->enabled ? Py_True : Py_False, NULL, NULL, NULL, NULL};
    Py_INCREF(values[0]);
    Py_INCREF(values[1]);
    values[2] = key_text(decision, EXP_DECISION_VARIATION_KEY, decision->variation_key);
    values[3] = values[2] ? key_text(decision, EXP_DECISION_RULE_KEY, decision->rule_key) : NULL;
    values[4] = values[3] ? variables_dict(decision->variables_json) : NULL;
    values[5] = values[4] ? reason_list(decision) : NULL;
    return new_decision(values);
}

/* new_decision(flag_key, enabled, variation_key, rule_key, variables, reasons): the binding's _make_decision */
static PyObject *speedups_new_decision(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "new_decision(flag_key, enabled, variation_key, rule_key, variables, reasons)");
        return NULL;
    }
    if (g_decision_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "experiment._speedups: install() was not called");
        return NULL;
    }
    PyObject *values[6];
    for (int i = 0; i < 6; i++) {
        values[i] = args[i];
        Py_INCREF(values[i]);
    }
    return new_decision(values);
}

/* decisions_by_flag(address, count) -> {flag_key: Decision} for count filled exp_decisions at address
   (decide_all and decide_for_keys; the caller releases them). */
static PyObject *speedups_decisions_by_flag(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "decisions_by_flag(address, count)");
        return NULL;
    }
    if (g_decision_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "experiment._speedups: install() was not called");
        return NULL;
    }
    const exp_decision *decisions = (const exp_decision *)PyLong_AsVoidPtr(args[0]);
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    if (PyErr_Occurred()) return NULL;
    if ((decisions == NULL && count > 0) || count < 0) {
        PyErr_SetString(PyExc_ValueError, "decisions_by_flag: no decisions at a NULL address");
        return NULL;
    }
    PyObject *result = PyDict_New();
    for (Py_ssize_t i = 0; result != NULL && i < count; i++) {
        PyObject *flag_key = key_text(&decisions[i], EXP_DECISION_FLAG_KEY, decisions[i].flag_key);
        PyObject *decision = flag_key ? make_decision(flag_key, &decisions[i]) : NULL;
        if (decision == NULL || PyDict_SetItem(result, flag_key, decision) < 0) Py_CLEAR(result);
        Py_XDECREF(flag_key);
        Py_XDECREF(decision);
    }
    return result;
}

/* ------------------------------------------------------------------------------------------------
 * FastMethod: Client.decide / Client.variation_key
 * ------------------------------------------------------------------------------------------------ */

enum method_kind { VARIATION_KEY = 0, DECIDE = 1 };

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *function; /* the binding's Python method: the reference, and the path for everything else */
    int kind;
} FastMethod;

/* (self, user_id, flag_key, attributes=None, options=()) from a vectorcall into `bound`; 0 when the call
   has another shape (the Python method then raises its TypeError). */
static int bind_arguments(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject *bound[5]) {
    if (nargs < 1 || nargs > 5) return 0;
    for (Py_ssize_t i = 0; i < 5; i++) bound[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < keywords; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int index = -1;
        for (int i = 0; i < 4 && index < 0; i++)
            if (name == g_argument_names[i]) index = i + 1;
        for (int i = 0; i < 4 && index < 0; i++)
            if (PyUnicode_Compare(name, g_argument_names[i]) == 0) index = i + 1;
        if (PyErr_Occurred()) PyErr_Clear();
        if (index < 0 || bound[index] != NULL) return 0;
        bound[index] = args[nargs + k];
    }
    return bound[1] != NULL && bound[2] != NULL;
}

static inline PyObject *slot_value(PyObject *object, Py_ssize_t offset) {
    return *(PyObject **)((char *)object + offset);
}

static PyObject *fast_method_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    FastMethod *method = (FastMethod *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *bound[5];
    if (!bind_arguments(args, nargs, kwnames, bound) || !PyObject_TypeCheck(bound[0], g_client_type))
        return PyObject_Vectorcall(method->function, args, nargsf, kwnames);
    PyObject *self = bound[0];
    PyObject *handle = slot_value(self, g_handle_offset);
    PyObject *native = slot_value(self, g_native_offset);
    if (handle == NULL || handle == Py_None || native == NULL || !Py_IS_TYPE(native, &NativeType))
        return PyObject_Vectorcall(method->function, args, nargsf, kwnames); /* closed: ClosedError */

    unsigned int bits;
    int options = option_bits(bound[4], &bits);
    if (options < 0) return NULL;
    const char *user = options == 0 ? fast_text(bound[1]) : NULL;
    const char *flag = user ? fast_text(bound[2]) : NULL;
    exp_attribute attributes[MAX_FAST_ATTRIBUTES];
    PyObject *held[2 * MAX_FAST_ATTRIBUTES];
    Py_ssize_t count = flag ? fast_attributes(bound[3], attributes, held) : -1;
    if (count < 0) return PyObject_Vectorcall(method->function, args, nargsf, kwnames);

    /* Our own reference: a close() during a Python callback made by exp_decide frees the client after us. */
    Py_INCREF(handle);
    for (Py_ssize_t i = 0; i < 2 * count; i++) Py_INCREF(held[i]);
    exp_decision decision;
    memset(&decision, 0, sizeof decision);
    exp_client *client = ((Native *)native)->client;
    exp_status status;
    /* Without the GIL when the call may wait: on the profile store, or on the event queue (an impression). */
    int release_gil = ((Native *)native)->store_may_wait ||
                      !(((Native *)native)->events_off || (bits & EXP_DECIDE_DISABLE_DECISION_EVENT));
    if (release_gil) {
        Py_BEGIN_ALLOW_THREADS
        status = g_decide(client, user, flag, count ? attributes : NULL, (size_t)count, bits, &decision);
        Py_END_ALLOW_THREADS
    } else {
        status = g_decide(client, user, flag, count ? attributes : NULL, (size_t)count, bits, &decision);
    }
    PyObject *result;
    if (status != EXP_OK) {
        /* Not ready, unknown flag, a key past the limits: nothing was decided or sent, so the Python method
           decides again and answers as the reference SDK does (an error decision and a log message). */
        g_release(&decision);
        for (Py_ssize_t i = 0; i < 2 * count; i++) Py_DECREF(held[i]);
        Py_DECREF(handle);
        return PyObject_Vectorcall(method->function, args, nargsf, kwnames);
    } else if (method->kind == VARIATION_KEY) {
        result = key_text(&decision, EXP_DECISION_VARIATION_KEY, decision.variation_key);
    } else {
        result = make_decision(bound[2], &decision);
    }
    g_release(&decision);
    for (Py_ssize_t i = 0; i < 2 * count; i++) Py_DECREF(held[i]);
    Py_DECREF(handle);
    return result;
}

static PyObject *fast_method_get(PyObject *self, PyObject *object, PyObject *type) {
    (void)type;
    if (object == NULL || object == Py_None) {
        PyObject *function = ((FastMethod *)self)->function;
        Py_INCREF(function);
        return function; /* Client.decide is the plain Python function (help, inspect) */
    }
    return PyMethod_New(self, object);
}

static PyObject *fast_method_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *function;
    int kind;
    if (!PyArg_ParseTuple(args, "Oi:FastMethod", &function, &kind)) return NULL;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "FastMethod(function, kind) takes no keyword arguments");
        return NULL;
    }
    if (!PyCallable_Check(function) || (kind != VARIATION_KEY && kind != DECIDE)) {
        PyErr_SetString(PyExc_ValueError, "FastMethod(function, kind): a callable and 0 (variation_key) or 1 (decide)");
        return NULL;
    }
    FastMethod *self = (FastMethod *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = fast_method_call;
    Py_INCREF(function);
    self->function = function;
    self->kind = kind;
    return (PyObject *)self;
}

static int fast_method_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((FastMethod *)self)->function);
    return 0;
}

static int fast_method_clear(PyObject *self) {
    Py_CLEAR(((FastMethod *)self)->function);
    return 0;
}

static void fast_method_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    fast_method_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *fast_method_attribute(PyObject *self, void *name) {
    return PyObject_GetAttrString(((FastMethod *)self)->function, (const char *)name);
}

static PyObject *fast_method_wrapped(PyObject *self, void *unused) {
    (void)unused;
    PyObject *function = ((FastMethod *)self)->function;
    Py_INCREF(function);
    return function;
}

static PyObject *fast_method_repr(PyObject *self) {
    return PyUnicode_FromFormat("<fast method %R>", ((FastMethod *)self)->function);
}

static PyGetSetDef fast_method_getset[] = {
    {"__doc__", fast_method_attribute, NULL, NULL, "__doc__"},
    {"__name__", fast_method_attribute, NULL, NULL, "__name__"},
    {"__qualname__", fast_method_attribute, NULL, NULL, "__qualname__"},
    {"__module__", fast_method_attribute, NULL, NULL, "__module__"},
    {"__wrapped__", fast_method_wrapped, NULL, "the Python method this one speeds up", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FastMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "experiment._speedups.FastMethod",
    .tp_basicsize = sizeof(FastMethod),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(FastMethod, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = fast_method_get,
    .tp_new = fast_method_new,
    .tp_traverse = fast_method_traverse,
    .tp_clear = fast_method_clear,
    .tp_dealloc = fast_method_dealloc,
    .tp_repr = fast_method_repr,
    .tp_getset = fast_method_getset,
};

/* ------------------------------------------------------------------------------------------------
 * install()
 * ------------------------------------------------------------------------------------------------ */

static int slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset) {
    PyObject *descriptor = PyDict_GetItemString(type->tp_dict, name); /* borrowed */
    if (descriptor == NULL || !Py_IS_TYPE(descriptor, &PyMemberDescr_Type) ||
        ((PyMemberDescrObject *)descriptor)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "install: %s.%s is not a __slots__ member", type->tp_name, name);
        return -1;
    }
    *offset = ((PyMemberDescrObject *)descriptor)->d_member->offset;
    return 0;
}

/* The __slots__ offsets of Decision's fields; 0 when it keeps them in a __dict__. */
static int decision_slots(PyTypeObject *type) {
    for (int i = 0; i < 6; i++) {
        PyObject *descriptor = PyDict_GetItemWithError(type->tp_dict, g_field_names[i]); /* borrowed */
        if (descriptor == NULL || !Py_IS_TYPE(descriptor, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)descriptor)->d_member->type != T_OBJECT_EX) {
            PyErr_Clear();
            return 0;
        }
        g_field_offsets[i] = ((PyMemberDescrObject *)descriptor)->d_member->offset;
    }
    return 1;
}

static int hook(PyObject *hooks, const char *name, PyObject **out) {
    PyObject *value = PyDict_GetItemString(hooks, name); /* borrowed */
    if (value == NULL) {
        PyErr_Format(PyExc_KeyError, "install: hook %s missing", name);
        return -1;
    }
    Py_INCREF(value);
    Py_XSETREF(*out, value);
    return 0;
}

/* install(decide_address, release_address, hooks: dict); hooks["decision_text_n"] is the address of
   exp_decision_text_n */
static PyObject *speedups_install(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "install(decide_address, release_address, hooks)");
        return NULL;
    }
    void *decide = PyLong_AsVoidPtr(args[0]);
    void *release = PyLong_AsVoidPtr(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (decide == NULL || release == NULL) {
        PyErr_SetString(PyExc_ValueError, "install: NULL function address");
        return NULL;
    }
    PyObject *hooks = args[2];
    PyObject *client_type = NULL, *option_type = NULL, *decision_type = NULL, *all_bits = NULL, *text_n = NULL;
    int failed = hook(hooks, "decision_text_n", &text_n) || hook(hooks, "Client", &client_type) || hook(hooks, "DecideOption", &option_type) ||
                 hook(hooks, "Decision", &decision_type) || hook(hooks, "all_option_bits", &all_bits) ||
                 hook(hooks, "raise_status", &g_raise_status) ||
                 hook(hooks, "decide_options_to_int", &g_options_to_int) ||
                 hook(hooks, "option_bits", &g_option_bits) || hook(hooks, "variables", &g_variables) ||
                 hook(hooks, "variables_cache", &g_variables_cache);
    if (!failed && (!PyType_Check(client_type) || !PyType_Check(option_type) || !PyType_Check(decision_type) ||
                    !PyDict_Check(g_option_bits) || !PyDict_Check(g_variables_cache))) {
        PyErr_SetString(PyExc_TypeError, "install: unexpected hook types");
        failed = 1;
    }
    if (!failed) {
        g_client_type = (PyTypeObject *)client_type;
        g_option_type = (PyTypeObject *)option_type;
        g_decision_type = (PyTypeObject *)decision_type;
        client_type = option_type = decision_type = NULL; /* kept for good */
        g_all_option_bits = PyLong_AsUnsignedLong(all_bits);
        g_text_n = (text_n_fn)PyLong_AsVoidPtr(text_n);
        if (g_text_n == NULL && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "install: NULL decision_text_n");
        g_fields_slotted = decision_slots(g_decision_type);
        failed = PyErr_Occurred() != NULL || slot_offset(g_client_type, "_h", &g_handle_offset) < 0 ||
                 slot_offset(g_client_type, "_native", &g_native_offset) < 0;
    }
    Py_XDECREF(client_type);
    Py_XDECREF(option_type);
    Py_XDECREF(decision_type);
    Py_XDECREF(all_bits);
    Py_XDECREF(text_n);
    if (failed) return NULL;
    g_decide = (decide_fn)decide;
    g_release = (release_fn)release;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------------
 * User contexts (user_context.py): UserContext.decide's native call and its UserDecision
 * ------------------------------------------------------------------------------------------------ */

typedef exp_status (*user_decide_fn)(void *, const char *, size_t, unsigned int, exp_decision *);
static user_decide_fn g_user_decide;
static PyTypeObject *g_user_decision_type; /* UserDecision: Decision's slots plus user_context */
static Py_ssize_t g_user_context_offset;

/* install_user_context(user_decide_address, UserDecision), after install() */
static PyObject *speedups_install_user_context(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2 || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "install_user_context(user_decide_address, UserDecision)");
        return NULL;
    }
    void *decide = PyLong_AsVoidPtr(args[0]);
    if (PyErr_Occurred()) return NULL;
    PyTypeObject *type = (PyTypeObject *)args[1];
    if (decide == NULL || g_release == NULL || !g_fields_slotted || !PyType_IsSubtype(type, g_decision_type)) {
        PyErr_SetString(PyExc_ValueError, "install_user_context: needs install() first and a slotted Decision subclass");
        return NULL;
    }
    if (slot_offset(type, "user_context", &g_user_context_offset) < 0) return NULL;
    Py_INCREF(type);
    Py_XSETREF(g_user_decision_type, type);
    g_user_decide = (user_decide_fn)decide;
    Py_RETURN_NONE;
}

/* user_decide(user_address, flag_key, options, user_context) -> UserDecision; the status (an int) when the
   call failed; None for a flag key this path does not take (not an exact str, lone surrogates): the
   caller's Python path then decides. */
static PyObject *speedups_user_decide(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4 || g_user_decide == NULL) {
        PyErr_SetString(PyExc_TypeError, "user_decide(user_address, flag_key, options, user_context)");
        return NULL;
    }
    void *user = PyLong_AsVoidPtr(args[0]);
    unsigned long options = PyLong_AsUnsignedLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (!PyUnicode_CheckExact(args[1])) Py_RETURN_NONE;
    Py_ssize_t length = 0;
    const char *key = PyUnicode_AsUTF8AndSize(args[1], &length);
    if (key == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    exp_decision decision;
    memset(&decision, 0, sizeof decision);
    exp_status status;
    /* The call may wait on a profile store or the event queue: other threads run meanwhile. The key's
       bytes belong to the str the caller holds. */
    Py_BEGIN_ALLOW_THREADS
    status = g_user_decide(user, key, (size_t)length, (unsigned int)options, &decision);
    Py_END_ALLOW_THREADS
    if (status != EXP_OK) return PyLong_FromLong(status);
    PyObject *values[6] = {args[1], decision.enabled ? Py_True : Py_False, NULL, NULL, NULL, NULL};
    Py_INCREF(values[0]);
    Py_INCREF(values[1]);
    values[2] = key_text(&decision, EXP_DECISION_VARIATION_KEY, decision.variation_key);
    values[3] = values[2] ? key_text(&decision, EXP_DECISION_RULE_KEY, decision.rule_key) : NULL;
    values[4] = values[3] ? variables_dict(decision.variables_json) : NULL;
    values[5] = values[4] ? reason_list(&decision) : NULL;
    g_release(&decision);
    PyObject *result = NULL;
    int complete = 1;
    for (int i = 0; i < 6; i++) complete = complete && values[i] != NULL;
    if (complete) result = g_user_decision_type->tp_alloc(g_user_decision_type, 0);
    if (result != NULL) {
        for (int i = 0; i < 6; i++) {
            *(PyObject **)((char *)result + g_field_offsets[i]) = values[i];
            values[i] = NULL;
        }
        Py_INCREF(args[3]);
        *(PyObject **)((char *)result + g_user_context_offset) = args[3];
    }
    for (int i = 0; i < 6; i++) Py_XDECREF(values[i]);
    return result;
}

static PyMethodDef speedups_methods[] = {
    {"install", (PyCFunction)(void (*)(void))speedups_install, METH_FASTCALL,
     "install(decide_address, release_address, hooks): wires the module to the binding and its library"},
    {"decisions_by_flag", (PyCFunction)(void (*)(void))speedups_decisions_by_flag, METH_FASTCALL,
     "decisions_by_flag(address, count) -> {flag_key: Decision} from filled exp_decisions"},
    {"new_decision", (PyCFunction)(void (*)(void))speedups_new_decision, METH_FASTCALL,
     "new_decision(flag_key, enabled, variation_key, rule_key, variables, reasons) -> Decision"},
    {"install_user_context", (PyCFunction)(void (*)(void))speedups_install_user_context, METH_FASTCALL,
     "install_user_context(user_decide_address, UserDecision): UserContext.decide's native call"},
    {"user_decide", (PyCFunction)(void (*)(void))speedups_user_decide, METH_FASTCALL,
     "user_decide(user_address, flag_key, options, user_context) -> UserDecision, status or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "experiment._speedups", "C fast path for experiment.Client.decide (optional).", -1,
    speedups_methods, NULL, NULL, NULL, NULL,
};

static int intern_names(PyObject **out, const char *const *names, int count) {
    for (int i = 0; i < count; i++) {
        out[i] = PyUnicode_InternFromString(names[i]);
        if (out[i] == NULL) return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__speedups(void) {
    static const char *const fields[6] = {"flag_key", "enabled", "variation_key", "rule_key", "variables", "reasons"};
    static const char *const arguments[4] = {"user_id", "flag_key", "attributes", "options"};
    if (intern_names(g_field_names, fields, 6) < 0 || intern_names(g_argument_names, arguments, 4) < 0) return NULL;
    if (PyType_Ready(&NativeType) < 0 || PyType_Ready(&FastMethodType) < 0) return NULL;
    PyObject *module = PyModule_Create(&speedups_module);
    if (module == NULL) return NULL;
    Py_INCREF(&NativeType);
    Py_INCREF(&FastMethodType);
    if (PyModule_AddObject(module, "Native", (PyObject *)&NativeType) < 0 ||
        PyModule_AddObject(module, "FastMethod", (PyObject *)&FastMethodType) < 0 ||
        PyModule_AddIntConstant(module, "VARIATION_KEY", VARIATION_KEY) < 0 ||
        PyModule_AddIntConstant(module, "DECIDE", DECIDE) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
