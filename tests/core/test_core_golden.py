"""The graph printer's text for a small MLP is stable (golden) and type-checks."""
import numpy as np

import plait
import plait.numpy as pnp

GOLDEN = """\
graph(a:f32[4,3], b:f32[3], c:f32[3,2], d:f32[2], e:f32[5,4]) {
  f:f32[5,3] = dot_general[dimension_numbers=(((1,), (0,)), ((), ())) preferred_element_type=None] e a
  g:f32[5,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(5, 3)] b
  h:f32[5,3] = add f g
  i:f32[5,3] = tanh h
  j:f32[5,2] = dot_general[dimension_numbers=(((1,), (0,)), ((), ())) preferred_element_type=None] i c
  k:f32[5,2] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(5, 2)] d
  l:f32[5,2] = add j k
  return (l)
}"""


def predict(params, x):
    for w, b in params[:-1]:
        x = pnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def _args():
    f = np.float32
    return ([(np.zeros((4, 3), f), np.zeros(3, f)), (np.zeros((3, 2), f), np.zeros(2, f))],
            np.zeros((5, 4), f))


def test_mlp_graph_text_is_golden():
    g = plait.make_graph(predict)(*_args())
    assert str(g) == GOLDEN
    plait.check_graph(g.graph)


def test_printing_is_deterministic_across_traces():
    a = str(plait.make_graph(predict)(*_args()))
    b = str(plait.jit(predict).lower(*_args()).as_text())
    assert a == b == GOLDEN
