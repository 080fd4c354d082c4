"""plait's benchmarks: ratios against NumPy (and JAX/PyTorch when installed), measured side by side."""
