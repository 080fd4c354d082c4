"""plait's core: abstract values, primitives, tracers, the Graph IR and pytrees.

Depends on NumPy only. Everything else in plait is built on these pieces.
"""
from plait.core.dtypes import (canonical_dtype, result_type, is_float, is_complex,
                               is_integer, is_bool, is_inexact, dtype_short)
from plait.core.aval import ShapedArray, aval_of
from plait.core.primitive import Primitive
from plait.core.trace import (Trace, Tracer, MainTrace, bind, new_main, cur_stack,
                              full_lower, is_tracer, register_runtime,
                              wrap_array, is_concrete_array,
                              concrete_value, get_aval, find_top_trace)
from plait.core.graph import (Var, Literal, Eqn, Graph, ClosedGraph, check_graph,
                              eval_graph)
from plait.core.printer import pp_graph
from plait.core.staging import GraphTrace, trace_to_graph
from plait.core import pytree
