# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The whole run of the consolidation family, KEASY and REASY on the ``nodes`` platform, compiled.

A line-by-line transcription of :meth:`tiersweep.core.engine.Engine.run` driving
:class:`~tiersweep.core.policies.consolidation.Consolidation` with its
:class:`~tiersweep.core.policies.consolidation.NodeVms` resource model, or
:class:`~tiersweep.core.policies.two_tier_easy.TwoTierEasy` (KEASY, REASY, planning on the jobs'
estimates) with :class:`~tiersweep.core.policies.two_tier_easy.TieredVms`, on
:class:`~tiersweep.core.platforms.nodes.Nodes` (any number of tiers): the event heap, the queue,
the policy's indexes, the platform's per-VM state and its rate re-computation live in C arrays,
and a decision is applied where the Python policy yields it, so every state the policy reads is
the one the Python run would show it. The floating-point operations are the reference's, in
its order; random draws are taken from the platform's own buffered streams in the same order,
and each job's per-process CPU usage is read from the job (the same lazy draws). At the end the
jobs' fields and the engine's counters are written back, so that the same Python code builds
the job records and metrics. ``tests/test_compiled_path.py`` compares both runs bit for bit.

:func:`run` is called only for what :mod:`tiersweep.core.compiled_run` accepts; everything
else (observers, segments, other policies or platforms) runs the Python loop. One or two tiers
take specialised rate and index code (the two-tier loop of ``Nodes.rate_changes``); more tiers
take the general one (``Nodes._bulk_rate_changes``, one index of eligible nodes per background
tier), each transcribing the reference the Python run takes for that tier count.
"""

from cpython.exc cimport PyErr_CheckSignals
from cpython.set cimport PySet_Add
from libc.math cimport INFINITY, NAN, nextafter
from libc.stdlib cimport calloc, free, malloc, qsort
from libc.string cimport memcpy, memmove, memset

from ._ranked cimport (
    RADIX, RADIX_PASSES, EstProc, KeyNode, _marked, _merge_sort, _radix_sort, _Ranked, _sort_i64, _sort_marked, i64
)


# Event kinds, as in the engine (their order is the processing order at one timestamp).
DEF FINISH = 0
DEF RESTORE = 1

# Job states, as in tiersweep.core.jobs.
DEF PENDING = 0
DEF QUEUED = 1
DEF RUNNING = 2
DEF FINISHED = 3

# A job of at least this many processes keeps a min tree over its processes' rates (two tiers).
DEF TREE_FROM = 64

# Which nodes of a job whose rate changed the overflow pass re-measures (_Run.overflow_scope).
DEF SCOPE_NONE = 0
DEF SCOPE_ALL = 1
DEF SCOPE_OVERFLOWING = 2

DEF HEAD = 1
DEF ALL = 0
DEF STARVED = 2


cdef struct Event:
    double time
    int kind
    i64 seq
    i64 job
    i64 version


cdef inline bint _before(Event* a, Event* b) noexcept nogil:
    if a.time != b.time:
        return a.time < b.time
    if a.kind != b.kind:
        return a.kind < b.kind
    return a.seq < b.seq


cdef int _cmp_keynode(const void* a, const void* b) noexcept nogil:
    cdef KeyNode* x = <KeyNode*>a
    cdef KeyNode* y = <KeyNode*>b
    if x.key < y.key:
        return -1
    if x.key > y.key:
        return 1
    return (x.node > y.node) - (x.node < y.node)


DEF RADIX_FROM = 256  # fewer pairs: the merge sort (_Run.place)


cdef inline i64 _log2(i64 n) noexcept nogil:
    cdef i64 bits = 0
    while n > 1:
        n >>= 1
        bits += 1
    return bits


cdef class _Run:
    # -- the run's parameters
    cdef object engine, platform, policy, jobs
    cdef Py_ssize_t n_jobs, n_nodes, k, policy_tiers, bulk_from
    cdef bint vectorised, per_job, paper_eff
    cdef double fixed_eff, overhead_max, floor, threshold, migration_cost
    cdef int preemption
    cdef bint adaptive
    # -- KEASY / REASY (TwoTierEasy): the foreground jobs by estimated end, the kills
    cdef bint easy_family, may_kill
    cdef KeyNode* ends
    cdef Py_ssize_t ends_n
    cdef double* end_key
    cdef double* cpu_sum
    cdef i64* kills_of
    cdef double* lost_progress
    cdef i64 kills
    cdef double lost_work
    cdef char* pin_mark
    cdef char* job_mark  # scratch: distinct job indices of a batch
    cdef double fixed_xfactor, bsld_sum, bsld_bound
    cdef i64 completed
    cdef object overhead_draws, eff_draws
    # The engine's progress callback (None: none) and the jobs finished so far.
    cdef object progress_hook
    cdef i64 n_finished
    # The overhead stream's buffered uniforms, read here; its position is written back to the
    # stream's buffer before the stream itself is called and at the end of the run.
    cdef const double[::1] ov_values
    cdef Py_ssize_t ov_position, ov_length
    cdef object ov_buffer
    # -- per job
    cdef char* state
    cdef i64* size
    cdef double* submit
    cdef double* runtime
    cdef double* estimate
    cdef double* start_time
    cdef double* last_start
    cdef double* finish_time
    cdef double* progress
    cdef double* rate
    cdef double* updated
    cdef i64* version
    cdef i64* migrations
    cdef int* tier
    cdef double* tier_time
    cdef double* segment_time
    cdef double* prate_job  # the platform's rate of the job (its slowest process)
    cdef double* job_eff
    cdef char* restoring
    cdef double* restore_rate
    cdef char* needs_restore
    cdef i64** nodes
    # A wide job's nodes in ascending order (NULL for the others): its per-node passes then
    # read the per-node arrays in address order instead of at random.
    cdef i64** by_node
    # A wide job's processes' rates in a min tree (two tiers; NULL for the others), leaves in
    # node_walk order, so that its slowest process costs no scan of all of them: ``tree[1]``
    # once the leaves written since its last read (``tree_pending``; ``tree_n_pending`` -1:
    # all of them) are pulled up.
    cdef double** tree
    cdef i64* tree_leaves
    cdef int** tree_pending
    cdef i64* tree_n_pending
    cdef int* vm_leaf  # per VM: its leaf in its job's tree
    cdef double** cpu_true
    cdef double** cpu_est
    cdef int** proc_order  # the processes by estimated CPU usage, heaviest first (see place)
    # -- per VM and per node
    cdef i64* vm_job
    cdef double* vm_est
    cdef double* cpu
    cdef double* factor
    cdef double* prate
    cdef double* overflow
    cdef double overflow_rate
    cdef i64 n_overflowing  # nodes whose overflow is not 0
    cdef i64* dirty_count  # per job, during a rate pass (two tiers): how many of its nodes are dirty
    cdef char* rose  # per rate change of a pass (``changes``): whether the rate went up
    cdef i64 free0, free1
    cdef _Ranked fg_rank, el_rank
    cdef double* fg_key  # (their keys)
    cdef double* el_key
    # More than two tiers: the eligible nodes of background tiers 2 .. k-1 (el_rank holds tier 1's),
    # one index per tier (by tier; None below 2; each counts its members), and the rate pass's scratch.
    cdef list lower_ranks
    cdef i64* k_changes
    cdef double* k_rates
    # -- dirty nodes since the last rate computation
    cdef i64* dirty
    cdef Py_ssize_t n_dirty, n_small_dirty
    cdef char* dirty_mark
    cdef char* small_mark
    cdef bint dirty_bulk, rates_dirty
    # -- engine
    cdef Event* heap
    cdef Py_ssize_t heap_n, heap_cap
    cdef i64 sequence
    cdef double now
    cdef i64 passes
    cdef i64 placed  # processes put on VMs (platform_start), for Engine.placed_processes
    cdef double overflow_seconds
    cdef i64* queue
    cdef Py_ssize_t queue_n
    # -- policy indexes
    cdef i64* fenwick
    cdef i64* fg
    cdef Py_ssize_t fg_n
    cdef i64* bg
    cdef Py_ssize_t bg_n
    cdef i64* order
    cdef Py_ssize_t order_n, order_cap
    cdef i64 order_previous
    # -- scratch
    cdef i64* scratch_nodes
    cdef KeyNode* scratch_keys
    cdef i64* scratch_jobs
    cdef i64* scratch_stale
    cdef EstProc* scratch_est
    cdef EstProc* scratch_est_tmp
    cdef unsigned int* counts  # scratch of the radix sort
    cdef char* node_mark
    cdef char* held_mark  # scratch of sort_by_node: the job's nodes marked

    def __cinit__(self):
        pass

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.nodes != NULL and self.by_node != NULL and self.tree != NULL and self.tree_pending != NULL:
            for i in range(self.n_jobs):
                free(self.nodes[i])
                free(self.by_node[i])
                free(self.tree[i])
                free(self.tree_pending[i])
                free(self.cpu_true[i])
                free(self.cpu_est[i])
                if self.proc_order != NULL:
                    free(self.proc_order[i])
        free(self.proc_order)
        free(self.state); free(self.size); free(self.submit); free(self.runtime); free(self.estimate)
        free(self.start_time); free(self.last_start); free(self.finish_time); free(self.progress)
        free(self.rate); free(self.updated); free(self.version); free(self.migrations); free(self.tier)
        free(self.tier_time); free(self.segment_time); free(self.prate_job); free(self.job_eff)
        free(self.restoring); free(self.restore_rate); free(self.needs_restore); free(self.nodes)
        free(self.cpu_true); free(self.cpu_est); free(self.vm_job); free(self.vm_est); free(self.cpu)
        free(self.factor); free(self.prate); free(self.overflow); free(self.rose); free(self.dirty_count)
        free(self.dirty); free(self.dirty_mark); free(self.small_mark); free(self.heap)
        free(self.queue); free(self.fenwick); free(self.fg); free(self.bg); free(self.order)
        free(self.scratch_nodes); free(self.scratch_keys); free(self.scratch_jobs)
        free(self.scratch_stale); free(self.scratch_est); free(self.scratch_est_tmp); free(self.counts)
        free(self.node_mark); free(self.by_node); free(self.held_mark)
        free(self.tree); free(self.tree_leaves); free(self.tree_pending); free(self.tree_n_pending)
        free(self.vm_leaf)
        free(self.ends); free(self.end_key); free(self.cpu_sum); free(self.kills_of); free(self.lost_progress)
        free(self.pin_mark)
        free(self.job_mark)
        free(self.k_changes); free(self.k_rates)

    # -- set-up ----------------------------------------------------------------------------------
    cdef int setup(self, object engine, double floor) except -1:
        cdef Py_ssize_t i, n, nodes, vms
        self.engine = engine
        self.progress_hook = engine.progress
        self.platform = platform = engine.platform
        self.policy = policy = engine.policy
        self.jobs = jobs = engine.jobs
        self.n_jobs = n = len(jobs)
        self.n_nodes = nodes = platform.capacity
        self.k = platform.tiers
        self.policy_tiers = self.k if policy.consolidates else 1
        self.vectorised = platform.vectorised
        self.bulk_from = platform.bulk_from
        self.per_job = platform.eff_per_job
        self.paper_eff = isinstance(platform.bg_efficiency, str)
        self.fixed_eff = 0.0 if self.paper_eff else platform.bg_efficiency
        self.overhead_max = platform.fg_overhead
        self.floor = floor
        self.threshold = policy.bg_threshold
        self.migration_cost = engine.migration_cost
        self.easy_family = not hasattr(policy, "preemption")
        if self.easy_family:
            self.may_kill = policy.may_kill
            self.adaptive = False
        else:
            self.preemption = {"all": ALL, "head": HEAD, "starved": STARVED}[policy.preemption]
            starvation = policy.starvation
            self.adaptive = starvation.adaptive
            self.fixed_xfactor = 0.0 if self.adaptive else starvation.fixed
            self.bsld_sum = starvation._bsld_sum
            self.completed = starvation._completed
        self.overhead_draws = platform._overhead
        self.ov_buffer = self.overhead_draws._uniform
        self.load_overhead()
        self.eff_draws = platform._eff
        vms = nodes * self.k
        self.state = <char*>calloc(n + 1, 1)
        self.size = <i64*>malloc((n + 1) * sizeof(i64))
        self.submit = <double*>malloc((n + 1) * sizeof(double))
        self.runtime = <double*>malloc((n + 1) * sizeof(double))
        self.estimate = <double*>malloc((n + 1) * sizeof(double))
        self.start_time = <double*>malloc((n + 1) * sizeof(double))
        self.last_start = <double*>malloc((n + 1) * sizeof(double))
        self.finish_time = <double*>malloc((n + 1) * sizeof(double))
        self.progress = <double*>malloc((n + 1) * sizeof(double))
        self.rate = <double*>malloc((n + 1) * sizeof(double))
        self.updated = <double*>malloc((n + 1) * sizeof(double))
        self.version = <i64*>malloc((n + 1) * sizeof(i64))
        self.migrations = <i64*>malloc((n + 1) * sizeof(i64))
        self.tier = <int*>calloc(n + 1, sizeof(int))
        self.tier_time = <double*>calloc((n + 1) * self.k, sizeof(double))
        self.segment_time = <double*>malloc((n + 1) * sizeof(double))
        self.prate_job = <double*>calloc(n + 1, sizeof(double))
        self.job_eff = <double*>calloc(n + 1, sizeof(double))
        self.restoring = <char*>calloc(n + 1, 1)
        self.restore_rate = <double*>calloc(n + 1, sizeof(double))
        self.needs_restore = <char*>calloc(n + 1, 1)
        self.nodes = <i64**>calloc(n + 1, sizeof(i64*))
        self.by_node = <i64**>calloc(n + 1, sizeof(i64*))
        self.held_mark = <char*>calloc(nodes + 8, 1)
        if self.by_node == NULL or self.held_mark == NULL:
            raise MemoryError()
        self.tree = <double**>calloc(n + 1, sizeof(double*))
        self.tree_pending = <int**>calloc(n + 1, sizeof(int*))
        self.tree_leaves = <i64*>calloc(n + 1, sizeof(i64))
        self.tree_n_pending = <i64*>calloc(n + 1, sizeof(i64))
        self.vm_leaf = <int*>calloc(nodes * self.k + 1, sizeof(int))
        if (self.tree == NULL or self.tree_pending == NULL or self.tree_leaves == NULL
                or self.tree_n_pending == NULL or self.vm_leaf == NULL):
            raise MemoryError()
        self.cpu_true = <double**>calloc(n + 1, sizeof(double*))
        self.cpu_est = <double**>calloc(n + 1, sizeof(double*))
        self.proc_order = <int**>calloc(n + 1, sizeof(int*))
        if self.proc_order == NULL:
            raise MemoryError()
        self.vm_job = <i64*>malloc(vms * sizeof(i64))
        self.vm_est = <double*>calloc(vms, sizeof(double))
        self.cpu = <double*>calloc(vms, sizeof(double))
        self.factor = <double*>calloc(vms, sizeof(double))
        self.prate = <double*>malloc(vms * sizeof(double))
        self.overflow = <double*>calloc(nodes, sizeof(double))
        # Every node idle: its lower tiers' load is 0; eligible for the background iff 0 < threshold.
        # (No standing order for the foreground: its keys are the background VMs' estimates, which
        # each background start deals out anew, so most of its picks would sort it afresh.)
        self.fg_rank = _Ranked(nodes, 0.0, False)
        self.el_rank = _Ranked(nodes, 0.0 if self.policy_tiers > 1 and 0.0 < self.threshold else INFINITY)
        self.fg_key = self.fg_rank.keys
        self.el_key = self.el_rank.keys
        self.lower_ranks = [None, None]
        for i in range(2, self.policy_tiers):
            self.lower_ranks.append(_Ranked(nodes, 0.0 if 0.0 < self.threshold else INFINITY))
        if self.k > 2:
            self.k_changes = <i64*>malloc((vms + 1) * sizeof(i64))
            self.k_rates = <double*>malloc((vms + 1) * sizeof(double))
            if self.k_changes == NULL or self.k_rates == NULL:
                raise MemoryError()
        self.dirty = <i64*>malloc(nodes * sizeof(i64))
        self.dirty_mark = <char*>calloc(nodes, 1)
        self.small_mark = <char*>calloc(nodes, 1)
        self.heap_cap = 1024
        self.heap = <Event*>malloc(self.heap_cap * sizeof(Event))
        self.queue = <i64*>malloc((n + 1) * sizeof(i64))
        self.fenwick = <i64*>calloc(n + 2, sizeof(i64))
        self.fg = <i64*>malloc((n + 1) * sizeof(i64))
        self.bg = <i64*>malloc((n + 1) * sizeof(i64))
        self.order_cap = n + 16
        self.order = <i64*>malloc(self.order_cap * sizeof(i64))
        self.scratch_nodes = <i64*>malloc((2 * nodes + 2) * sizeof(i64))
        self.rose = <char*>malloc(2 * nodes + 2)
        self.dirty_count = <i64*>calloc(n + 1, sizeof(i64))
        if self.rose == NULL or self.dirty_count == NULL:
            raise MemoryError()
        self.scratch_keys = <KeyNode*>malloc((nodes + 1) * sizeof(KeyNode))
        self.scratch_jobs = <i64*>malloc((4 * nodes + 4) * sizeof(i64))
        self.scratch_stale = <i64*>malloc((nodes + 1) * sizeof(i64))
        self.scratch_est = <EstProc*>malloc((nodes + 1) * sizeof(EstProc))
        self.scratch_est_tmp = <EstProc*>malloc((nodes + 1) * sizeof(EstProc))
        self.counts = <unsigned int*>malloc(RADIX_PASSES * RADIX * sizeof(unsigned int))
        if self.scratch_est_tmp == NULL or self.counts == NULL:
            raise MemoryError()
        self.node_mark = <char*>calloc(nodes + 1, 1)
        self.pin_mark = <char*>calloc(nodes + 1, 1)
        self.job_mark = <char*>calloc(n + 1, 1)
        if self.job_mark == NULL:
            raise MemoryError()
        self.ends = <KeyNode*>malloc((n + 1) * sizeof(KeyNode))
        self.end_key = <double*>calloc(n + 1, sizeof(double))
        self.cpu_sum = <double*>malloc((n + 1) * sizeof(double))
        self.kills_of = <i64*>calloc(n + 1, sizeof(i64))
        self.lost_progress = <double*>calloc(n + 1, sizeof(double))
        if (self.pin_mark == NULL or self.ends == NULL or self.end_key == NULL or self.cpu_sum == NULL
                or self.kills_of == NULL or self.lost_progress == NULL):
            raise MemoryError()
        if (self.state == NULL or self.size == NULL or self.submit == NULL or self.runtime == NULL
                or self.estimate == NULL or self.start_time == NULL or self.last_start == NULL
                or self.finish_time == NULL or self.progress == NULL or self.rate == NULL or self.updated == NULL
                or self.version == NULL or self.migrations == NULL or self.tier == NULL or self.tier_time == NULL
                or self.segment_time == NULL or self.prate_job == NULL or self.job_eff == NULL
                or self.restoring == NULL or self.restore_rate == NULL or self.needs_restore == NULL
                or self.nodes == NULL or self.cpu_true == NULL or self.cpu_est == NULL or self.vm_job == NULL
                or self.vm_est == NULL or self.cpu == NULL or self.factor == NULL or self.prate == NULL
                or self.overflow == NULL or self.fg_key == NULL or self.el_key == NULL or self.dirty == NULL
                or self.dirty_mark == NULL or self.small_mark == NULL or self.heap == NULL or self.queue == NULL
                or self.fenwick == NULL or self.fg == NULL or self.bg == NULL or self.order == NULL
                or self.scratch_nodes == NULL or self.scratch_keys == NULL or self.scratch_jobs == NULL
                or self.scratch_stale == NULL or self.scratch_est == NULL or self.node_mark == NULL):
            raise MemoryError()
        for i in range(n):
            job = jobs[i]
            self.size[i] = job.size
            self.submit[i] = job.submit_time
            self.runtime[i] = job.runtime
            self.estimate[i] = job.estimate
            self.start_time[i] = job.start_time
            self.last_start[i] = job.last_start_time
            self.finish_time[i] = job.finish_time
            self.progress[i] = job.progress
            self.rate[i] = job.rate
            self.updated[i] = job.updated_time
            self.version[i] = job.version
            self.migrations[i] = job.migrations
            self.segment_time[i] = job.segment_time
            self.cpu_sum[i] = job.cpu_sum
            self.state[i] = PENDING
        for i in range(vms):
            self.vm_job[i] = -1
            self.prate[i] = 1.0
        self.free0 = nodes
        self.free1 = nodes
        self.overflow_rate = platform.overflow_rate
        return 0

    # -- cpu usage -------------------------------------------------------------------------------
    cdef int load_cpu(self, Py_ssize_t j) except -1:
        """Copy job ``j``'s per-process CPU usage (the same lazy draws the Python run reads)."""
        if self.cpu_est[j] != NULL:
            return 0
        cdef Py_ssize_t p, size = self.size[j]
        cdef const double[::1] view
        job = self.jobs[j]
        true, est = job.cpu_values()
        cdef double* t = <double*>malloc(size * sizeof(double))
        cdef double* e = <double*>malloc(size * sizeof(double))
        if t == NULL or e == NULL:
            free(t)
            free(e)
            raise MemoryError()
        if type(true) is list or type(true) is tuple:
            for p in range(size):
                t[p] = true[p]
                e[p] = est[p]
        else:
            # Drawn afresh as float64 arrays (Job.cpu_values): copied whole, no float objects.
            view = true
            memcpy(t, &view[0], size * sizeof(double))
            view = est
            memcpy(e, &view[0], size * sizeof(double))
        self.cpu_true[j] = t
        self.cpu_est[j] = e
        job.drop_cpu()  # only running jobs hold per-process values
        return 0

    # -- the event heap --------------------------------------------------------------------------
    cdef int push(self, double time, int kind, i64 job) except -1:
        cdef Py_ssize_t i, parent
        cdef Event event
        if self.heap_n == self.heap_cap:
            grown = <Event*>malloc(2 * self.heap_cap * sizeof(Event))
            if grown == NULL:
                raise MemoryError()
            for i in range(self.heap_n):
                (<Event*>grown)[i] = self.heap[i]
            free(self.heap)
            self.heap = <Event*>grown
            self.heap_cap *= 2
        event.time = time
        event.kind = kind
        event.seq = self.sequence
        self.sequence += 1
        event.job = job
        event.version = self.version[job]
        i = self.heap_n
        self.heap_n += 1
        while i > 0:
            parent = (i - 1) >> 1
            if _before(&event, &self.heap[parent]):
                self.heap[i] = self.heap[parent]
                i = parent
            else:
                break
        self.heap[i] = event
        return 0

    cdef Event pop(self) noexcept:
        cdef Event top = self.heap[0], last
        cdef Py_ssize_t i = 0, child, n
        self.heap_n -= 1
        n = self.heap_n
        if n == 0:
            return top
        last = self.heap[n]
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and _before(&self.heap[child + 1], &self.heap[child]):
                child += 1
            if _before(&self.heap[child], &last):
                self.heap[i] = self.heap[child]
                i = child
            else:
                break
        self.heap[i] = last
        return top

    cdef int schedule_finish(self, i64 j) except -1:
        if self.rate[j] > 0:
            self.push(self.now + (self.runtime[j] - self.progress[j]) / self.rate[j], FINISH, j)
        return 0

    # -- sorted index arrays ---------------------------------------------------------------------
    cdef inline Py_ssize_t _bisect(self, i64* values, Py_ssize_t n, i64 x) noexcept:
        cdef Py_ssize_t lo = 0, hi = n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if values[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef inline void _insert(self, i64* values, Py_ssize_t* n, i64 x) noexcept:
        cdef Py_ssize_t at = self._bisect(values, n[0], x)
        memmove(values + at + 1, values + at, (n[0] - at) * sizeof(i64))
        values[at] = x
        n[0] += 1

    cdef inline void _remove(self, i64* values, Py_ssize_t* n, i64 x) noexcept:
        cdef Py_ssize_t at = self._bisect(values, n[0], x)
        memmove(values + at, values + at + 1, (n[0] - at - 1) * sizeof(i64))
        n[0] -= 1

    cdef inline void fenwick_add(self, i64 position, i64 amount) noexcept:
        cdef i64 i = position + 1
        while i <= self.n_jobs:
            self.fenwick[i] += amount
            i += i & (-i)

    cdef inline i64 fenwick_after(self, i64 position) noexcept:
        """Foreground units held by jobs of arrival rank above ``position``."""
        cdef i64 i = self.n_jobs, total = 0
        while i > 0:
            total += self.fenwick[i]
            i -= i & (-i)
        i = position + 1
        while i > 0:
            total -= self.fenwick[i]
            i -= i & (-i)
        return total

    # -- the policy's indexes (Consolidation._enter / _leave) -------------------------------------
    cdef inline void enter(self, i64 j, bint moved=False) noexcept:
        cdef double remaining
        if self.tier[j] != 0:
            self._insert(self.bg, &self.bg_n, j)
        elif not self.easy_family:
            self.fenwick_add(j, self.size[j])
            self._insert(self.fg, &self.fg_n, j)
        elif moved:
            # TwoTierEasy.on_move: a background job switched up is expected to end when what
            # its estimate leaves after its progress has run.
            remaining = self.estimate[j] - self.progress[j]
            self.end_insert(j, self.now + (remaining if remaining > 0.0 else 0.0))
        else:
            # Backfill.on_start
            remaining = self.estimate[j] - self.progress[j]
            if remaining < 0.0:
                remaining = 0.0
            self.end_insert(j, self.last_start[j] + remaining)

    cdef inline void leave(self, i64 j, int tier) noexcept:
        if tier != 0:
            self._remove(self.bg, &self.bg_n, j)
        elif not self.easy_family:
            self.fenwick_add(j, -self.size[j])
            self._remove(self.fg, &self.fg_n, j)
        else:
            self.end_remove(j)

    cdef inline Py_ssize_t end_bisect(self, KeyNode* key) noexcept:
        cdef Py_ssize_t lo = 0, hi = self.ends_n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if _cmp_keynode(&self.ends[mid], key) < 0:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef inline void end_insert(self, i64 j, double end) noexcept:
        cdef KeyNode key
        key.key = end
        key.node = j
        cdef Py_ssize_t at = self.end_bisect(&key)
        memmove(self.ends + at + 1, self.ends + at, (self.ends_n - at) * sizeof(KeyNode))
        self.ends[at] = key
        self.ends_n += 1
        self.end_key[j] = end

    cdef inline void end_remove(self, i64 j) noexcept:
        cdef KeyNode key
        key.key = self.end_key[j]
        key.node = j
        cdef Py_ssize_t at = self.end_bisect(&key)
        memmove(self.ends + at, self.ends + at + 1, (self.ends_n - at - 1) * sizeof(KeyNode))
        self.ends_n -= 1

    # -- node keys (NodeVms._refresh, for one node) ------------------------------------------------
    cdef inline void refresh_node(self, i64 node) noexcept:
        cdef Py_ssize_t k = self.k, base = node * k
        cdef double key, above
        if k > 2:
            self.refresh_node_k(node)
            return
        if self.vm_job[base] >= 0:
            key = INFINITY
        elif k == 2:
            key = self.vm_est[base + 1]
        else:
            key = 0.0
        if self.fg_key[node] != key:
            self.fg_rank.set(node, key)
        if self.policy_tiers > 1:
            above = self.vm_est[base]
            key = above if self.vm_job[base + 1] < 0 and above < self.threshold else INFINITY
            if self.el_key[node] != key:
                self.el_rank.set(node, key)

    cdef void refresh_node_k(self, i64 node) noexcept:
        """:meth:`refresh_node` with more than two tiers: the load of a node's tiers summed tier by
        tier from 0 (NodeVms._load), one eligibility index per background tier."""
        cdef Py_ssize_t k = self.k, base = node * k, t
        cdef double key, load = 0.0
        if self.vm_job[base] >= 0:
            key = INFINITY
        else:
            for t in range(1, k):
                load = load + self.vm_est[base + t]
            key = load
        if self.fg_key[node] != key:
            self.fg_rank.set(node, key)
        load = 0.0
        for t in range(1, self.policy_tiers):
            load = load + self.vm_est[base + t - 1]  # of the tiers above
            key = load if self.vm_job[base + t] < 0 and load < self.threshold else INFINITY
            self.set_eligible(t, node, key)

    cdef inline void set_eligible(self, Py_ssize_t t, i64 node, double key) noexcept:
        cdef _Ranked rank = self.eligible(t)
        if rank.keys[node] != key:
            rank.set(node, key)

    cdef inline _Ranked eligible(self, Py_ssize_t t):
        """The index of the nodes eligible for background tier ``t``."""
        return self.el_rank if t == 1 else <_Ranked>self.lower_ranks[t]

    cdef inline i64 eligible_count(self, Py_ssize_t t) noexcept:
        """How many nodes are eligible for background tier ``t`` (its index's members)."""
        return self.eligible(t).n_members

    cdef i64 background_room(self) noexcept:
        """The most eligible nodes of any background tier (0: no background start possible)."""
        cdef Py_ssize_t t
        cdef i64 room = self.el_rank.n_members
        for t in range(2, self.policy_tiers):
            if self.eligible_count(t) > room:
                room = self.eligible_count(t)
        return room

    cdef int background_tier(self, i64 size) noexcept:
        """The first background tier with ``size`` eligible nodes, or -1 (TieredVms.background_tier)."""
        cdef Py_ssize_t t
        for t in range(1, self.policy_tiers):
            if size <= self.eligible_count(t):
                return <int>t
        return -1

    # -- the platform (Nodes.start / release and the two-tier rate loop) ----------------------------
    cdef inline void mark_dirty(self, i64 node, bint small) noexcept:
        if not self.dirty_mark[node]:
            self.dirty_mark[node] = 1
            self.dirty[self.n_dirty] = node
            self.n_dirty += 1
        if small and not self.small_mark[node]:
            self.small_mark[node] = 1
            self.n_small_dirty += 1

    cdef double draw_eff(self, i64 size) except? -1.0:
        if not self.paper_eff:
            return self.fixed_eff
        if size == 1:
            return self.eff_draws.uniform(0.8, 1.0)
        return self.eff_draws.truncated_normal(0.428, 0.144, 0.2, 0.8)

    cdef void load_overhead(self):
        buffer = self.ov_buffer
        self.ov_values = buffer.values
        self.ov_position = buffer.position
        self.ov_length = self.ov_values.shape[0]

    cdef inline double draw_overhead(self) except? -1.0:
        # BufferedDraws.uniform, read straight from its buffered array (no float objects).
        cdef double value
        if not self.overhead_max:
            return 0.0
        if self.ov_position < self.ov_length:
            value = self.ov_values[self.ov_position]
            self.ov_position += 1
            return 0.0 + (self.overhead_max - 0.0) * value
        return self.draw_overhead_refilled()

    cdef double draw_overhead_refilled(self) except? -1.0:
        """:meth:`draw_overhead` once the buffer is used up."""
        cdef double value
        if self.ov_position == self.ov_length:
            self.ov_buffer.position = self.ov_position
            self.overhead_draws.refill_uniform()
            self.load_overhead()
        value = self.ov_values[self.ov_position]
        self.ov_position += 1
        return 0.0 + (self.overhead_max - 0.0) * value

    cdef i64* sort_by_node(self, i64 j) except? NULL:
        """Job ``j``'s nodes in ascending order, into ``by_node[j]``, if the job is wide enough
        that reading every node's mark costs less than its own random accesses save; else NULL."""
        cdef Py_ssize_t p, size = self.size[j]
        cdef i64* held = self.nodes[j]
        cdef i64* order
        cdef char* mark = self.held_mark
        free(self.by_node[j])
        self.by_node[j] = NULL
        if size * 16 < self.n_nodes or size < 2:
            return NULL
        order = <i64*>malloc(size * sizeof(i64))
        if order == NULL:
            raise MemoryError()
        for p in range(size):
            mark[held[p]] = 1
        _marked(mark, self.n_nodes, order)
        for p in range(size):
            mark[held[p]] = 0
        self.by_node[j] = order
        return order

    cdef inline i64* node_walk(self, i64 j) noexcept:
        """Job ``j``'s nodes in the order that reads memory best (each once; not process order)."""
        return self.by_node[j] if self.by_node[j] != NULL else self.nodes[j]

    cdef double platform_start(self, i64 j, int t, i64* placement) except? -2.0:
        cdef Py_ssize_t i, p, size = self.size[j], k = self.k
        cdef i64 node, vm
        cdef double* true
        cdef double* est
        cdef bint small = size < self.bulk_from
        cdef i64* held = <i64*>malloc(size * sizeof(i64))
        cdef i64* order
        if held == NULL:
            raise MemoryError()
        self.placed += size
        if t == 0:
            self.free0 -= size
        else:
            self.free1 -= size
        for p in range(size):
            held[p] = placement[p]
        free(self.nodes[j])
        self.nodes[j] = held
        order = self.sort_by_node(j)
        if k == 1:
            for p in range(size):
                self.vm_job[held[p] * k + t] = j
            for p in range(size):
                self.refresh_node(held[p])
            return 1.0
        self.load_cpu(j)
        true = self.cpu_true[j]
        est = self.cpu_est[j]
        # The job's values in process order (read in sequence: random reads of them stall, where
        # the stores to the nodes do not), then the nodes in node_walk order. A job holds one VM
        # of a node, so each node's state is its own and the passes' order does not matter.
        for p in range(size):
            vm = held[p] * k + t
            self.vm_job[vm] = j
            self.cpu[vm] = true[p]
            self.vm_est[vm] = est[p]
        for i in range(size):
            node = order[i] if order != NULL else held[i]
            self.vm_leaf[node * k + t] = <int>i
            self.mark_dirty(node, small)
            self.refresh_node(node)
        if k == 2 and size >= TREE_FROM:
            self.tree_start(j, t)
        if not small:
            self.dirty_bulk = True
        self.prate_job[j] = 0.0
        if t and self.per_job:
            self.job_eff[j] = self.draw_eff(size)
        self.rates_dirty = True
        return 0.0

    cdef void platform_release(self, i64 j) noexcept:
        cdef Py_ssize_t p, size = self.size[j], k = self.k
        cdef int t = self.tier[j]
        cdef i64 vm
        cdef i64* held = self.node_walk(j)
        cdef bint small = size < self.bulk_from
        for p in range(size):
            vm = held[p] * k + t
            self.vm_job[vm] = -1
            self.vm_est[vm] = 0.0
            self.refresh_node(held[p])
            if k > 1:
                self.mark_dirty(held[p], small)
        free(self.by_node[j])
        self.by_node[j] = NULL
        free(self.tree[j])
        free(self.tree_pending[j])
        self.tree[j] = NULL
        self.tree_pending[j] = NULL
        if t == 0:
            self.free0 += size
        else:
            self.free1 += size
        if k == 1:
            return
        if not small:
            self.dirty_bulk = True
        self.rates_dirty = True

    cdef int tree_start(self, i64 j, int t) except -1:
        """A min tree over the rates of the just started ``j``'s processes (leaves in node_walk
        order; all of them pulled up at its first read). Its nodes are dirty, so the rate pass
        that follows the start writes every leaf before any read: the leaves start at inf."""
        cdef Py_ssize_t i, size = self.size[j], leaves = 1
        cdef double* tree
        while leaves < size:
            leaves *= 2
        free(self.tree[j])
        free(self.tree_pending[j])
        self.tree_pending[j] = NULL
        tree = self.tree[j] = <double*>malloc(2 * leaves * sizeof(double))
        if tree == NULL:
            raise MemoryError()
        for i in range(leaves, 2 * leaves):
            tree[i] = INFINITY
        self.tree_leaves[j] = leaves
        self.tree_n_pending[j] = -1
        return 0

    cdef inline void set_prate(self, i64 vm, double value) noexcept:
        """``prate[vm] = value``, noted in the tree of the VM's job if it keeps one."""
        cdef i64 j = self.vm_job[vm], n
        cdef double* tree
        self.prate[vm] = value
        tree = self.tree[j]
        if tree == NULL:
            return
        tree[self.tree_leaves[j] + self.vm_leaf[vm]] = value
        n = self.tree_n_pending[j]
        if n < 0:
            return
        if self.tree_pending[j] == NULL:
            self.tree_pending[j] = <int*>malloc(self.size[j] * sizeof(int))
            if self.tree_pending[j] == NULL:
                self.tree_n_pending[j] = -1  # (then pulled up whole)
                return
        if n * _log2(self.tree_leaves[j]) >= self.tree_leaves[j]:
            self.tree_n_pending[j] = -1  # cheaper to pull every node up
            return
        self.tree_pending[j][n] = self.vm_leaf[vm]
        self.tree_n_pending[j] = n + 1

    cdef double tree_min(self, i64 j) noexcept:
        """The least rate of ``j``'s processes, from its tree."""
        cdef double* tree = self.tree[j]
        cdef i64 leaves = self.tree_leaves[j], n = self.tree_n_pending[j], i, at
        cdef double a, b, low
        if n < 0:
            for at in range(leaves - 1, 0, -1):
                a = tree[2 * at]
                b = tree[2 * at + 1]
                tree[at] = b if b < a else a
        else:
            for i in range(n):
                at = (leaves + self.tree_pending[j][i]) >> 1
                while at:
                    a = tree[2 * at]
                    b = tree[2 * at + 1]
                    low = b if b < a else a
                    if tree[at] == low:
                        break
                    tree[at] = low
                    at >>= 1
        self.tree_n_pending[j] = 0
        return tree[1]

    cdef double slowest(self, i64 j) noexcept:
        cdef Py_ssize_t p, size = self.size[j], k = self.k
        cdef int t = self.tier[j]
        cdef i64* held
        cdef double r, q
        if self.tree[j] != NULL:
            return self.tree_min(j)
        held = self.node_walk(j)
        r = self.prate[held[0] * k + t]
        for p in range(1, size):
            q = self.prate[held[p] * k + t]
            if q < r:
                r = q
        return r

    cdef inline Py_ssize_t add_unmarked_nodes(self, i64 j, char* mark, i64* out, Py_ssize_t n) noexcept:
        """Append to ``out[n:]`` the nodes of job ``j`` not yet marked in ``mark``, marking them
        (in :meth:`node_walk`'s order); returns the new count."""
        cdef Py_ssize_t p
        cdef i64 node
        cdef i64* held = self.node_walk(j)
        for p in range(self.size[j]):
            node = held[p]
            if not mark[node]:
                mark[node] = 1
                out[n] = node
                n += 1
        return n

    cdef Py_ssize_t rerate(self, i64* affected, Py_ssize_t n, i64* changes, double* rates,
                           Py_ssize_t n_changes) noexcept:
        """Re-rate the jobs ``affected[:n]`` (sorted, distinct) at their slowest process, appending
        each whose rate changed to ``changes``, its rate to ``rates`` and whether it went up to
        ``rose``; returns their count."""
        cdef Py_ssize_t i
        cdef i64 index
        cdef double r
        for i in range(n):
            index = affected[i]
            r = self.slowest(index)
            if r != self.prate_job[index]:
                self.rose[n_changes] = r > self.prate_job[index]
                self.prate_job[index] = r
                changes[n_changes] = index
                rates[n_changes] = r
                n_changes += 1
        return n_changes

    cdef int apply_rate_changes(self) except -1:
        """Nodes.rate_changes (two tiers) and Engine._apply_rate_changes."""
        cdef Py_ssize_t i, p, n_dirty = self.n_dirty, n_fg = 0, n_bg = 0, n_stale = 0, n_changes = 0
        cdef Py_ssize_t n = self.n_nodes
        cdef i64 node, fgj, bgj, vm, index
        cdef double f, r, idle, need
        cdef i64* dirty = self.dirty
        cdef i64* affected_fg = self.scratch_jobs
        cdef i64* affected_bg = self.scratch_jobs + n + 1
        cdef i64* changes = self.scratch_nodes
        cdef double* change_rates
        cdef i64* stale = self.scratch_stale
        cdef i64* held
        cdef char* mark = self.node_mark
        cdef bint sorted_overflow, wide_change = False
        # (The last job appended to each list: a wide job's nodes come in runs, so its copies
        # are dropped here rather than by the sort of the distinct.)
        cdef i64 last_fg = -1, last_bg = -1
        if self.k > 2:
            return self.apply_rate_changes_k()
        self.rates_dirty = False
        if n_dirty == 0:
            return 0
        _sort_marked(dirty, n_dirty, self.dirty_mark, n)
        sorted_overflow = self.vectorised and (self.dirty_bulk or self.n_small_dirty >= self.bulk_from)
        change_rates = <double*>malloc((2 * n + 2) * sizeof(double))
        if change_rates == NULL:
            raise MemoryError()
        try:
            for i in range(n_dirty):
                node = dirty[i]
                mark[node] = 1
                stale[n_stale] = node
                n_stale += 1
                fgj = self.vm_job[2 * node]
                bgj = self.vm_job[2 * node + 1]
                if fgj >= 0:
                    self.dirty_count[fgj] += 1
                    if fgj != last_fg:
                        affected_fg[n_fg] = fgj
                        n_fg += 1
                        last_fg = fgj
                    f = self.draw_overhead() if bgj >= 0 else 0.0
                    self.factor[2 * node] = f
                    self.set_prate(2 * node, 1.0 - f)
                if bgj >= 0:
                    self.dirty_count[bgj] += 1
                    if bgj != last_bg:
                        affected_bg[n_bg] = bgj
                        n_bg += 1
                        last_bg = bgj
                    if fgj >= 0:
                        self.factor[2 * node + 1] = self.job_eff[bgj] if self.per_job else self.draw_eff(self.size[bgj])
            n_fg = _distinct_sorted(affected_fg, n_fg, self.job_mark)
            n_changes = self.rerate(affected_fg, n_fg, changes, change_rates, 0)
            # A foreground job whose rate changed re-rates the background of all its nodes (those
            # of a job whose nodes are all dirty already are).
            for i in range(n_changes):
                index = changes[i]
                if self.all_dirty(index):
                    continue
                held = self.node_walk(index)
                for p in range(self.size[index]):
                    node = held[p]
                    bgj = self.vm_job[2 * node + 1]
                    if bgj >= 0:
                        if bgj != last_bg:
                            affected_bg[n_bg] = bgj
                            n_bg += 1
                            last_bg = bgj
                        if not mark[node]:
                            mark[node] = 1
                            stale[n_stale] = node
                            n_stale += 1
            for i in range(n_stale):
                node = stale[i]
                mark[node] = 0
                bgj = self.vm_job[2 * node + 1]
                if bgj < 0:
                    continue
                fgj = self.vm_job[2 * node]
                vm = 2 * node + 1
                if fgj < 0:
                    self.set_prate(vm, 1.0)
                    continue
                idle = 1.0 - self.cpu[2 * node] * self.prate_job[fgj]
                if idle < self.floor:
                    idle = self.floor
                need = self.cpu[vm]
                self.set_prate(vm, self.factor[vm] * (1.0 if idle >= need else idle / need))
            n_bg = _distinct_sorted(affected_bg, n_bg, self.job_mark)
            n_changes = self.rerate(affected_bg, n_bg, changes, change_rates, n_changes)
            for i in range(n_changes):
                if self.size[changes[i]] >= self.bulk_from:
                    wide_change = True
            self.update_overflow(sorted_overflow or (self.vectorised and wide_change), changes, n_changes)
            self.apply_job_rates(changes, change_rates, n_changes)
        finally:
            free(change_rates)
            for i in range(n_fg):
                self.dirty_count[affected_fg[i]] = 0
            for i in range(n_bg):
                self.dirty_count[affected_bg[i]] = 0
            self.clear_dirty()
        return 0

    cdef inline bint all_dirty(self, i64 j) noexcept:
        """During a two-tier rate pass: whether every node of job ``j`` is dirty."""
        return self.dirty_count[j] == self.size[j]

    cdef inline void clear_dirty(self) noexcept:
        """After a rate pass: no node is dirty any more."""
        cdef Py_ssize_t i
        if self.n_dirty * 8 >= self.n_nodes:
            # (Many: cleared whole, in sequence, rather than at random.)
            memset(self.dirty_mark, 0, self.n_nodes)
            memset(self.small_mark, 0, self.n_nodes)
        else:
            for i in range(self.n_dirty):
                self.dirty_mark[self.dirty[i]] = 0
                self.small_mark[self.dirty[i]] = 0
        self.n_dirty = 0
        self.n_small_dirty = 0
        self.dirty_bulk = False

    cdef inline void overflow_node(self, i64 node, double* total) noexcept:
        cdef i64 fgj = self.vm_job[2 * node], bgj = self.vm_job[2 * node + 1]
        cdef double old, used, excess
        if fgj < 0 or bgj < 0:
            old = self.overflow[node]
            if old:
                total[0] += 0.0 - old
                self.overflow[node] = 0.0
                self.n_overflowing -= 1
            return
        used = self.cpu[2 * node] * self.prate_job[fgj] + self.cpu[2 * node + 1] * self.prate_job[bgj]
        excess = used - 1.0 if used > 1.0 else 0.0
        old = self.overflow[node]
        total[0] += excess - old
        self.overflow[node] = excess
        self.n_overflowing += (excess != 0.0) - (old != 0.0)

    cdef inline int overflow_scope(self, i64* changes, Py_ssize_t i) noexcept:
        """Which nodes of ``changes[i]`` (a job whose rate changed in this pass) the overflow pass
        re-measures beyond the dirty ones: ``SCOPE_NONE``, ``SCOPE_ALL``, or ``SCOPE_OVERFLOWING``
        (those whose overflow is not 0). None if all of its nodes are dirty. All if its rate went
        up. Else only those that overflow already: a rate that went down lowers the use of every
        node of the job (rounding is monotonic), so a node that did not exceed 1 before does not
        now, and its overflow stays 0 (adding a zero to the sum changes nothing; the reference
        drops zero changes too). The other inputs of a node's use change only on dirty nodes or
        through another job in the list."""
        if self.all_dirty(changes[i]):
            return SCOPE_NONE
        if self.rose[i]:
            return SCOPE_ALL
        return SCOPE_OVERFLOWING if self.n_overflowing else SCOPE_NONE

    cdef inline Py_ssize_t add_overflowing_nodes(self, i64 j, char* mark, i64* out, Py_ssize_t n) noexcept:
        """:meth:`add_unmarked_nodes` for those of ``j``'s nodes whose overflow is not 0."""
        cdef Py_ssize_t p
        cdef i64 node
        cdef i64* held = self.node_walk(j)
        for p in range(self.size[j]):
            node = held[p]
            if self.overflow[node] != 0.0 and not mark[node]:
                mark[node] = 1
                out[n] = node
                n += 1
        return n

    cdef int update_overflow(self, bint in_node_order, i64* changes, Py_ssize_t n_changes) except -1:
        """Nodes._update_overflow / _update_overflow_bulk on the dirty nodes and the nodes of the
        jobs whose rate changed: in node order where the reference sums vectorised, else in the
        iteration order of the Python set the reference builds (the sum's rounding depends on it)."""
        cdef double total = self.overflow_rate
        cdef Py_ssize_t i, p, m = 0, bound
        cdef int scope
        cdef i64 node, j
        cdef i64* nodes
        cdef i64* held
        cdef char* mark = self.node_mark
        if in_node_order:
            nodes = <i64*>malloc((self.n_nodes + 1) * sizeof(i64))
            if nodes == NULL:
                raise MemoryError()
            bound = self.n_dirty
            for i in range(n_changes):
                if self.overflow_scope(changes, i) != SCOPE_NONE:
                    bound += self.size[changes[i]]
            if bound * 16 < self.n_nodes:
                # Few: collected, then sorted.
                for i in range(self.n_dirty):
                    node = self.dirty[i]
                    if not mark[node]:
                        mark[node] = 1
                        nodes[m] = node
                        m += 1
                for i in range(n_changes):
                    scope = self.overflow_scope(changes, i)
                    if scope == SCOPE_ALL:
                        m = self.add_unmarked_nodes(changes[i], mark, nodes, m)
                    elif scope == SCOPE_OVERFLOWING:
                        m = self.add_overflowing_nodes(changes[i], mark, nodes, m)
                _sort_marked(nodes, m, mark, self.n_nodes)
            else:
                # Many: marked without a test each (a mark is as good as random), read off the
                # marks in order.
                for i in range(self.n_dirty):
                    mark[self.dirty[i]] = 1
                for i in range(n_changes):
                    scope = self.overflow_scope(changes, i)
                    held = self.node_walk(changes[i])
                    if scope == SCOPE_ALL:
                        for p in range(self.size[changes[i]]):
                            mark[held[p]] = 1
                    elif scope == SCOPE_OVERFLOWING:
                        for p in range(self.size[changes[i]]):
                            if self.overflow[held[p]] != 0.0:
                                mark[held[p]] = 1
                m = _marked(mark, self.n_nodes, nodes)
            for i in range(m):
                mark[nodes[i]] = 0
                self.overflow_node(nodes[i], &total)
            free(nodes)
        else:
            touched = set()
            for i in range(self.n_dirty):
                PySet_Add(touched, self.dirty[i])
            for i in range(n_changes):
                j = changes[i]
                for p in range(self.size[j]):
                    PySet_Add(touched, self.nodes[j][p])
            for item in touched:
                self.overflow_node(<i64>item, &total)
        self.overflow_rate = total if total > 1e-12 else 0.0
        return 0

    cdef int apply_rate_changes_k(self) except -1:
        """Nodes._bulk_rate_changes (more than two tiers) and Engine._apply_rate_changes: the touched
        nodes in node order, their new factors drawn node by node and tier by tier, then the tiers
        from the foreground down, each re-rating the jobs on the nodes it touched; a job whose rate
        changed adds its nodes to those the tiers below re-rate."""
        cdef Py_ssize_t i, p, t, s, k = self.k, n = self.n_nodes, n_dirty = self.n_dirty
        cdef Py_ssize_t n_stale, n_affected, n_changes = 0, first
        cdef i64 node, base, vm, occupant, above, index
        cdef double used, idle, need, r
        cdef bint higher_busy
        cdef i64* dirty = self.dirty
        cdef i64* stale = self.scratch_stale
        cdef i64* affected = self.scratch_jobs
        cdef i64* changes = self.k_changes
        cdef double* change_rates = self.k_rates
        cdef char* mark = self.node_mark
        self.rates_dirty = False
        if n_dirty == 0:
            return 0
        _sort_marked(dirty, n_dirty, self.dirty_mark, n)
        try:
            # Nodes._draw_factors: a foreground process sharing its node gets a new overhead, a
            # background process below a busy tier a new efficiency (each kind from its own stream,
            # in node order, then tier order: the order of the reference's batched draws).
            for i in range(n_dirty):
                base = dirty[i] * k
                higher_busy = False
                for t in range(1, k):
                    if self.vm_job[base + t] >= 0:
                        higher_busy = True
                        break
                if self.vm_job[base] >= 0:
                    self.factor[base] = self.draw_overhead() if higher_busy else 0.0
                higher_busy = self.vm_job[base] >= 0
                for t in range(1, k):
                    occupant = self.vm_job[base + t]
                    if occupant < 0:
                        continue
                    if higher_busy:
                        if not self.paper_eff:
                            self.factor[base + t] = self.fixed_eff
                        elif self.per_job:
                            self.factor[base + t] = self.job_eff[occupant]
                        else:
                            self.factor[base + t] = self.draw_eff(self.size[occupant])
                    higher_busy = True
            n_stale = n_dirty
            for i in range(n_dirty):
                stale[i] = dirty[i]
                mark[dirty[i]] = 1
            for t in range(k):
                n_affected = 0
                for i in range(n_stale):
                    base = stale[i] * k
                    vm = base + t
                    occupant = self.vm_job[vm]
                    if occupant < 0:
                        continue
                    affected[n_affected] = occupant
                    n_affected += 1
                    if t == 0:
                        self.prate[vm] = 1.0 - self.factor[vm]
                        continue
                    # The CPU the higher tiers consume, summed tier by tier.
                    used = 0.0
                    higher_busy = False
                    for s in range(t):
                        above = self.vm_job[base + s]
                        if above >= 0:
                            used = used + self.cpu[base + s] * self.prate_job[above]
                            higher_busy = True
                    if not higher_busy:
                        self.prate[vm] = 1.0
                        continue
                    idle = 1.0 - used
                    if idle < self.floor:
                        idle = self.floor
                    need = self.cpu[vm]
                    self.prate[vm] = self.factor[vm] * (1.0 if idle >= need else idle / need)
                if n_affected == 0:
                    continue
                n_affected = _distinct_sorted(affected, n_affected, self.job_mark)
                first = n_changes
                n_changes = self.rerate(affected, n_affected, changes, change_rates, n_changes)
                if t == k - 1:
                    continue
                # Their consumption changed on all their nodes: the tiers below re-rate there.
                for i in range(first, n_changes):
                    index = changes[i]
                    n_stale = self.add_unmarked_nodes(index, mark, stale, n_stale)
            # The overflow of every node whose use may have changed (the touched ones and those of
            # the jobs re-rated), in node order.
            for i in range(n_changes):
                index = changes[i]
                n_stale = self.add_unmarked_nodes(index, mark, stale, n_stale)
            _sort_marked(stale, n_stale, mark, n)
            for i in range(n_stale):
                mark[stale[i]] = 0
            self.update_overflow_k(stale, n_stale)
            self.apply_job_rates(changes, change_rates, n_changes)
        finally:
            self.clear_dirty()
        return 0

    cdef void update_overflow_k(self, i64* nodes, Py_ssize_t n) noexcept:
        """Nodes._update_overflow_bulk on ``nodes`` (sorted): each node's use summed tier by tier,
        the changes of its excess over 1 added to the total one node at a time, in node order."""
        cdef Py_ssize_t i, t, k = self.k
        cdef i64 base, occupant
        cdef double total = self.overflow_rate, used, excess, delta
        cdef bint changed = False
        for i in range(n):
            base = nodes[i] * k
            used = 0.0
            for t in range(k):
                occupant = self.vm_job[base + t]
                if occupant >= 0:
                    used = used + self.cpu[base + t] * self.prate_job[occupant]
            excess = used - 1.0 if used > 1.0 else 0.0
            delta = excess - self.overflow[nodes[i]]
            self.overflow[nodes[i]] = excess
            if delta != 0.0:
                total = total + delta
                changed = True
        if changed:
            self.overflow_rate = total if total > 1e-12 else 0.0

    cdef int apply_job_rates(self, i64* changes, double* rates, Py_ssize_t n) except -1:
        """Engine._apply_rate_changes: the jobs whose platform rate changed, in order."""
        cdef Py_ssize_t i
        cdef i64 index
        cdef double r
        for i in range(n):
            index = changes[i]
            r = rates[i]
            if self.restoring[index]:
                self.restore_rate[index] = r
                continue
            if r == self.rate[index]:
                continue
            self.bring_up_to_date(index)
            self.rate[index] = r
            self.version[index] += 1
            self.schedule_finish(index)
        return 0

    # -- the engine's transitions --------------------------------------------------------------------
    cdef inline void bring_up_to_date(self, i64 j) noexcept:
        cdef double value = self.progress[j] + self.rate[j] * (self.now - self.updated[j])
        self.progress[j] = value if value < self.runtime[j] else self.runtime[j]
        self.updated[j] = self.now

    cdef inline void close_segment(self, i64 j) noexcept:
        self.tier_time[j * self.k + self.tier[j]] += self.now - self.segment_time[j]
        self.segment_time[j] = NAN

    cdef void queue_insert(self, i64 j) noexcept:
        self._insert(self.queue, &self.queue_n, j)

    cdef int apply_start(self, i64 j, int t, i64* placement) except -1:
        cdef double r = self.platform_start(j, t, placement)
        self._remove(self.queue, &self.queue_n, j)
        self.state[j] = RUNNING
        self.tier[j] = t
        if self.start_time[j] != self.start_time[j]:
            self.start_time[j] = self.now
        self.last_start[j] = self.now
        self.updated[j] = self.now
        self.segment_time[j] = self.now
        if self.needs_restore[j]:
            self.needs_restore[j] = 0
            self.migrations[j] += 1
            if self.migration_cost > 0:
                self.rate[j] = 0.0
                self.restoring[j] = 1
                self.restore_rate[j] = r
                self.push(self.now + self.migration_cost, RESTORE, j)
                self.enter(j)
                return 0
        self.rate[j] = r
        self.schedule_finish(j)
        self.enter(j)
        return 0

    cdef void requeue(self, i64 j) noexcept:
        self.platform_release(j)
        self.restoring[j] = 0
        self.state[j] = QUEUED
        self.rate[j] = 0.0
        self.version[j] += 1
        self.queue_insert(j)

    cdef int suspend(self, i64 j) except -1:
        self.bring_up_to_date(j)
        self.close_segment(j)
        self.requeue(j)
        self.needs_restore[j] = 1
        self.leave(j, self.tier[j])
        free(self.nodes[j])
        self.nodes[j] = NULL
        return 0

    cdef int move(self, i64 j, int t, i64* placement) except -1:
        cdef Py_ssize_t p, size = self.size[j]
        cdef int old_tier = self.tier[j]
        cdef bint swap = True, was_restoring
        cdef double r
        cdef i64* copy = <i64*>malloc(size * sizeof(i64))
        if copy == NULL:
            raise MemoryError()
        try:
            for p in range(size):
                copy[p] = placement[p]
                if placement[p] != self.nodes[j][p]:
                    swap = False
            self.bring_up_to_date(j)
            self.close_segment(j)
            self.platform_release(j)
            r = self.platform_start(j, t, copy)
        finally:
            free(copy)
        self.tier[j] = t
        self.segment_time[j] = self.now
        self.version[j] += 1
        was_restoring = self.restoring[j]
        if not swap:
            self.migrations[j] += 1
        if (not swap and self.migration_cost > 0) or (swap and was_restoring):
            self.rate[j] = 0.0
            self.restoring[j] = 1
            self.restore_rate[j] = r
            self.push(self.now + self.migration_cost, RESTORE, j)
        else:
            self.restoring[j] = 0
            self.rate[j] = r
            self.schedule_finish(j)
        self.leave(j, old_tier)
        self.enter(j, True)
        return 0

    cdef int finish(self, i64 j) except -1:
        cdef double response, bound, slowdown
        self.progress[j] = self.runtime[j]
        self.updated[j] = self.now
        self.close_segment(j)
        self.finish_time[j] = self.now
        self.state[j] = FINISHED
        self.rate[j] = 0.0
        self.platform_release(j)
        self.leave(j, self.tier[j])
        # StarvationThreshold.completed: bounded_slowdown(response, runtime)
        response = self.finish_time[j] - self.submit[j]
        bound = self.runtime[j] if self.runtime[j] > 10.0 else 10.0
        slowdown = response / bound
        self.bsld_sum += slowdown if slowdown > 1.0 else 1.0
        self.completed += 1
        self.n_finished += 1
        free(self.nodes[j])
        self.nodes[j] = NULL
        free(self.cpu_true[j])
        free(self.cpu_est[j])
        free(self.proc_order[j])
        self.cpu_true[j] = NULL
        self.cpu_est[j] = NULL
        self.proc_order[j] = NULL
        return 0

    # -- the policy (Consolidation.decide with NodeVms) ---------------------------------------------
    cdef inline i64 head(self) noexcept:
        cdef i64 first = self.queue[0] if self.queue_n else -1
        if self.bg_n and (first < 0 or self.bg[0] < first):
            return self.bg[0]
        return first

    cdef bint starved(self, i64 j) noexcept:
        cdef double estimate = self.estimate[j] if not (1.0 > self.estimate[j]) else 1.0
        cdef double xf = (self.now - self.submit[j] + estimate) / estimate
        cdef double value, mean
        if not self.adaptive:
            value = self.fixed_xfactor
        else:
            mean = self.bsld_sum / self.completed if self.completed else 0.0
            value = mean if mean > 10.0 else 10.0
        return xf >= value

    cdef int order_push(self, i64 x) except -1:
        cdef Py_ssize_t i, parent
        if self.order_n == self.order_cap:
            grown = <i64*>malloc(2 * self.order_cap * sizeof(i64))
            if grown == NULL:
                raise MemoryError()
            for i in range(self.order_n):
                grown[i] = self.order[i]
            free(self.order)
            self.order = grown
            self.order_cap *= 2
        i = self.order_n
        self.order_n += 1
        while i > 0:
            parent = (i - 1) >> 1
            if self.order[parent] > x:
                self.order[i] = self.order[parent]
                i = parent
            else:
                break
        self.order[i] = x
        return 0

    cdef i64 order_pop(self) noexcept:
        cdef i64 top, last
        cdef Py_ssize_t i, child, n
        while self.order_n:
            top = self.order[0]
            self.order_n -= 1
            n = self.order_n
            if n:
                last = self.order[n]
                i = 0
                while True:
                    child = 2 * i + 1
                    if child >= n:
                        break
                    if child + 1 < n and self.order[child + 1] < self.order[child]:
                        child += 1
                    if self.order[child] < last:
                        self.order[i] = self.order[child]
                        i = child
                    else:
                        break
                self.order[i] = last
            if top != self.order_previous:
                self.order_previous = top
                return top
        return -1

    cdef int decide(self) except -1:
        cdef i64 first_head
        if not self.queue_n and not self.bg_n:
            return 0
        while True:
            self.foreground_phase()
            if self.policy_tiers < 2 or not self.queue_n:
                return 0
            first_head = self.head()
            self.background_phase()
            if self.preemption != HEAD or not self.queue_n or self.head() == first_head:
                return 0

    cdef int foreground_phase(self) except -1:
        cdef Py_ssize_t a = 0, b = 0, i, n_displaced
        cdef i64 j, idle, later
        cdef bint head_only = self.preemption == HEAD
        cdef i64* displaced
        # ArrivalOrder([*queue, *background]): both sorted, so their merge is a heap.
        self.order_n = 0
        self.order_previous = -1
        if self.queue_n + self.bg_n > self.order_cap:
            free(self.order)
            self.order_cap = 2 * (self.queue_n + self.bg_n)
            self.order = <i64*>malloc(self.order_cap * sizeof(i64))
            if self.order == NULL:
                raise MemoryError()
        while a < self.queue_n or b < self.bg_n:
            if b >= self.bg_n or (a < self.queue_n and self.queue[a] < self.bg[b]):
                self.order[self.order_n] = self.queue[a]
                a += 1
            else:
                self.order[self.order_n] = self.bg[b]
                b += 1
            self.order_n += 1
        while True:
            j = self.order_pop()
            if j < 0:
                return 0
            if not (self.state[j] == QUEUED or (self.state[j] == RUNNING and self.tier[j] > 0)):
                continue
            idle = self.free0
            if self.size[j] <= idle:
                self.dispatch_foreground(j)
                continue
            if head_only and j != self.head():
                if idle == 0:
                    return 0
                continue
            later = self.fenwick_after(j)
            if idle + later == 0:
                return 0
            if self.size[j] <= idle + later and (head_only or self.preemption == ALL or self.starved(j)):
                displaced = <i64*>malloc((self.fg_n + 1) * sizeof(i64))
                if displaced == NULL:
                    raise MemoryError()
                try:
                    n_displaced = self.displace(j, self.size[j] - idle, displaced)
                    self.dispatch_foreground(j)
                    for i in range(n_displaced):
                        self.order_push(displaced[i])
                finally:
                    free(displaced)

    cdef Py_ssize_t displace(self, i64 j, i64 needed, i64* displaced) except -1:
        cdef Py_ssize_t i, m = 0, kept = 0
        cdef i64 total = 0, victim, index
        cdef int t
        for i in range(self.fg_n - 1, -1, -1):
            index = self.fg[i]
            if index <= j or total >= needed:
                break
            displaced[m] = index
            m += 1
            total += self.size[index]
        for i in range(m):
            victim = displaced[i]
            if total - self.size[victim] >= needed:
                total -= self.size[victim]
            else:
                displaced[kept] = victim
                kept += 1
        for i in range(kept):
            victim = displaced[i]
            t = self.free_lower_tier(victim)
            if t < 0:
                self.suspend(victim)
            else:
                self.move(victim, t, self.nodes[victim])
        return kept

    cdef int free_lower_tier(self, i64 j) noexcept:
        cdef Py_ssize_t p
        if self.policy_tiers < 2:
            return -1
        if self.k > 2:
            return self.free_lower_tier_k(j)
        for p in range(self.size[j]):
            if self.vm_job[self.nodes[j][p] * self.k + 1] >= 0 or not (0.0 < self.threshold):
                return -1
        return 1

    cdef int free_lower_tier_k(self, i64 j) noexcept:
        """NodeVms._free_lower_tier with more than two tiers: the highest background tier idle on
        all of ``j``'s nodes whose tiers between it and the foreground are estimated below the
        threshold, or -1."""
        cdef Py_ssize_t p, t, s, k = self.k
        cdef i64 base
        cdef double load
        cdef bint fits
        for t in range(1, self.policy_tiers):
            fits = True
            for p in range(self.size[j]):
                base = self.nodes[j][p] * k
                if self.vm_job[base + t] >= 0:
                    fits = False
                    break
                load = 0.0
                for s in range(1, t):
                    load = load + self.vm_est[base + s]
                if not (load < self.threshold):
                    fits = False
                    break
            if fits:
                return <int>t
        return -1

    cdef int place(self, i64 j, i64* chosen, i64* placement, bint none_placed) except -1:
        """NodeVms._place: the processes not yet in ``placement`` (-1) onto ``chosen``, heaviest
        estimated CPU usage first (ties in process order). The order is the job's own for
        its whole life (its estimates do not change): sorted once, at its first placement.
        ``none_placed``: every process is still -1 (none is read)."""
        cdef Py_ssize_t p, size = self.size[j], m = 0
        cdef EstProc* procs = self.scratch_est
        cdef int* order = self.proc_order[j]
        if order == NULL:
            self.load_cpu(j)
            order = <int*>malloc(size * sizeof(int))
            if order == NULL:
                raise MemoryError()
            for p in range(size):
                procs[p].est = self.cpu_est[j][p]
                procs[p].process = p
            if size >= RADIX_FROM:
                if not _radix_sort(procs, size, self.scratch_est_tmp, self.counts):
                    _merge_sort(procs, size, self.scratch_est_tmp)
            elif size > 1:
                _merge_sort(procs, size, self.scratch_est_tmp)
            for p in range(size):
                order[p] = <int>procs[p].process
            self.proc_order[j] = order
        if none_placed:
            for p in range(size):
                placement[order[p]] = chosen[p]
            return 0
        for p in range(size):
            if placement[order[p]] < 0:
                placement[order[p]] = chosen[m]
                m += 1
        return 0

    cdef int evictions(self, i64 j, int t, i64* placement) except -1:
        cdef Py_ssize_t p, size = self.size[j], k = self.k, n_victims = 0, s, lower
        cdef i64 node, base, occupant
        cdef double above, others
        cdef i64* victims
        if t + 1 >= k:
            return 0
        victims = <i64*>malloc((size * k + 1) * sizeof(i64))
        if victims == NULL:
            raise MemoryError()
        try:
            for p in range(size):
                base = placement[p] * k
                # The other processes of the tiers above, summed first (as the reference does).
                others = 0.0
                for s in range(t):
                    if self.vm_job[base + s] != j:
                        others = others + self.vm_est[base + s]
                above = self.cpu_est[j][p] + others
                for lower in range(t + 1, k):
                    occupant = self.vm_job[base + lower]
                    if occupant < 0 or occupant == j:
                        continue
                    if above >= self.threshold:
                        victims[n_victims] = occupant
                        n_victims += 1
                    else:
                        above += self.vm_est[base + lower]
            n_victims = _distinct_sorted(victims, n_victims, self.job_mark)
            for p in range(n_victims - 1, -1, -1):
                self.suspend(victims[p])
        finally:
            free(victims)
        return 0

    cdef int dispatch_foreground(self, i64 j) except -1:
        cdef Py_ssize_t p, size = self.size[j], n_kept = 0
        cdef bint moving = self.state[j] == RUNNING
        cdef i64 node
        cdef i64* placement = <i64*>malloc((2 * size + 1) * sizeof(i64))
        cdef i64* chosen = placement + size
        if placement == NULL:
            raise MemoryError()
        try:
            for p in range(size):
                placement[p] = -1
            if moving:
                # Keep the processes whose own node has an idle foreground VM (priority swap).
                for p in range(size):
                    node = self.nodes[j][p]
                    if self.vm_job[node * self.k] < 0:
                        placement[p] = node
                        self.node_mark[node] = 1
                        n_kept += 1
            self.fg_rank.smallest(size - n_kept, self.node_mark, self.scratch_keys, chosen)
            if moving:
                for p in range(size):
                    self.node_mark[self.nodes[j][p]] = 0
            self.place(j, chosen, placement, n_kept == 0)
            self.evictions(j, 0, placement)
            if moving:
                self.move(j, 0, placement)
            else:
                self.apply_start(j, 0, placement)
        finally:
            free(placement)
        return 0

    cdef int start_on(self, i64 j, int t, char* skip, bint evict) except -1:
        """Start the queued ``j`` in tier ``t`` on the nodes the tier's index ranks first,
        leaving out those marked in ``skip``, heaviest processes first (NodeVms.background,
        TieredVms.foreground and TieredVms.background); ``evict``: suspend the jobs of the tiers
        below that its processes would overload."""
        cdef Py_ssize_t p, size = self.size[j]
        cdef _Ranked rank = self.fg_rank if t == 0 else self.eligible(t)
        cdef i64* placement = <i64*>malloc((2 * size + 1) * sizeof(i64))
        if placement == NULL:
            raise MemoryError()
        try:
            for p in range(size):
                placement[p] = -1
            rank.smallest(size, skip, self.scratch_keys, placement + size)
            self.place(j, placement + size, placement, True)
            if evict:
                self.evictions(j, t, placement)
            self.apply_start(j, t, placement)
        finally:
            free(placement)
        return 0

    cdef int background_phase(self) except -1:
        cdef Py_ssize_t i, n, size
        cdef i64 j, room = self.background_room()
        cdef int t
        cdef i64* snapshot
        if room == 0:
            return 0
        n = self.queue_n
        snapshot = <i64*>malloc((n + 1) * sizeof(i64))
        if snapshot == NULL:
            raise MemoryError()
        try:
            for i in range(n):
                snapshot[i] = self.queue[i]
            for i in range(n):
                j = snapshot[i]
                size = self.size[j]
                if size > room:
                    continue
                t = self.background_tier(size)
                if t > 0:
                    self.start_on(j, t, self.node_mark, True)
                    room = self.background_room()
                    if room == 0:
                        return 0
        finally:
            free(snapshot)
        return 0

    # -- KEASY and REASY (TwoTierEasy.decide with TieredVms) ------------------------------------------
    cdef int kill(self, i64 j) except -1:
        """Engine._kill: the run is discarded, the job queued again with no progress."""
        cdef double lost
        self.bring_up_to_date(j)
        self.close_segment(j)
        self.requeue(j)
        lost = self.progress[j]
        self.kills += 1
        self.kills_of[j] += 1
        self.lost_progress[j] = self.lost_progress[j] + lost
        self.lost_work += lost * self.cpu_sum[j]
        self.progress[j] = 0.0
        self.leave(j, self.tier[j])
        free(self.nodes[j])
        self.nodes[j] = NULL
        return 0

    cdef bint own_foreground_idle(self, i64 j) noexcept:
        cdef Py_ssize_t p
        for p in range(self.size[j]):
            if self.vm_job[self.nodes[j][p] * self.k] >= 0:
                return False
        return True

    cdef i64 idle_foreground_among(self, i64 j) noexcept:
        cdef Py_ssize_t p
        cdef i64 idle = 0
        for p in range(self.size[j]):
            if self.vm_job[self.nodes[j][p] * self.k] < 0:
                idle += 1
        return idle

    cdef int deploy(self, i64 j, char* skip) except -1:
        """TwoTierEasy._deploy: 1 if ``j`` was deployed to the foreground, else 0."""
        if self.state[j] == QUEUED:
            self.start_on(j, 0, skip, False)
            return 1
        if self.own_foreground_idle(j):
            self.move(j, 0, self.nodes[j])  # a priority swap on its own nodes
            return 1
        if not self.may_kill:
            return 0  # pinned to its nodes
        self.kill(j)
        self.start_on(j, 0, skip, False)
        return 1

    cdef int decide_easy(self) except -1:
        cdef Py_ssize_t a = 0, b = 0, n, first = 0
        cdef i64* order
        if not self.queue_n and not self.bg_n:
            return 0
        n = self.queue_n + self.bg_n
        order = <i64*>malloc((n + 1) * sizeof(i64))
        if order == NULL:
            raise MemoryError()
        try:
            # Q u J_bg by arrival (both sorted: merged).
            while a < self.queue_n or b < self.bg_n:
                if b >= self.bg_n or (a < self.queue_n and self.queue[a] < self.bg[b]):
                    order[a + b] = self.queue[a]
                    a += 1
                else:
                    order[a + b] = self.bg[b]
                    b += 1
            # Step 1: deploy in arrival order while the foreground has room.
            while first < n:
                if self.size[order[first]] > self.free0:
                    break
                if not self.deploy(order[first], self.node_mark):
                    break
                first += 1
            # Step 2: the first job not deployed holds the reservation; the later ones backfill.
            if first < n:
                self.reserve(order[first], order + first + 1, n - first - 1)
        finally:
            free(order)
        # Step 3: the queued jobs in background VMs, shortest estimate first.
        if self.queue_n and self.background_room():
            self.background_easy()
        return 0

    cdef double easy_shadow(self, i64 free_now, i64 size, i64* extra) noexcept:
        """Easy.shadow over the foreground jobs by estimated end."""
        cdef i64 available = free_now
        cdef Py_ssize_t i = 0
        cdef double shadow = INFINITY, end
        while i < self.ends_n:
            end = self.ends[i].key
            available += self.size[self.ends[i].node]
            i += 1
            if available >= size:
                shadow = nextafter(self.now, INFINITY) if end <= self.now else end
                break
        while i < self.ends_n:
            if self.ends[i].key > shadow:
                break
            available += self.size[self.ends[i].node]
            i += 1
        extra[0] = available - size
        return shadow

    cdef double pinned_shadow(self, i64 head) noexcept:
        """TwoTierEasy._pinned_shadow: the last estimated end of the jobs in the foreground VMs
        of ``head``'s nodes."""
        cdef Py_ssize_t p
        cdef i64 occupant
        cdef bint any_end = False
        cdef double shadow = self.now
        for p in range(self.size[head]):
            occupant = self.vm_job[self.nodes[head][p] * self.k]
            if occupant >= 0:
                if not any_end or self.end_key[occupant] > shadow:
                    shadow = self.end_key[occupant]
                any_end = True
        return shadow if shadow > self.now else nextafter(self.now, INFINITY)

    cdef int reserve(self, i64 head, i64* waiting, Py_ssize_t n_waiting) except -1:
        """TwoTierEasy._reserve."""
        cdef double now = self.now, shadow, duration
        cdef i64 free_now = self.free0, extra = 0, j
        cdef bint pinned = self.state[head] != QUEUED and not self.may_kill, by_shadow, touches
        cdef Py_ssize_t i, p
        cdef char* pin = self.pin_mark
        if pinned:
            for p in range(self.size[head]):
                pin[self.nodes[head][p]] = 1
            shadow = self.pinned_shadow(head)
            extra = free_now - self.idle_foreground_among(head)
        else:
            shadow = self.easy_shadow(free_now, self.size[head], &extra)
        try:
            for i in range(n_waiting):
                j = waiting[i]
                if free_now == 0:
                    break
                if self.size[j] > free_now:
                    continue
                if self.state[j] == QUEUED:
                    duration = self.estimate[j]
                elif self.own_foreground_idle(j):
                    duration = self.estimate[j] - self.progress[j]
                    if not (duration > 0.0):
                        duration = 0.0
                    if pinned and now + duration > shadow:
                        touches = False
                        for p in range(self.size[j]):
                            if pin[self.nodes[j][p]]:
                                touches = True
                                break
                        if touches:
                            continue  # would keep the head's VMs past the shadow
                elif self.may_kill:
                    duration = self.estimate[j]
                else:
                    continue  # pinned to nodes whose foreground is busy
                by_shadow = now + duration <= shadow
                if not by_shadow and self.size[j] > extra:
                    continue
                self.deploy(j, self.node_mark if by_shadow or not pinned else pin)
                free_now = self.free0
                if pinned:
                    extra = free_now - self.idle_foreground_among(head)
                elif not by_shadow:
                    extra -= self.size[j]
        finally:
            if pinned:
                for p in range(self.size[head]):
                    pin[self.nodes[head][p]] = 0
        return 0

    cdef int background_easy(self) except -1:
        """TwoTierEasy._background: queued jobs in the first background tier with room for them,
        shortest estimate first (ties by arrival), placed on eligible nodes by the load of the tiers
        above."""
        cdef Py_ssize_t i, n = self.queue_n, size
        cdef i64 j, room = self.background_room()
        cdef int t
        cdef KeyNode* queued = <KeyNode*>malloc((n + 1) * sizeof(KeyNode))
        if queued == NULL:
            raise MemoryError()
        try:
            for i in range(n):
                queued[i].key = self.estimate[self.queue[i]]
                queued[i].node = self.queue[i]
            qsort(queued, n, sizeof(KeyNode), _cmp_keynode)
            for i in range(n):
                j = queued[i].node
                size = self.size[j]
                if size > room:
                    continue
                t = self.background_tier(size)
                if t < 0:
                    continue
                self.start_on(j, t, self.node_mark, False)
                room = self.background_room()
                if room == 0:
                    return 0
        finally:
            free(queued)
        return 0

    # -- the event loop (Engine.run) ----------------------------------------------------------------
    cdef int loop(self) except -1:
        cdef Py_ssize_t cursor = 0, n = self.n_jobs
        cdef double next_arrival = self.submit[0] if n else INFINITY
        cdef double last = NAN, now
        cdef bint happened
        cdef Event event
        while True:
            while self.heap_n and self.heap[0].version != self.version[self.heap[0].job]:
                self.pop()
            if self.heap_n:
                now = self.heap[0].time
                if next_arrival < now:
                    now = next_arrival
            elif cursor < n:
                now = next_arrival
            else:
                break
            if self.overflow_rate:
                self.overflow_seconds += self.overflow_rate * (now - last)
            last = now
            self.now = now
            happened = False
            while self.heap_n and self.heap[0].time == now:
                event = self.pop()
                if event.version != self.version[event.job]:
                    continue
                happened = True
                if event.kind == FINISH:
                    self.finish(event.job)
                else:
                    self.rate[event.job] = self.restore_rate[event.job]
                    self.restoring[event.job] = 0
                    self.updated[event.job] = now
                    self.schedule_finish(event.job)
            while next_arrival == now:
                self.state[cursor] = QUEUED
                self.queue[self.queue_n] = cursor
                self.queue_n += 1
                cursor += 1
                next_arrival = self.submit[cursor] if cursor < n else INFINITY
                happened = True
            if not happened:
                continue
            if self.rates_dirty:
                self.apply_rate_changes()
            self.passes += 1
            if (self.passes & 255) == 0:
                # Signal handlers run here (a cell's time limit, Ctrl-C): a compiled run that
                # never returned to the interpreter could not be stopped. So does the engine's
                # progress callback, every PROGRESS_EVERY (256) passes as on the Python loop.
                PyErr_CheckSignals()
                if self.progress_hook is not None:
                    self.progress_hook(self.n_finished, self.n_jobs, self.now - self.submit[0])
            if self.easy_family:
                self.decide_easy()
            else:
                self.decide()
            if self.rates_dirty:
                self.apply_rate_changes()
        return 0

    cdef int write_back(self) except -1:
        cdef Py_ssize_t i, t, k = self.k
        engine, jobs = self.engine, self.jobs
        for i in range(self.n_jobs):
            job = jobs[i]
            job.state = self.state[i]
            job.start_time = self.start_time[i]
            job.last_start_time = self.last_start[i]
            job.finish_time = self.finish_time[i]
            job.progress = self.progress[i]
            job.rate = self.rate[i]
            job.updated_time = self.updated[i]
            job.version = self.version[i]
            job.migrations = self.migrations[i]
            job.tier = self.tier[i]
            job.segment_time = self.segment_time[i]
            job.tier_time = [self.tier_time[i * k + t] for t in range(k)]
            job.nodes = () if self.state[i] == FINISHED else []
        engine.now = self.now
        engine.passes = self.passes
        engine.placed_processes += self.placed
        engine.overflow_seconds = self.overflow_seconds
        if self.kills:
            engine.kills = self.kills
            engine.lost_work = self.lost_work
            for i in range(self.n_jobs):
                if self.kills_of[i]:
                    engine.kills_by_job[i] = self.kills_of[i]
                    engine.lost_progress[i] = self.lost_progress[i]
        if self.easy_family:
            return 0
        self.platform.overflow_rate = self.overflow_rate
        starvation = self.policy.starvation
        starvation._bsld_sum = self.bsld_sum
        starvation._completed = self.completed
        return 0


cdef Py_ssize_t _distinct_sorted(i64* values, Py_ssize_t n, char* mark) noexcept:
    """Sort ``values[:n]`` ascending and drop repeats in place, returning how many are left,
    through a mark per value (all clear before and after): the repeats go first, so a wide job
    named once per node costs one pass, not a sort of every copy."""
    cdef Py_ssize_t i, kept = 0
    for i in range(n):
        if not mark[values[i]]:
            mark[values[i]] = 1
            values[kept] = values[i]
            kept += 1
    for i in range(kept):
        mark[values[i]] = 0
    if kept > 1:
        _sort_i64(values, kept)
    return kept


def run(engine, double floor):
    """Run ``engine`` (a consolidation policy, KEASY or REASY on ``nodes`` with any number of tiers, no observer,
    no segments) to its end, as :meth:`Engine.run` would; returns the number of jobs left queued
    or running (0 unless the policy got stuck)."""
    cdef _Run state = _Run()
    cdef Py_ssize_t i, left = 0
    state.setup(engine, floor)
    try:
        state.loop()
    finally:
        state.ov_buffer.position = state.ov_position
    state.write_back()
    for i in range(state.n_jobs):
        if state.state[i] != FINISHED:
            left += 1
    return left
