"""numpy's BLAS on one thread in the processes esbridge runs (the command line, the sidecar, the MCP server).

The products esbridge computes are small: the embedded engine re-scores 100 candidates and scans a filtered subset
of some thousand rows. OpenBLAS splits such a product across its threads, and on a machine whose cores are busy
with other searches the threads wait for each other: a 10,000 x 384 product took 5-8 ms instead of 0.4 ms, and a
kNN search under a 1% filter 4.3-8.0 ms instead of 2.1-2.3 ms at the median (docs/benchmarks.md). Searches run in
parallel threads instead. A process whose environment names a thread count keeps it, and an application that
embeds esbridge decides for itself (docs/embedded.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def limit_blas_threads(environ: Mapping[str, str] = os.environ) -> bool:
    """Put the BLAS libraries loaded so far (numpy's) on one thread, unless ``environ`` sets a thread count.

    True when the limit was applied."""
    if any(environ.get(name) for name in THREAD_VARIABLES):
        return False
    import numpy  # noqa: F401  (its BLAS must be loaded to be found)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
    return True
