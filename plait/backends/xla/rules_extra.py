"""``to_stablehlo`` rules of primitives added outside plait.lax's core modules."""
