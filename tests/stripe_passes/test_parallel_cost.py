"""The parallel-split cost model: small kernels stay serial, large ones split, the
decision follows the config's prices, and split kernels compute the same values."""
import pytest

from sp_helpers import apply, blocks, check_passes, partition_params
from plait.stripe import lower
from plait.stripe.ir import Block
from plait.stripe.passes.parallel_cost import Work, block_work, serial_ns, worth_splitting
from plait.stripe.targets import MemoryLevel, Target
from sp_programs import chain, row_sum

KIB = 1024
LEVELS = (MemoryLevel("L1", 48 * KIB, 200.0), MemoryLevel("L2", 2048 * KIB, 100.0),
          MemoryLevel("DRAM", 0, 15.0))
TWO = Target("two", 2, 64, 64, 48 * KIB, 2048 * KIB, 32768 * KIB, 1024 * KIB, (),
             memory=LEVELS)


def _kernels(p):
    return [s for s in p.entry.stmts if isinstance(s, Block) and "kernel" in s.tags]


def test_work_counts_ops_transcendentals_and_bytes():
    """chain(n): T = X*X (one op, 4n bytes in, 4n out), Y = tanh(T + X) (one op, one
    transcendental, 8n in, 4n out) per element."""
    n = 1000
    k0, k1 = _kernels(lower(chain(n)))
    assert block_work(k0) == Work(n, 0, 8 * n)
    assert block_work(k1) == Work(n, n, 12 * n)
    # a reduction reads its rows once and writes each sum once
    (k,) = _kernels(lower(row_sum(64, 512)))
    w = block_work(k)
    assert w.ops == 64 * 512 and w.transcendentals == 0
    assert w.bytes in (4 * 64 * 512 + 4 * 64, 4 * 64 * 512 + 8 * 64)   # out or inout sums


@pytest.mark.parametrize("nbytes, bandwidth", [(12_000, 200.0), (1_200_000, 100.0),
                                               (12_000_000, 15.0)])
def test_memory_time_uses_the_level_the_bytes_fit(nbytes, bandwidth):
    w = Work(0, 0, nbytes)
    assert serial_ns(w, TWO, 0.05, 1.0) == pytest.approx(nbytes / bandwidth)


def test_time_is_the_larger_of_compute_and_memory():
    w = Work(1000, 100, 4000)                   # 50 + 100 ns compute, 20 ns from the L1
    assert serial_ns(w, TWO, 0.05, 1.0) == pytest.approx(150.0)
    assert serial_ns(w, TWO, 0.0, 0.0) == pytest.approx(20.0)
    no_levels = Target("bare", 2, 64, 64, 0, 0, 0, 0, ())
    assert serial_ns(Work(0, 0, 10 ** 9), no_levels, 0.05, 1.0) == 0.0


def test_decision_follows_the_prices():
    """Y = tanh(T + X) over 65536 elements: 65536 * (0.05 + 1.0) ns of compute (its
    786432 bytes take 7.9 us from the L2), so two threads save 34406 ns."""
    n = 1 << 16
    k1 = _kernels(lower(chain(n)))[1]
    saving = n * 1.05 / 2
    assert worth_splitting(k1, TWO, 2, saving - 100, 0.05, 1.0)
    assert not worth_splitting(k1, TWO, 2, saving + 100, 0.05, 1.0)
    assert not worth_splitting(k1, TWO, 1, 0.0, 0.05, 1.0)           # one thread saves nothing
    # the pass: the same prices split kernel_1 and leave the cheaper kernel_0 serial
    p = apply(lower(chain(n)), [("partition", dict(fork_ns=saving - 100, op_ns=0.05,
                                                   transcendental_ns=1.0))], TWO)
    k0, k1 = _kernels(p)
    assert "parallel" not in k0.tags and "parallel" in k1.tags
    p = apply(lower(chain(n)), [("partition", dict(fork_ns=saving + 100, op_ns=0.05,
                                                   transcendental_ns=1.0))], TWO)
    assert not blocks(p, "parallel")


def test_host_prices_keep_small_kernels_serial_and_split_large_ones():
    params = partition_params()
    small = apply(lower(chain(1024)), [("partition", params)], TWO)
    assert not blocks(small, "parallel")
    # 2M elements: at least 25 MB moved from the L3 or DRAM, milliseconds of work
    large = apply(lower(chain(1 << 21)), [("partition", params)], TWO)
    assert all("parallel" in k.tags for k in _kernels(large))


def test_split_kernels_compute_the_same_values():
    """A chain large enough for the host prices to split, run by the interpreter and as
    C with OpenMP, against the unsplit program in the reference interpreter."""
    p = check_passes(chain(1 << 20), [("partition", partition_params())], TWO, rtol=1e-5)
    assert blocks(p, "parallel")
