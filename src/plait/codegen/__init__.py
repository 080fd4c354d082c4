"""Code generation: C renderers of Stripe programs and the C toolchain."""
