"""A CPython extension-module wrapper around generated kernel functions.

Each kernel ``int64_t kN(void **bufs)`` gets a function ``kN(list_of_arrays)`` that
takes the buffers' addresses through the buffer protocol (operands it reads as they
are, so a read-only array is a valid input; the buffers it writes must be writable;
all C-contiguous), releases the GIL, runs the kernel and returns its status
(0, or an allocation failure the caller turns into ``MemoryError``). All of them share
one C body and a table of kernels, so the wrapper's size barely grows with the
number of kernels. Calling a function of an extension module costs far less than a
ctypes call. :func:`load_module` imports a built module from its shared object (the
native kernels' wrapper, the xla backend's C call path).
"""
from __future__ import annotations


def module_source(module: str, kernels: dict[str, str],
                  entry: str | None = None) -> str:
    """C source of the module; ``kernels`` maps name -> the direction of each buffer
    in the kernel's C order, ``"i"`` (read) or ``"o"`` (written), e.g. ``"ioi"``: a
    fused kernel's outputs need not come after its inputs.

    With ``entry`` (an ``int64_t entry(void **ins, void **outs)`` running the whole
    program) the module also has ``launch(submit, arrays, n_in, status)``: it hands
    ``entry``, the arrays' addresses and ``status`` (the address of an ``int64_t`` the
    worker stores ``entry``'s result in) to ``submit`` (the address of an
    ``int64_t submit(fn, ins, n_in, outs, n_out, status)`` queueing function) and
    returns what it returns. The caller keeps the arrays and the status word alive
    until the launch completes.
    """
    out = ["#define PY_SSIZE_T_CLEAN", "#include <Python.h>", ""]
    # one generic method body for every kernel (the C compiler's time grows with the
    # wrapper too): each method's ``self`` is its index into a table of kernels
    if any(set(kinds) - {"i", "o"} for kinds in kernels.values()):
        raise ValueError("module_source: buffer directions are 'i' or 'o'")
    table = ",\n".join(f'  {{"{name}", {name}, "{kinds}", {len(kinds)}}}'
                        for name, kinds in kernels.items())
    most = max([len(kinds) for kinds in kernels.values()] + [1])
    out.append(_KERNELS.replace("@TABLE@", table or '  {"", 0, "", 0}')
               .replace("@N_KERNELS@", str(len(kernels))).replace("@MOST@", str(most)))
    methods = ""
    if entry is not None:
        out.append(_LAUNCH.replace("ENTRY", entry))
        methods = '  {"launch", py_launch, METH_VARARGS, NULL},\n'
    out.append(f"static PyMethodDef methods[] = {{\n{methods}  {{NULL, NULL, 0, NULL}}\n}};")
    out.append(f'static struct PyModuleDef moddef = {{PyModuleDef_HEAD_INIT, "{module}", NULL, -1, '
               f'methods}};')
    out.append(_INIT.replace("@MODULE@", module))
    return "\n".join(out)


_KERNELS = r"""
typedef struct { const char *name; int64_t (*fn)(void **); const char *kinds; int n; }
  plait_kernel_t;
static const plait_kernel_t plait_kernels[] = {
@TABLE@
};
static PyMethodDef plait_kernel_defs[@N_KERNELS@ + 1];

static PyObject *py_kernel(PyObject *self, PyObject *arg) {
  Py_ssize_t k = PyLong_AsSsize_t(self);
  if (k < 0 || k >= @N_KERNELS@) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "bad kernel index");
    return NULL;
  }
  const plait_kernel_t *kd = &plait_kernels[k];
  PyObject *seq = PySequence_Fast(arg, "expected a list of arrays");
  if (!seq) return NULL;
  if (PySequence_Fast_GET_SIZE(seq) != kd->n) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_TypeError, "%s: expected %d arrays", kd->name, kd->n);
    return NULL;
  }
  Py_buffer views[@MOST@];
  void *ptrs[@MOST@];
  int got = 0;
  for (; got < kd->n; ++got) {
    int flags = kd->kinds[got] == 'o' ? (PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) : PyBUF_C_CONTIGUOUS;
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &views[got], flags) < 0) break;
    ptrs[got] = views[got].buf;
  }
  long long status = 0;
  if (got == kd->n) {
    Py_BEGIN_ALLOW_THREADS
    status = kd->fn(ptrs);
    Py_END_ALLOW_THREADS
  }
  for (int i = 0; i < got; ++i) PyBuffer_Release(&views[i]);
  Py_DECREF(seq);
  if (got != kd->n) return NULL;
  return PyLong_FromLongLong(status);
}
"""

_INIT = r"""
PyMODINIT_FUNC PyInit_@MODULE@(void) {
  PyObject *m = PyModule_Create(&moddef);
  if (!m) return NULL;
  for (Py_ssize_t k = 0; k < (Py_ssize_t)(sizeof plait_kernels / sizeof plait_kernels[0]); ++k) {
    if (!plait_kernels[k].fn) continue;
    PyMethodDef *d = &plait_kernel_defs[k];
    d->ml_name = plait_kernels[k].name;
    d->ml_meth = py_kernel;
    d->ml_flags = METH_O;
    d->ml_doc = NULL;
    PyObject *idx = PyLong_FromSsize_t(k);
    PyObject *fn = idx ? PyCFunction_NewEx(d, idx, NULL) : NULL;
    Py_XDECREF(idx);
    if (!fn || PyModule_AddObject(m, plait_kernels[k].name, fn) < 0) {
      Py_XDECREF(fn);
      Py_DECREF(m);
      return NULL;
    }
  }
  return m;
}
"""


_LAUNCH = r"""
typedef long long (*plait_submit_fn)(int64_t (*)(void **, void **), void **, long long,
                                     void **, long long, int64_t *);
static PyObject *py_launch(PyObject *self, PyObject *args) {
  unsigned long long submit, status;
  PyObject *list;
  Py_ssize_t n_in;
  if (!PyArg_ParseTuple(args, "KOnK", &submit, &list, &n_in, &status)) return NULL;
  PyObject *seq = PySequence_Fast(list, "launch: expected a list of arrays");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n_in < 0 || n_in > n) {
    Py_DECREF(seq);
    PyErr_SetString(PyExc_ValueError, "launch: n_in out of range");
    return NULL;
  }
  void **ptrs = malloc(sizeof(void *) * (size_t)(n + 1));
  if (!ptrs) { Py_DECREF(seq); return PyErr_NoMemory(); }
  Py_ssize_t got = 0;
  for (; got < n; ++got) {
    Py_buffer view;
    int flags = got < n_in ? PyBUF_C_CONTIGUOUS : (PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE);
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &view, flags) < 0) break;
    ptrs[got] = view.buf;
    PyBuffer_Release(&view);   /* the caller keeps the array alive */
  }
  long long ticket = -1;
  if (got == n)
    ticket = ((plait_submit_fn)(uintptr_t)submit)(ENTRY, ptrs, n_in, ptrs + n_in, n - n_in,
                                                  (int64_t *)(uintptr_t)status);
  free(ptrs);
  Py_DECREF(seq);
  if (got != n) return NULL;
  return PyLong_FromLongLong(ticket);
}
"""


def load_module(name: str, path: str):
    """Import the extension module ``name`` from the shared object ``path`` (the caller
    keeps it, e.g. in the kernel cache's bounded index; CPython's own ``sys.modules``
    entry is dropped)."""
    import importlib.machinery
    import importlib.util
    import sys
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    sys.modules.pop(name, None)
    return mod
