"""A CPython extension-module wrapper around generated kernel functions.

Each kernel ``void kN(void **bufs)`` gets a method ``kN(list_of_arrays)`` that takes
the buffers' addresses through the buffer protocol (inputs read-only, outputs
writable; all C-contiguous), releases the GIL and runs the kernel. Calling a
method of an extension module costs far less than a ctypes call.
"""
from __future__ import annotations


def module_source(module: str, kernels: dict[str, tuple[int, int]]) -> str:
    """C source of the module; ``kernels`` maps name -> (number of inputs, of outputs)."""
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
  if (got == {n}) {{
    Py_BEGIN_ALLOW_THREADS
    {name}(ptrs);
    Py_END_ALLOW_THREADS
  }}
  for (int i = 0; i < got; ++i) PyBuffer_Release(&views[i]);
  Py_DECREF(seq);
  if (got != {n}) return NULL;
  Py_RETURN_NONE;
}}
""")
    table = "".join(f'  {{"{n}", py_{n}, METH_O, NULL}},\n' for n in kernels)
    out.append(f"static PyMethodDef methods[] = {{\n{table}  {{NULL, NULL, 0, NULL}}\n}};")
    out.append(f'static struct PyModuleDef moddef = {{PyModuleDef_HEAD_INIT, "{module}", NULL, -1, '
               f'methods}};')
    out.append(f"PyMODINIT_FUNC PyInit_{module}(void) {{ return PyModule_Create(&moddef); }}")
    return "\n".join(out)
