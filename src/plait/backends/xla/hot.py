"""The xla backend's C hot path: one jitted signature called without Python in between.

``jit(f, backend="xla")(*args)`` on a signature seen before spends most of its Python
time around jaxlib's C++ dispatcher: matching the arguments to a cached signature,
unwrapping :class:`~plait.backends.xla.array.XlaArray` arguments, waiting when a host
array crossed without a copy, and wrapping the result. :class:`HotCall` does all of it
in a small CPython extension (:data:`SOURCE`, built with plait's C toolchain on first
use and kept in the kernel cache, keyed by the source's hash, the CPython and NumPy
versions and the compiler): for one signature with one output, it checks that the
arguments are exactly of it (NumPy arrays of its shapes and dtypes, or live XlaArrays of
its avals, weak types included), calls the dispatcher with the executable's constant
buffers and the arguments' device buffers, and builds the result XlaArray. The same
object with several outputs serves :meth:`XlaExecutable.call_arrays` (a list of
XlaArrays: a jitted function of pytrees, whose leaves jit's fast path flattened).

Whatever it does not handle it declines (returns None) and jit's general path runs:
another signature or argument type, a deleted array, ``disable_jit``, ``debug_nans`` /
``debug_infs`` (checked by the general path), any transformation active in any thread
(nested jit, grad, vmap: the general path binds ``jit_call``).

Host arrays up to :data:`SMALL_HOST_BYTES` are copied into a private array that XLA
aliases, so the call need not wait for XLA to finish reading the caller's buffer (two
such arrays per argument are kept and reused once nothing else holds them); larger ones
cross without a copy and the call waits for its result (the caller may write to its
array afterwards), as :meth:`XlaExecutable.call_arrays` does.
"""
from __future__ import annotations

import logging
import sys
import threading

import numpy as np

from plait.config import config
from plait.core import trace as _trace
from plait.core.aval import ShapedArray
from plait.errors import PlaitError
from plait.runtime import metrics
from plait.runtime.array import Array, DeviceArray
from plait.backends.xla.array import XlaArray

SMALL_HOST_BYTES = 4096

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <string.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#define SMALL_HOST_BYTES @SMALL@

/* one argument of the signature */
typedef struct {
  int ndim;
  npy_intp dims[NPY_MAXDIMS];
  PyArray_Descr *descr;   /* the NumPy dtype a host argument must have */
  PyObject *aval;         /* the ShapedArray a device argument must have */
  PyObject *seen;         /* an aval object found equal to it before (or NULL) */
  PyObject *spare[2];     /* private copies of small host arguments (see private_copy) */
  int next_spare;
  int weak;               /* weakly typed: no host array matches */
} hot_arg;

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject *dispatch;     /* jaxlib's dispatcher: (*consts, *args) -> [device array] */
  PyObject *consts;       /* tuple of constant device buffers */
  PyObject *wait;         /* batched_block_until_ready */
  PyObject *config;       /* plait.config.__dict__ */
  PyObject *nesting;      /* core.trace's count of active transformations */
  PyObject *xla_type;     /* XlaArray */
  PyObject *slots;        /* tuple of member descriptors: host, weak_type, _aval, _buf, _ready */
  PyObject *out_avals;    /* tuple of the outputs' ShapedArrays */
  PyObject *out_weaks;    /* tuple of their weak types (Py_True / Py_False) */
  int multi;              /* 1: results as a list; 0: the one result, a cache hit */
  Py_ssize_t n_in;
  hot_arg *args;
} Hot;

static PyObject *s_disable_jit, *s_debug_nans, *s_debug_infs, *s_count, *s_is_ready,
                *s_shared, *s_hot;
/* jit cache hits answered here since metrics last took them (take_hits): a C counter,
   as a dict update per call cost a twentieth of a small call */
static unsigned long long hits;

static void hot_dealloc(Hot *h) {
  Py_XDECREF(h->dispatch); Py_XDECREF(h->consts); Py_XDECREF(h->wait);
  Py_XDECREF(h->config); Py_XDECREF(h->nesting);
  Py_XDECREF(h->xla_type); Py_XDECREF(h->slots); Py_XDECREF(h->out_avals);
  Py_XDECREF(h->out_weaks);
  if (h->args) {
    for (Py_ssize_t i = 0; i < h->n_in; ++i) {
      Py_XDECREF(h->args[i].descr); Py_XDECREF(h->args[i].aval); Py_XDECREF(h->args[i].seen);
      Py_XDECREF(h->args[i].spare[0]); Py_XDECREF(h->args[i].spare[1]);
    }
    PyMem_Free(h->args);
  }
  Py_TYPE(h)->tp_free((PyObject *)h);
}

static PyObject *hot_vectorcall(PyObject *self, PyObject *const *argv, size_t nargsf,
                                PyObject *kwn);

/* Hot(dispatch, consts, wait, config_dict, nesting, xla_type, slots,
       in_avals, in_dtypes, out) */
static PyObject *hot_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
  PyObject *dispatch, *consts, *wait, *cfg, *nesting, *xla_type, *slots,
           *avals, *dtypes, *out_aval;
  if (!PyArg_ParseTuple(a, "OO!OO!OOO!O!O!O", &dispatch, &PyTuple_Type, &consts, &wait,
                        &PyDict_Type, &cfg, &nesting, &xla_type,
                        &PyTuple_Type, &slots, &PyTuple_Type, &avals, &PyTuple_Type,
                        &dtypes, &out_aval))
    return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(avals);
  if (PyTuple_GET_SIZE(dtypes) != n || PyTuple_GET_SIZE(slots) != 5) {
    PyErr_SetString(PyExc_ValueError, "Hot: bad signature");
    return NULL;
  }
  Hot *h = (Hot *)type->tp_alloc(type, 0);
  if (!h) return NULL;
  h->args = PyMem_Calloc(n ? n : 1, sizeof(hot_arg));
  if (!h->args) { Py_DECREF(h); return PyErr_NoMemory(); }
  h->n_in = n;
  h->vectorcall = hot_vectorcall;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *av = PyTuple_GET_ITEM(avals, i);
    PyObject *shape = PyObject_GetAttrString(av, "shape");
    if (!shape) { Py_DECREF(h); return NULL; }
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > NPY_MAXDIMS) {
      Py_DECREF(shape); Py_DECREF(h);
      PyErr_SetString(PyExc_ValueError, "Hot: bad shape");
      return NULL;
    }
    h->args[i].ndim = (int)PyTuple_GET_SIZE(shape);
    for (int d = 0; d < h->args[i].ndim; ++d)
      h->args[i].dims[d] = (npy_intp)PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
    Py_DECREF(shape);
    if (PyErr_Occurred()) { Py_DECREF(h); return NULL; }
    if (!PyArray_DescrConverter(PyTuple_GET_ITEM(dtypes, i), &h->args[i].descr)) {
      Py_DECREF(h); return NULL;
    }
    PyObject *wk = PyObject_GetAttrString(av, "weak_type");
    if (!wk) { Py_DECREF(h); return NULL; }
    h->args[i].weak = PyObject_IsTrue(wk);
    Py_DECREF(wk);
    if (h->args[i].weak < 0) { Py_DECREF(h); return NULL; }
    Py_INCREF(av);
    h->args[i].aval = av;
  }
  /* out: one ShapedArray (the call returns it) or a tuple of them (a list returned) */
  h->multi = PyTuple_Check(out_aval);
  h->out_avals = h->multi ? (Py_INCREF(out_aval), out_aval) : PyTuple_Pack(1, out_aval);
  if (!h->out_avals) { Py_DECREF(h); return NULL; }
  Py_ssize_t n_out = PyTuple_GET_SIZE(h->out_avals);
  if (!(h->out_weaks = PyTuple_New(n_out))) { Py_DECREF(h); return NULL; }
  for (Py_ssize_t i = 0; i < n_out; ++i) {
    PyObject *weak = PyObject_GetAttrString(PyTuple_GET_ITEM(h->out_avals, i), "weak_type");
    if (!weak) { Py_DECREF(h); return NULL; }
    int w = PyObject_IsTrue(weak);
    Py_DECREF(weak);
    if (w < 0) { Py_DECREF(h); return NULL; }
    PyObject *b = w ? Py_True : Py_False;
    Py_INCREF(b);
    PyTuple_SET_ITEM(h->out_weaks, i, b);
  }
  Py_INCREF(dispatch); h->dispatch = dispatch;
  Py_INCREF(consts); h->consts = consts;
  Py_INCREF(wait); h->wait = wait;
  Py_INCREF(cfg); h->config = cfg;
  Py_INCREF(nesting); h->nesting = nesting;
  Py_INCREF(xla_type); h->xla_type = xla_type;
  Py_INCREF(slots); h->slots = slots;
  return (PyObject *)h;
}

/* 1 when the setting ``name`` of plait.config is on, 0 off, -1 error */
static int setting_on(Hot *h, PyObject *name) {
  PyObject *v = PyDict_GetItemWithError(h->config, name);
  if (!v) return PyErr_Occurred() ? -1 : 0;
  if (v == Py_False || v == Py_None) return 0;
  if (v == Py_True) return 1;
  return PyObject_IsTrue(v);
}

static PyObject *slot_get(Hot *h, int k, PyObject *obj) {
  PyObject *d = PyTuple_GET_ITEM(h->slots, k);
  return Py_TYPE(d)->tp_descr_get(d, obj, (PyObject *)Py_TYPE(obj));
}

static int slot_set(Hot *h, int k, PyObject *obj, PyObject *v) {
  PyObject *d = PyTuple_GET_ITEM(h->slots, k);
  return Py_TYPE(d)->tp_descr_set(d, obj, v);
}

/* A private copy of the small host argument ``xa`` (of the signature's shape and an
   equivalent dtype), which nobody can write to while XLA reads it: one of the argument's
   two spare arrays when nothing else holds it any more (jaxlib holds an array it
   aliased until XLA is done with it), else a new one, kept as a spare. Spares are
   64-byte aligned, so PJRT's CPU client aliases them rather than copying them again;
   reusing them spares an allocation per call. */
static PyObject *private_copy(hot_arg *sig, PyArrayObject *xa) {
  PyObject *c = NULL;
  for (int k = 0; k < 2 && !c; ++k)
    if (sig->spare[k] && Py_REFCNT(sig->spare[k]) == 1) c = sig->spare[k];
  if (!c) {
    npy_intp len = PyArray_NBYTES(xa) + 64;
    PyObject *raw = PyArray_SimpleNew(1, &len, NPY_UINT8);
    if (!raw) return NULL;
    char *p = PyArray_BYTES((PyArrayObject *)raw);
    p += (64 - ((size_t)p & 63)) & 63;
    Py_INCREF(sig->descr);
    c = PyArray_NewFromDescr(&PyArray_Type, sig->descr, sig->ndim, sig->dims, NULL, p,
                             NPY_ARRAY_CARRAY, NULL);
    if (!c) { Py_DECREF(raw); return NULL; }
    if (PyArray_SetBaseObject((PyArrayObject *)c, raw) < 0) { Py_DECREF(c); return NULL; }
    Py_XSETREF(sig->spare[sig->next_spare], c);   /* one still in XLA's use lives on */
    sig->next_spare ^= 1;
  }
  /* claimed before the copy: NumPy's strided copy may let another thread run */
  Py_INCREF(c);
  if (PyArray_IS_C_CONTIGUOUS(xa)) {            /* a plain copy: no casting machinery */
    memcpy(PyArray_DATA((PyArrayObject *)c), PyArray_DATA(xa), (size_t)PyArray_NBYTES(xa));
  } else if (PyArray_CopyInto((PyArrayObject *)c, xa) < 0) {
    Py_DECREF(c);
    return NULL;
  }
  return c;
}

/* A new XlaArray of the device array ``buf`` */
static PyObject *wrap(Hot *h, PyObject *buf, PyObject *aval, PyObject *weak, PyObject *ready) {
  PyTypeObject *tp = (PyTypeObject *)h->xla_type;
  PyObject *arr = tp->tp_alloc(tp, 0);
  if (!arr) return NULL;
  if (slot_set(h, 0, arr, Py_None) < 0 || slot_set(h, 1, arr, weak) < 0
      || slot_set(h, 2, arr, aval) < 0 || slot_set(h, 3, arr, buf) < 0
      || slot_set(h, 4, arr, ready) < 0) {
    Py_DECREF(arr);
    return NULL;
  }
  return arr;
}

/* The fallback: None (jit's general path runs). */
#define DECLINE do { result = Py_None; Py_INCREF(result); goto done; } while (0)

/* The result XlaArray of the call with the positional ``args`` (a tuple), or None when
   the call is not of this signature or a guard is on. */
static PyObject *hot_run(Hot *h, PyObject *args) {
  Py_ssize_t n = h->n_in, nc = PyTuple_GET_SIZE(h->consts);
  if (PyTuple_GET_SIZE(args) != n) Py_RETURN_NONE;
  int g;
  if ((g = setting_on(h, s_disable_jit)) != 0 || (g = setting_on(h, s_debug_nans)) != 0
      || (g = setting_on(h, s_debug_infs)) != 0) {
    if (g < 0) return NULL;
    Py_RETURN_NONE;
  }
  PyObject *cnt = PyObject_GetAttr(h->nesting, s_count);
  if (!cnt) return NULL;
  long nested = PyLong_AsLong(cnt);
  Py_DECREF(cnt);
  if (nested == -1 && PyErr_Occurred()) return NULL;
  if (nested) Py_RETURN_NONE;

  PyObject *stack_small[16];
  PyObject **stack = stack_small;
  if (nc + n > 16) {
    stack = PyMem_Malloc(sizeof(PyObject *) * (size_t)(nc + n));
    if (!stack) return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < nc; ++i) stack[i] = PyTuple_GET_ITEM(h->consts, i);
  PyObject *result = NULL, *outs = NULL;
  Py_ssize_t owned = 0;     /* stack[nc .. nc+owned) hold new references */
  int must_wait = 0;
  for (Py_ssize_t i = 0; i < n; ++i, ++owned) {
    PyObject *x = PyTuple_GET_ITEM(args, i);
    hot_arg *sig = &h->args[i];
    if (Py_TYPE(x) == &PyArray_Type) {
      PyArrayObject *xa = (PyArrayObject *)x;
      if (sig->weak || PyArray_NDIM(xa) != sig->ndim) DECLINE;
      npy_intp *dims = PyArray_DIMS(xa);
      for (int d = 0; d < sig->ndim; ++d)
        if (dims[d] != sig->dims[d]) DECLINE;
      PyArray_Descr *dt = PyArray_DESCR(xa);
      if (dt != sig->descr && !PyArray_EquivTypes(dt, sig->descr)) DECLINE;
      if (PyArray_NBYTES(xa) <= SMALL_HOST_BYTES) {
        PyObject *c = private_copy(sig, xa);
        if (!c) goto done;
        stack[nc + i] = c;
      } else {
        must_wait = 1;
        Py_INCREF(x);
        stack[nc + i] = x;
      }
    } else if ((PyObject *)Py_TYPE(x) == h->xla_type) {
      PyObject *av = slot_get(h, 2, x);
      if (!av) { PyErr_Clear(); DECLINE; }
      int same = av == sig->aval || av == sig->seen;
      if (!same) {
        same = PyObject_RichCompareBool(av, sig->aval, Py_EQ);
        if (same < 0) { Py_DECREF(av); goto done; }
        if (same) { Py_XSETREF(sig->seen, av); Py_INCREF(av); }
      }
      Py_DECREF(av);
      if (!same) DECLINE;
      PyObject *buf = slot_get(h, 3, x);
      if (!buf) { PyErr_Clear(); DECLINE; }
      if (buf == Py_None) { Py_DECREF(buf); DECLINE; }   /* deleted: the general path says so */
      stack[nc + i] = buf;
    } else {
      DECLINE;
    }
  }
  outs = PyObject_Vectorcall(h->dispatch, stack, (size_t)(nc + n), NULL);
  if (!outs) goto done;
  Py_ssize_t n_out = PyTuple_GET_SIZE(h->out_avals);
  if (!PyList_Check(outs) || PyList_GET_SIZE(outs) != n_out || n_out == 0) {
    PyErr_SetString(PyExc_SystemError, "plait's xla hot path: the dispatcher did not "
                    "return the signature's results");
    goto done;
  }
  if (must_wait) {          /* one event for all outputs */
    PyObject *r = PyObject_CallMethodNoArgs(PyList_GET_ITEM(outs, 0), s_is_ready);
    if (!r) goto done;
    int ready = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (ready < 0) goto done;
    if (!ready) {
      r = PyObject_CallOneArg(h->wait, outs);
      if (!r) goto done;
      Py_DECREF(r);
    }
  }
  PyObject *ready = must_wait ? Py_True : Py_False;
  if (h->multi) {
    PyObject *list = PyList_New(n_out);
    if (!list) goto done;
    for (Py_ssize_t i = 0; i < n_out; ++i) {
      PyObject *arr = wrap(h, PyList_GET_ITEM(outs, i), PyTuple_GET_ITEM(h->out_avals, i),
                           PyTuple_GET_ITEM(h->out_weaks, i), ready);
      if (!arr) { Py_DECREF(list); goto done; }
      PyList_SET_ITEM(list, i, arr);
    }
    result = list;
    goto done;
  }
  PyObject *arr = wrap(h, PyList_GET_ITEM(outs, 0), PyTuple_GET_ITEM(h->out_avals, 0),
                       PyTuple_GET_ITEM(h->out_weaks, 0), ready);
  if (!arr) goto done;
  ++hits;                   /* a cache hit, as on jit's other paths (under the GIL) */
  result = arr;
done:
  Py_XDECREF(outs);
  for (Py_ssize_t i = 0; i < owned; ++i) Py_DECREF(stack[nc + i]);
  if (stack != stack_small) PyMem_Free(stack);
  return result;
}

/* hot(args_tuple) */
static PyObject *hot_vectorcall(PyObject *self, PyObject *const *argv, size_t nargsf,
                                PyObject *kwn) {
  if (PyVectorcall_NARGS(nargsf) != 1 || kwn || !PyTuple_Check(argv[0])) {
    PyErr_SetString(PyExc_TypeError, "Hot: expected one tuple of arguments");
    return NULL;
  }
  return hot_run((Hot *)self, argv[0]);
}

static PyObject *hot_tp_call(PyObject *self, PyObject *a, PyObject *kw) {
  return PyVectorcall_Call(self, a, kw);
}

static PyTypeObject HotType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "@MODULE@.Hot",
  .tp_basicsize = sizeof(Hot),
  .tp_dealloc = (destructor)hot_dealloc,
  .tp_call = hot_tp_call,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
  .tp_vectorcall_offset = offsetof(Hot, vectorcall),
  .tp_new = hot_new,
};

/* HotCall: a base adding no state, whose __call__ answers from ``self._shared.hot``
   (a Hot) when it can and otherwise calls the general path (``general``, jit's Python
   ``__call__``): a jitted function of this type runs a hot call with no Python frame. */
static PyObject *general;

static PyObject *hotcall_call(PyObject *self, PyObject *args, PyObject *kw) {
  if (!kw || !PyDict_GET_SIZE(kw)) {
    PyObject *shared = PyObject_GetAttr(self, s_shared);
    if (!shared) return NULL;
    PyObject *hot = PyObject_GetAttr(shared, s_hot);
    Py_DECREF(shared);
    if (!hot) return NULL;
    if (Py_TYPE(hot) == &HotType) {
      PyObject *r = hot_run((Hot *)hot, args);
      Py_DECREF(hot);
      if (r != Py_None) return r;       /* the result, or NULL with the error set */
      Py_DECREF(r);
    } else {
      Py_DECREF(hot);
    }
  }
  if (!general) {
    PyErr_SetString(PyExc_SystemError, "HotCall: no general path set");
    return NULL;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject *small[9], **stack = small;
  if (n + 1 > 9 && !(stack = PyMem_Malloc(sizeof(PyObject *) * (size_t)(n + 1))))
    return PyErr_NoMemory();
  stack[0] = self;
  for (Py_ssize_t i = 0; i < n; ++i) stack[i + 1] = PyTuple_GET_ITEM(args, i);
  PyObject *r = PyObject_VectorcallDict(general, stack, (size_t)(n + 1), kw);
  if (stack != small) PyMem_Free(stack);
  return r;
}

static PyTypeObject HotCallType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "@MODULE@.HotCall",
  .tp_basicsize = sizeof(PyObject),
  .tp_call = hotcall_call,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_new = PyType_GenericNew,
};

/* set_general(fn): the general path HotCall falls back to */
static PyObject *set_general(PyObject *mod, PyObject *fn) {
  Py_INCREF(fn);
  Py_XSETREF(general, fn);
  Py_RETURN_NONE;
}

/* XlaArray.block_until_ready in C: jax's is a C++ method, and a Python frame around one
   C++ call was a tenth of a small call's latency when every result is waited for. */
static PyObject *block_slots;   /* member descriptors: _buf, _ready */
static PyObject *s_block;

static PyObject *xla_block(PyObject *self, PyObject *unused) {
  PyObject *d = PyTuple_GET_ITEM(block_slots, 1);
  PyObject *ready = Py_TYPE(d)->tp_descr_get(d, self, (PyObject *)Py_TYPE(self));
  if (!ready) return NULL;
  int done = PyObject_IsTrue(ready);
  Py_DECREF(ready);
  if (done < 0) return NULL;
  if (!done) {
    PyObject *bd = PyTuple_GET_ITEM(block_slots, 0);
    PyObject *buf = Py_TYPE(bd)->tp_descr_get(bd, self, (PyObject *)Py_TYPE(self));
    if (!buf) return NULL;
    if (buf != Py_None) {
      PyObject *r = PyObject_CallMethodNoArgs(buf, s_block);
      Py_DECREF(buf);
      if (!r) return NULL;
      Py_DECREF(r);
      if (Py_TYPE(d)->tp_descr_set(d, self, Py_True) < 0) return NULL;
    } else {
      Py_DECREF(buf);
    }
  }
  Py_INCREF(self);
  return self;
}

static PyMethodDef block_def = {"block_until_ready", xla_block, METH_NOARGS,
  "Wait until XLA has computed the value (no transfer); returns self."};

/* install_block(cls, (buf_slot, ready_slot)): cls.block_until_ready becomes xla_block */
static PyObject *install_block(PyObject *mod, PyObject *a) {
  PyObject *cls, *slots;
  if (!PyArg_ParseTuple(a, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &slots)) return NULL;
  if (PyTuple_GET_SIZE(slots) != 2) {
    PyErr_SetString(PyExc_ValueError, "install_block: two slots expected");
    return NULL;
  }
  Py_INCREF(slots);
  Py_XSETREF(block_slots, slots);
  PyObject *descr = PyDescr_NewMethod((PyTypeObject *)cls, &block_def);
  if (!descr) return NULL;
  int rc = PyObject_SetAttrString(cls, "block_until_ready", descr);
  Py_DECREF(descr);
  if (rc < 0) return NULL;
  Py_RETURN_NONE;
}

/* take_hits(): the cache hits counted since the last call, as metrics' counts */
static PyObject *take_hits(PyObject *mod, PyObject *unused) {
  unsigned long long n = hits;
  hits = 0;
  return Py_BuildValue("{s:K}", "cache_hits", n);
}

static PyMethodDef methods[] = {
  {"take_hits", take_hits, METH_NOARGS, "the cache hits counted since the last call"},
  {"set_general", set_general, METH_O, "set the general call path of HotCall"},
  {"install_block", install_block, METH_VARARGS, "XlaArray.block_until_ready in C"},
  {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "@MODULE@", NULL, -1, methods};

PyMODINIT_FUNC PyInit_@MODULE@(void) {
  import_array();
  if (!(s_disable_jit = PyUnicode_InternFromString("disable_jit"))
      || !(s_debug_nans = PyUnicode_InternFromString("debug_nans"))
      || !(s_debug_infs = PyUnicode_InternFromString("debug_infs"))
      || !(s_count = PyUnicode_InternFromString("count"))
      || !(s_is_ready = PyUnicode_InternFromString("is_ready"))
      || !(s_shared = PyUnicode_InternFromString("_shared"))
      || !(s_hot = PyUnicode_InternFromString("hot"))
      || !(s_block = PyUnicode_InternFromString("block_until_ready")))
    return NULL;
  if (PyType_Ready(&HotType) < 0 || PyType_Ready(&HotCallType) < 0) return NULL;
  PyObject *m = PyModule_Create(&moddef);
  if (!m) return NULL;
  Py_INCREF(&HotType);
  if (PyModule_AddObject(m, "Hot", (PyObject *)&HotType) < 0) {
    Py_DECREF(&HotType); Py_DECREF(m); return NULL;
  }
  Py_INCREF(&HotCallType);
  if (PyModule_AddObject(m, "HotCall", (PyObject *)&HotCallType) < 0) {
    Py_DECREF(&HotCallType); Py_DECREF(m); return NULL;
  }
  return m;
}
"""


log = logging.getLogger("plait")
_STATE: dict = {}
_LOCK = threading.Lock()
# the slots of a result XlaArray, in the order the C code sets them
_SLOTS = (Array.__dict__["_value"], Array.__dict__["weak_type"], Array.__dict__["_aval"],
          DeviceArray.__dict__["_buf"], XlaArray.__dict__["_ready"])


def _module():
    """The built extension module, or None when it cannot be had: no C compiler or no
    CPython headers, or the build failed (logged once; jit keeps its general path)."""
    with _LOCK:
        if "module" not in _STATE:
            try:
                mod = _load()
                if mod is not None:
                    mod.install_block(XlaArray, (DeviceArray.__dict__["_buf"],
                                                 XlaArray.__dict__["_ready"]))
                    metrics.add_pending(mod.take_hits)
                _STATE["module"] = mod
            except (PlaitError, OSError, ImportError) as e:
                log.warning("plait: the xla backend's C call path is unavailable (%s); "
                            "jit calls take the Python path", e)
                _STATE["module"] = None
        return _STATE["module"]


def _load():
    from plait.codegen.c_pymodule import load_module
    from plait.codegen.toolchain import build_shared_object, find_toolchain
    from plait.runtime import kernel_cache
    tc = find_toolchain()
    if tc is None or not tc.python_include:
        return None
    source = SOURCE.replace("@SMALL@", str(SMALL_HOST_BYTES))
    key = kernel_cache.entry_key(source, tc.identity(), sys.version, np.__version__,
                                 np.get_include())
    name = f"plait_xla_hot_{key}"
    return kernel_cache.load(
        key, lambda out: build_shared_object(source.replace("@MODULE@", name), out, tc,
                                             (f"-I{np.get_include()}",)),
        lambda path: load_module(name, path))


def hot_class(base: type) -> type | None:
    """``base`` (jit's function class) with :data:`SOURCE`'s ``HotCall`` mixed in and
    its ``__call__``: the same object layout, so a jitted function whose signature went hot can take
    this class (``obj.__class__ = ...``) and be called with no Python frame; ``base``'s
    ``__call__`` stays the general path. None when the extension cannot be built."""
    mod = _module()
    if mod is None:
        return None
    with _LOCK:
        cls = _STATE.get(("class", base))
        if cls is None:
            mod.set_general(base.__call__)
            # base first, so the class has base's layout (HotCall adds none); __call__
            # named here, so HotCall's C slot is the class's call
            cls = _STATE[("class", base)] = type(base.__name__, (base, mod.HotCall), {
                "__call__": mod.HotCall.__call__, "__module__": base.__module__,
                "__qualname__": base.__qualname__, "__doc__": base.__doc__})
        return cls


def make_hot(dispatch, consts: list, wait, in_avals: list,
             out: ShapedArray | tuple[ShapedArray, ...]):
    """The C call path of one signature (``in_avals``) through jaxlib's ``dispatch``
    (see the module docstring): ``hot(args_tuple)`` returns the result XlaArray (``out``
    one aval; the call counts a jit cache hit), or the list of them (``out`` a tuple of
    avals: :meth:`XlaExecutable.call_arrays`, whose caller counts), or None to decline.
    None when the extension cannot be built."""
    mod = _module()
    if mod is None:
        return None
    return mod.Hot(dispatch, tuple(consts), wait, vars(config), _trace.nesting(),
                   XlaArray, _SLOTS, tuple(in_avals),
                   tuple(a.dtype for a in in_avals), out)
