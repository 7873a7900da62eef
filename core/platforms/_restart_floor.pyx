# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The floor of a background restart's own work on the compiled run's layout (a bench figure).

On a large machine at a high load, the consolidation policies spend most of their time
restarting wide background jobs: a foreground job lands on one node of a background job of
tens of thousands of processes, the job is suspended, and it starts again at once on the
nodes then eligible. :func:`restart_floor` does only what such a restart itself must do,
on arrays laid out as ``_tiered_run`` lays them out (per VM: job, CPU usage, estimate, rate,
factor; per node: overflow and the keys of the two node indexes), with nothing else: no
events, no queues, no index upkeep beyond a store per key, no rate trees, no re-rating of the
foreground jobs whose overhead was drawn again, and the same nodes picked at every restart (so
their memory stays as warm as it can be). Per restart:

1. release the job's nodes (their background VM idle, their eligibility for the background
   and, where the foreground is idle, its key, the background's load, restored);
2. pick ``size`` eligible nodes off a standing order of the nodes by key;
3. place the processes, heaviest estimate first, in process order;
4. sort the held nodes by a mark per node, take them out of the eligible ones and give the
   foreground's key the job's load;
5. one rate pass over them: an overhead draw per shared node, the foreground and background
   rates (the division included), the job's slowest process;
6. one overflow pass over them.

The time per restarted process is a lower bound for what the whole run spends per process
it places (``Engine.placed_processes``): ``tiersweep bench --scale`` prints both.
"""

from libc.math cimport INFINITY
from libc.stdlib cimport calloc, free, malloc
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from ._ranked cimport _marked, i64

import numpy

#: The share of the estimate under which a node's foreground leaves room for a background VM.
DEF THRESHOLD = 0.6
#: The most overhead a shared node's foreground pays, ``o ~ U(0, OVERHEAD_MAX)`` (the
#: platform's default).
DEF OVERHEAD_MAX = 0.037
#: The least share of a node the foreground leaves the background (as the run's ``floor``).
DEF IDLE_FLOOR = 0.01
#: The passes of a restart, as :func:`restart_floor` names them.
PASSES = ("release", "pick", "place", "held in node order", "rate pass", "overflow")


cdef inline double _now() noexcept:
    """Seconds on the monotonic clock."""
    cdef timespec clock
    clock_gettime(CLOCK_MONOTONIC, &clock)
    return clock.tv_sec + 1e-9 * clock.tv_nsec


cdef inline double _lap(double* spent, double since) noexcept:
    """Add the seconds from ``since`` to now to ``spent[0]``; now."""
    cdef double now = _now()
    spent[0] += now - since
    return now


def restart_floor(Py_ssize_t nodes, Py_ssize_t size, Py_ssize_t restarts, double busy=0.8, seed=0):
    """Restart one background job of ``size`` processes ``restarts`` times on ``nodes`` nodes x 2
    VMs, a share ``busy`` of them holding a foreground process (estimates uniform in [0, 1),
    eligible below :data:`THRESHOLD`), and time it.

    Returns a dict: ``ns_per_process`` (per restarted process, all passes), ``phases`` (the same
    per pass, by name), ``held`` (the job's nodes after the last restart, ascending),
    ``slowest`` (its rate) and ``overflow`` (the machine's): the last three read the results of
    every pass, so that none can be left out by the compiler, and let a test check them.

    Raises ValueError if the arguments are below 1 or fewer than ``size`` nodes are eligible."""
    cdef Py_ssize_t n = nodes, p, i, r, m, n_order = 0, pos = 0, n_draws, n_held = 0
    cdef i64 node, vm, fgj, job = 1
    cdef double f, idle, need, rate, low, used, excess, total = 0.0, lap
    cdef double spent[6]
    if n < 1 or size < 1 or restarts < 1:
        raise ValueError("nodes, size and restarts must be at least 1")
    rng = numpy.random.default_rng(seed)
    fg_est = numpy.where(rng.random(n) < busy, rng.random(n), 0.0)
    # True usage strays from the estimate (as with the papers' CPU-estimate accuracy below 1),
    # so that some nodes throttle their background and some overflow.
    fg_true_np = numpy.where(fg_est > 0.0, numpy.clip(fg_est + rng.normal(0.0, 0.3, n), 0.01, 1.0), 0.0)
    order_np = numpy.lexsort((numpy.arange(n), fg_est)).astype(numpy.int64)
    est_np = rng.random(size)
    true_np = numpy.clip(est_np + rng.normal(0.0, 0.3, size), 0.01, 1.0)
    heaviest_np = numpy.argsort(-est_np, kind="stable").astype(numpy.int64)
    draws_np = rng.random(1 << 20)
    fg_rate_np = 1.0 - rng.random(n) * OVERHEAD_MAX
    cdef double[::1] fg_est_v = fg_est
    cdef double[::1] fg_true = fg_true_np
    cdef i64[::1] order = order_np
    cdef double[::1] est = est_np
    cdef double[::1] true = true_np
    cdef i64[::1] heaviest = heaviest_np
    cdef double[::1] draws = draws_np
    cdef double[::1] fg_rate = fg_rate_np  # per foreground job: one job per node here
    n_draws = draws.shape[0]
    cdef i64* vm_job = <i64*>malloc(2 * n * sizeof(i64))
    cdef double* cpu = <double*>malloc(2 * n * sizeof(double))
    cdef double* vm_est = <double*>malloc(2 * n * sizeof(double))
    cdef double* prate = <double*>malloc(2 * n * sizeof(double))
    cdef double* factor = <double*>malloc(2 * n * sizeof(double))
    cdef double* overflow = <double*>calloc(n, sizeof(double))
    cdef double* el_key = <double*>malloc(n * sizeof(double))
    cdef double* fg_key = <double*>malloc(n * sizeof(double))
    cdef char* mark = <char*>calloc(n + 8, 1)
    cdef i64* chosen = <i64*>malloc(size * sizeof(i64))
    cdef i64* placement = <i64*>malloc(size * sizeof(i64))
    cdef i64* held = <i64*>malloc(size * sizeof(i64))
    try:
        if (vm_job == NULL or cpu == NULL or vm_est == NULL or prate == NULL or factor == NULL
                or overflow == NULL or el_key == NULL or fg_key == NULL or mark == NULL or chosen == NULL
                or placement == NULL or held == NULL):
            raise MemoryError()
        for node in range(n):
            vm_job[2 * node] = node + 2 if fg_est_v[node] > 0.0 else -1  # foreground jobs 2..n+1
            vm_job[2 * node + 1] = -1
            cpu[2 * node] = fg_true[node]
            vm_est[2 * node] = fg_est_v[node]
            cpu[2 * node + 1] = 0.0
            vm_est[2 * node + 1] = 0.0
            prate[2 * node] = 1.0
            prate[2 * node + 1] = 1.0
            factor[2 * node] = 0.0
            factor[2 * node + 1] = 1.0
            el_key[node] = fg_est_v[node] if fg_est_v[node] < THRESHOLD else INFINITY
            fg_key[node] = INFINITY if fg_est_v[node] > 0.0 else 0.0
            n_order += el_key[node] != INFINITY
        if n_order < size:
            raise ValueError(f"{n_order} eligible nodes, fewer than the job's {size} processes")
        low = INFINITY
        # The first pass is the job's start (nothing to release), not counted.
        for r in range(restarts + 1):
            if r <= 1:
                for i in range(6):
                    spent[i] = 0.0
            lap = _now()
            # 1. Release.
            for i in range(n_held):
                node = held[i]
                vm = 2 * node + 1
                vm_job[vm] = -1
                vm_est[vm] = 0.0
                el_key[node] = vm_est[2 * node] if vm_est[2 * node] < THRESHOLD else INFINITY
                if vm_job[2 * node] < 0:
                    fg_key[node] = 0.0
            lap = _lap(spent + 0, lap)
            # 2. Pick off the standing order.
            m = 0
            for i in range(n):
                node = order[i]
                chosen[m] = node
                m += el_key[node] != INFINITY
                if m == size:
                    break
            lap = _lap(spent + 1, lap)
            # 3. Place, heaviest first, in process order.
            for p in range(size):
                placement[heaviest[p]] = chosen[p]
            for p in range(size):
                vm = 2 * placement[p] + 1
                vm_job[vm] = job
                cpu[vm] = true[p]
                vm_est[vm] = est[p]
            lap = _lap(spent + 2, lap)
            # 4. The held nodes in node order, no longer eligible.
            for p in range(size):
                mark[placement[p]] = 1
            _marked(mark, n, held)
            for i in range(size):
                node = held[i]
                mark[node] = 0
                el_key[node] = INFINITY
                if vm_job[2 * node] < 0:
                    fg_key[node] = vm_est[2 * node + 1]
            n_held = size
            lap = _lap(spent + 3, lap)
            # 5. The rate pass.
            low = INFINITY
            for i in range(size):
                node = held[i]
                vm = 2 * node + 1
                fgj = vm_job[2 * node]
                if fgj < 0:
                    prate[vm] = 1.0
                    rate = 1.0
                else:
                    f = OVERHEAD_MAX * draws[pos]
                    pos += 1
                    if pos == n_draws:
                        pos = 0
                    factor[2 * node] = f
                    prate[2 * node] = 1.0 - f
                    idle = 1.0 - cpu[2 * node] * fg_rate[node]
                    if idle < IDLE_FLOOR:
                        idle = IDLE_FLOOR
                    need = cpu[vm]
                    rate = factor[vm] * (1.0 if idle >= need else idle / need)
                    prate[vm] = rate
                if rate < low:
                    low = rate
            lap = _lap(spent + 4, lap)
            # 6. The overflow pass.
            for i in range(size):
                node = held[i]
                if vm_job[2 * node] < 0:
                    excess = 0.0
                else:
                    used = cpu[2 * node] * fg_rate[node] + cpu[2 * node + 1] * low
                    excess = used - 1.0 if used > 1.0 else 0.0
                total += excess - overflow[node]
                overflow[node] = excess
            lap = _lap(spent + 5, lap)
        processes = restarts * size
        return {
            "ns_per_process": 1e9 * sum(spent[i] for i in range(6)) / processes,
            "phases": {name: 1e9 * spent[i] / processes for i, name in enumerate(PASSES)},
            "held": numpy.array(<i64[:size]>held, dtype=numpy.int64),
            "slowest": low,
            "overflow": total,
        }
    finally:
        free(vm_job); free(cpu); free(vm_est); free(prate); free(factor); free(overflow)
        free(el_key); free(fg_key); free(mark); free(chosen); free(placement); free(held)
