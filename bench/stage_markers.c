/* Marker functions for bench/stages.py: one C function per stage of a request.
 *
 * Python code runs inside the interpreter's one evaluation function, so
 * callgrind cannot tell a Python function's instructions from another's. Each
 * marker here calls a Python callable and returns its result; callgrind counts
 * everything executed inside it as that marker's inclusive cost, so calling a
 * stage's functions through its marker attributes their instructions to the
 * stage. bench/stages.py compiles this file (gcc, Python's headers) into an
 * extension module at run time.
 *
 * Each marker is its own function with its own symbol: -fno-ipa-icf keeps
 * gcc from folding the identical bodies into one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *step(PyObject *coro);

/* stage_<name>(f, *args, **kwargs): f(*args, **kwargs), counted as the stage's. */
#define MARKER(name)                                                                      \
    __attribute__((noinline)) PyObject *stage_##name(                                     \
        PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)      \
    {                                                                                      \
        (void)module;                                                                      \
        nargs = PyVectorcall_NARGS(nargs);                                                 \
        if (nargs < 1) {                                                                   \
            PyErr_SetString(PyExc_TypeError, "a marker needs the callable to run");       \
            return NULL;                                                                   \
        }                                                                                  \
        return PyObject_Vectorcall(args[0], args + 1, nargs - 1, kwnames);                 \
    }                                                                                      \
    /* stage_<name>_step(coro): one step of a coroutine, as (value, finished). */          \
    __attribute__((noinline)) PyObject *stage_##name##_step(PyObject *module, PyObject *coro) \
    {                                                                                      \
        (void)module;                                                                      \
        return step(coro);                                                                 \
    }

/* Resume a coroutine with None, as an asyncio task does, without the
 * StopIteration a Python caller would have to catch: (what it returned, True)
 * when it finished, (what it waits on, False) when it suspended. */
static PyObject *step(PyObject *coro)
{
    PyObject *result = NULL;
    PySendResult outcome = PyIter_Send(coro, Py_None, &result);
    if (outcome == PYGEN_ERROR)
        return NULL;
    return Py_BuildValue("(NO)", result, outcome == PYGEN_RETURN ? Py_True : Py_False);
}

MARKER(receive)
MARKER(app)
MARKER(route)
MARKER(auth)
MARKER(limits)
MARKER(faults)
MARKER(answer)
MARKER(headers)
MARKER(journal)
MARKER(send)
MARKER(calibrate)

/* A callable as a method: bound to the instance it is read from, like a function. */
static PyObject *as_method(PyObject *module, PyObject *callable)
{
    (void)module;
    return PyInstanceMethod_New(callable);
}

#define ENTRY(name)                                                                        \
    {#name, (PyCFunction)(void (*)(void))stage_##name, METH_FASTCALL | METH_KEYWORDS, NULL}, \
    {#name "_step", (PyCFunction)stage_##name##_step, METH_O, NULL}

static PyMethodDef methods[] = {
    ENTRY(receive), ENTRY(app),     ENTRY(route),   ENTRY(auth),
    ENTRY(limits),  ENTRY(faults),  ENTRY(answer),  ENTRY(headers),
    ENTRY(journal), ENTRY(send),    ENTRY(calibrate),
    {"as_method", as_method, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "stage_markers", NULL, -1, methods};

PyMODINIT_FUNC PyInit_stage_markers(void) { return PyModule_Create(&module); }
