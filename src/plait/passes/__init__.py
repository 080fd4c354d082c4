"""Graph passes and the pass manager (``optimize``)."""
from plait.passes.manager import optimize, PASSES
from plait.passes.dce import dce
from plait.passes.cse import cse
from plait.passes.inline import inline
from plait.passes.licm import licm
