/*
 * Optional accelerator for the binding's decide path (the ctypes binding works without it).
 *
 * ctypes spends more time converting arguments than libexperiment spends deciding: ~2 µs against
 * ~0.25 µs. This module calls exp_decide with the arguments converted in C. It links nothing: the
 * binding hands it the addresses of exp_decide and exp_decision_release from the library it loaded
 * with ctypes, so both always talk to the same libexperiment.so.
 *
 * Every function answers NotImplemented for an input outside its fast path (a str subclass, a
 * non-dict attributes mapping, an unsupported value type, an int beyond 64 bits, a string with NUL
 * or lone surrogates, more than MAX_FAST_ATTRIBUTES attributes): the binding then takes its ctypes
 * path, which applies the same rules and raises the documented errors. A non-OK status comes back
 * as an int; the binding reads exp_last_error() on the same thread (the GIL is held throughout).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "experiment.h"

enum { MAX_FAST_ATTRIBUTES = 64 };

typedef exp_status (*decide_fn)(exp_client *, const char *, const char *, const exp_attribute *, size_t,
                                unsigned int, exp_decision *);
typedef void (*release_fn)(exp_decision *);

static decide_fn g_decide;
static release_fn g_release;

/* install(decide_address, release_address) */
static PyObject *speedups_install(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "install(decide_address, release_address)");
        return NULL;
    }
    void *decide = PyLong_AsVoidPtr(args[0]);
    void *release = PyLong_AsVoidPtr(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (decide == NULL || release == NULL) {
        PyErr_SetString(PyExc_ValueError, "install: NULL function address");
        return NULL;
    }
    g_decide = (decide_fn)decide;
    g_release = (release_fn)release;
    Py_RETURN_NONE;
}

/* UTF-8 of an exact str without NUL; NULL (and no Python error set) when the fast path must not take it. */
static const char *fast_text(PyObject *value, Py_ssize_t *length) {
    if (!PyUnicode_CheckExact(value)) return NULL;
    Py_ssize_t size = 0;
    const char *text = PyUnicode_AsUTF8AndSize(value, &size); /* cached in the str object */
    if (text == NULL) {
        PyErr_Clear(); /* lone surrogates: the ctypes path reports them */
        return NULL;
    }
    if (memchr(text, 0, (size_t)size) != NULL) return NULL;
    if (length) *length = size;
    return text;
}

/* One attribute value; 0 when the fast path must not take it. bool before int (bool is an int). */
static int fast_value(PyObject *value, exp_value *out) {
    if (value == Py_None) {
        out->type = EXP_VALUE_NULL;
    } else if (value == Py_True || value == Py_False) {
        out->type = EXP_VALUE_BOOL;
        out->bool_value = value == Py_True;
    } else if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow != 0) return 0;
        out->type = EXP_VALUE_INT;
        out->int_value = number;
    } else if (PyFloat_CheckExact(value)) {
        out->type = EXP_VALUE_DOUBLE;
        out->double_value = PyFloat_AS_DOUBLE(value);
    } else {
        const char *text = fast_text(value, NULL);
        if (text == NULL) return 0;
        out->type = EXP_VALUE_STRING;
        out->string_value = text;
    }
    return 1;
}

/* Fills `attributes` from a dict (or None); -1 when the fast path must not take it. The strings point
   into the dict's str objects, which the caller's references keep alive for the call. */
static Py_ssize_t fast_attributes(PyObject *mapping, exp_attribute *attributes) {
    if (mapping == Py_None) return 0;
    if (!PyDict_CheckExact(mapping) || PyDict_GET_SIZE(mapping) > MAX_FAST_ATTRIBUTES) return -1;
    Py_ssize_t position = 0, count = 0;
    PyObject *key, *value;
    while (PyDict_Next(mapping, &position, &key, &value)) {
        exp_attribute *attribute = &attributes[count];
        memset(attribute, 0, sizeof *attribute);
        attribute->key = fast_text(key, NULL);
        if (attribute->key == NULL || !fast_value(value, &attribute->value)) return -1;
        count++;
    }
    return count;
}

static PyObject *optional_text(const char *text) {
    if (text == NULL) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
}

/* Runs exp_decide for (handle, user_id, flag_key, attributes, option_bits); `finish` turns the filled
   decision into the result. */
static PyObject *decide_with(PyObject *const *args, Py_ssize_t nargs, PyObject *(*finish)(const exp_decision *)) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "expected (handle, user_id, flag_key, attributes, option_bits)");
        return NULL;
    }
    if (g_decide == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "experiment._speedups: install() was not called");
        return NULL;
    }
    exp_client *client = (exp_client *)PyLong_AsVoidPtr(args[0]);
    if (client == NULL && PyErr_Occurred()) return NULL;
    unsigned long bits = PyLong_AsUnsignedLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    const char *user = fast_text(args[1], NULL);
    const char *flag = fast_text(args[2], NULL);
    exp_attribute attributes[MAX_FAST_ATTRIBUTES];
    Py_ssize_t count = user && flag ? fast_attributes(args[3], attributes) : -1;
    if (count < 0 || bits > 0xFFFFFFFFul) Py_RETURN_NOTIMPLEMENTED;

    exp_decision decision;
    memset(&decision, 0, sizeof decision);
    exp_status status = g_decide(client, user, flag, count ? attributes : NULL, (size_t)count,
                                 (unsigned int)bits, &decision);
    if (status != EXP_OK) return PyLong_FromLong((long)status);
    PyObject *result = finish(&decision);
    g_release(&decision);
    return result;
}

static PyObject *finish_variation_key(const exp_decision *decision) { return optional_text(decision->variation_key); }

/* (enabled, variation_key, rule_key, variables_json bytes or None, reasons list) */
static PyObject *finish_decision(const exp_decision *decision) {
    PyObject *reasons = PyList_New((Py_ssize_t)decision->reason_count);
    if (reasons == NULL) return NULL;
    for (size_t index = 0; index < decision->reason_count; index++) {
        PyObject *reason = optional_text(decision->reasons[index]);
        if (reason == NULL) {
            Py_DECREF(reasons);
            return NULL;
        }
        PyList_SET_ITEM(reasons, (Py_ssize_t)index, reason);
    }
    PyObject *variables = decision->variables_json ? PyBytes_FromString(decision->variables_json)
                                                   : (Py_INCREF(Py_None), Py_None);
    PyObject *variation = optional_text(decision->variation_key);
    PyObject *rule = optional_text(decision->rule_key);
    PyObject *result = NULL;
    if (variables && variation && rule)
        result = PyTuple_Pack(5, decision->enabled ? Py_True : Py_False, variation, rule, variables, reasons);
    Py_XDECREF(variables);
    Py_XDECREF(variation);
    Py_XDECREF(rule);
    Py_DECREF(reasons);
    return result;
}

/* decide(handle, user_id, flag_key, attributes, option_bits) -> tuple | int status | NotImplemented */
static PyObject *speedups_decide(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return decide_with(args, nargs, finish_decision);
}

/* variation_key(handle, user_id, flag_key, attributes, option_bits) -> str | None | int status | NotImplemented */
static PyObject *speedups_variation_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return decide_with(args, nargs, finish_variation_key);
}

static PyMethodDef speedups_methods[] = {
    {"install", (PyCFunction)(void (*)(void))speedups_install, METH_FASTCALL, "install(decide_address, release_address)"},
    {"decide", (PyCFunction)(void (*)(void))speedups_decide, METH_FASTCALL,
     "decide(handle, user_id, flag_key, attributes, option_bits)"},
    {"variation_key", (PyCFunction)(void (*)(void))speedups_variation_key, METH_FASTCALL,
     "variation_key(handle, user_id, flag_key, attributes, option_bits)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "experiment._speedups", "C fast path for experiment.Client.decide (optional).", -1,
    speedups_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&speedups_module); }
