"""A CPython extension-module wrapper around generated kernel functions.

Each kernel ``int64_t kN(void **bufs)`` gets a method ``kN(list_of_arrays)`` that takes
the buffers' addresses through the buffer protocol (inputs read-only, outputs
writable; all C-contiguous), releases the GIL, runs the kernel and returns its
status (0, or an allocation failure the caller turns into ``MemoryError``). Calling
a method of an extension module costs far less than a ctypes call.
"""
from __future__ import annotations


def module_source(module: str, kernels: dict[str, tuple[int, int]],
                  entry: str | None = None) -> str:
    """C source of the module; ``kernels`` maps name -> (number of inputs, of outputs).

    With ``entry`` (an ``int64_t entry(void **ins, void **outs)`` running the whole
    program) the module also has ``launch(submit, arrays, n_in, status)``: it hands
    ``entry``, the arrays' addresses and ``status`` (the address of an ``int64_t`` the
    worker stores ``entry``'s result in) to ``submit`` (the address of an
    ``int64_t submit(fn, ins, n_in, outs, n_out, status)`` queueing function) and
    returns what it returns. The caller keeps the arrays and the status word alive
    until the launch completes.
    """
    out = ["#define PY_SSIZE_T_CLEAN", "#include <Python.h>", ""]
    for name, (n_in, n_out) in kernels.items():
        n = n_in + n_out
        out.append(f"""static PyObject *py_{name}(PyObject *self, PyObject *arg) {{
  PyObject *seq = PySequence_Fast(arg, "{name}: expected a list of arrays");
  if (!seq) return NULL;
  if (PySequence_Fast_GET_SIZE(seq) != {n}) {{
    Py_DECREF(seq);
    PyErr_SetString(PyExc_TypeError, "{name}: expected {n} arrays");
    return NULL;
  }}
  Py_buffer views[{max(n, 1)}];
  void *ptrs[{max(n, 1)}];
  int got = 0;
  for (; got < {n}; ++got) {{
    int flags = got < {n_in} ? PyBUF_C_CONTIGUOUS : (PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE);
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &views[got], flags) < 0) break;
    ptrs[got] = views[got].buf;
  }}
  long long status = 0;
  if (got == {n}) {{
    Py_BEGIN_ALLOW_THREADS
    status = {name}(ptrs);
    Py_END_ALLOW_THREADS
  }}
  for (int i = 0; i < got; ++i) PyBuffer_Release(&views[i]);
  Py_DECREF(seq);
  if (got != {n}) return NULL;
  return PyLong_FromLongLong(status);
}}
""")
    table = "".join(f'  {{"{n}", py_{n}, METH_O, NULL}},\n' for n in kernels)
    if entry is not None:
        out.append(_LAUNCH.replace("ENTRY", entry))
        table += '  {"launch", py_launch, METH_VARARGS, NULL},\n'
    out.append(f"static PyMethodDef methods[] = {{\n{table}  {{NULL, NULL, 0, NULL}}\n}};")
    out.append(f'static struct PyModuleDef moddef = {{PyModuleDef_HEAD_INIT, "{module}", NULL, -1, '
               f'methods}};')
    out.append(f"PyMODINIT_FUNC PyInit_{module}(void) {{ return PyModule_Create(&moddef); }}")
    return "\n".join(out)


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
