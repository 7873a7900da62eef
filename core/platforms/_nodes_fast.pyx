# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled kernels of the ``nodes`` platform's rate computation on two tiers.

Each function is a line-by-line transcription of the method of
:class:`tiersweep.core.platforms.nodes.Nodes` it names, on the same per-VM lists, with the same
random draws taken through the platform's own draw methods in the same order, and the same
floating-point operations in the same order: results are bit for bit those of the Python
reference (``tests/test_compiled_path.py`` runs every tiered policy on both and compares).
They are used only where the platform keeps its per-VM state in plain lists (two tiers, fewer
than ``VECTOR_VMS`` VMs): there every job's VMs are a list too.
"""

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc, qsort

import numpy as np


cdef inline double _item(list values, Py_ssize_t i):
    return <double><object>PyList_GET_ITEM(values, i)


cdef inline Py_ssize_t _index(list values, Py_ssize_t i):
    return <Py_ssize_t><object>PyList_GET_ITEM(values, i)


cdef double _slowest(list prate, list vms):
    """The smallest rate of the VMs ``vms`` (``min(map(prate.__getitem__, vms))``)."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(vms)
    cdef double rate = _item(prate, _index(vms, 0)), r
    for i in range(1, n):
        r = _item(prate, _index(vms, i))
        if r < rate:
            rate = r
    return rate


cdef double _uniform(object draws, double low, double high):
    """``draws.uniform(low, high)`` (a :class:`~tiersweep.core.platforms.draws.BufferedDraws`),
    read straight from its buffered list while that holds values; the method itself refills."""
    buffer = draws._uniform
    cdef list items = buffer._items
    cdef Py_ssize_t position = buffer.position
    if items is None or position >= PyList_GET_SIZE(items):
        return draws.uniform(low, high)
    buffer.position = position + 1
    return low + (high - low) * _item(items, position)


cdef int _compare(const void* a, const void* b) noexcept nogil:
    cdef long long x = (<const long long*>a)[0], y = (<const long long*>b)[0]
    return (x > y) - (x < y)


cdef Py_ssize_t _sort_unique(long long* values, Py_ssize_t n) noexcept:
    """Sort ``values[:n]`` ascending and drop repeats in place; return how many are left."""
    cdef Py_ssize_t i, kept = 0
    qsort(values, n, sizeof(long long), _compare)
    for i in range(n):
        if kept == 0 or values[i] != values[kept - 1]:
            values[kept] = values[i]
            kept += 1
    return kept


cdef int _rerate(long long* affected, Py_ssize_t n, list prate, list rates, dict vms_of, dict running, list changes) except -1:
    """Re-rate the jobs ``affected[:n]`` (sorted, distinct) at their slowest process, appending
    ``(job, rate)`` to ``changes`` for each whose rate changed."""
    cdef Py_ssize_t i, index
    cdef double rate
    for i in range(n):
        index = affected[i]
        rate = _slowest(prate, vms_of[index])
        if rate != _item(rates, index):
            rates[index] = rate
            changes.append((running[index], rate))
    return 0


def two_tier_rate_changes(object platform, list dirty, double floor):
    """``Nodes._two_tier_rate_changes(dirty)``; ``floor`` is ``CPU_IDLE_FLOOR``.

    The sets of the reference are C arrays here: the affected jobs are sorted and deduplicated
    before they are read (the reference reads its sets in sorted order too), and the stale
    nodes are marked once each (each is re-rated on its own, so their order does not matter).
    """
    cdef list occ = platform.vm_job, factor = platform._factor, cpu = platform._cpu
    cdef list prate = platform._prate, rates = platform._rate
    cdef dict running = platform._running, vms_of = platform._vms
    cdef bint per_job = platform.eff_per_job
    cdef list job_eff = platform._job_eff if per_job else None
    overhead = platform._overhead
    cdef double overhead_max = platform.fg_overhead
    process_eff = platform._process_eff
    cdef Py_ssize_t capacity = platform.capacity, n_dirty = PyList_GET_SIZE(dirty)
    cdef Py_ssize_t node, fg, bg, vm, index, i, j, n_fg = 0, n_bg = 0, n_stale = 0
    cdef double f, rate, idle, need
    cdef list changes = [], nodes
    cdef object job
    # One block: fg jobs (<= dirty), bg jobs (<= dirty + every node once), stale nodes
    # (<= every node), and a mark per node.
    cdef long long* block = <long long*>malloc((2 * n_dirty + 2 * capacity + 1) * sizeof(long long))
    cdef unsigned char* marked = <unsigned char*>malloc(capacity + 1)
    if block == NULL or marked == NULL:
        free(block)
        free(marked)
        raise MemoryError()
    cdef long long* affected_fg = block
    cdef long long* affected_bg = block + n_dirty
    cdef long long* stale = block + 2 * n_dirty + capacity
    try:
        for i in range(capacity):
            marked[i] = 0
        for i in range(n_dirty):
            node = _index(dirty, i)
            if not marked[node]:
                marked[node] = 1
                stale[n_stale] = node
                n_stale += 1
            fg = _index(occ, 2 * node)
            bg = _index(occ, 2 * node + 1)
            if fg >= 0:
                affected_fg[n_fg] = fg
                n_fg += 1
                # (``Nodes._draw_overhead``, inlined: one draw per foreground process sharing a CPU.)
                f = (_uniform(overhead, 0.0, overhead_max) if overhead_max else 0.0) if bg >= 0 else 0.0
                factor[2 * node] = f
                prate[2 * node] = 1.0 - f
            if bg >= 0:
                affected_bg[n_bg] = bg
                n_bg += 1
                if fg >= 0:
                    factor[2 * node + 1] = job_eff[bg] if per_job else process_eff(bg)
        n_fg = _sort_unique(affected_fg, n_fg)
        _rerate(affected_fg, n_fg, prate, rates, vms_of, running, changes)
        # A foreground job whose rate changed re-rates the background of all its nodes.
        for i in range(PyList_GET_SIZE(changes)):
            job = (<tuple>PyList_GET_ITEM(changes, i))[0]
            nodes = job.nodes
            for j in range(PyList_GET_SIZE(nodes)):
                node = _index(nodes, j)
                bg = _index(occ, 2 * node + 1)
                if bg >= 0:
                    affected_bg[n_bg] = bg
                    n_bg += 1
                    if not marked[node]:
                        marked[node] = 1
                        stale[n_stale] = node
                        n_stale += 1
        for i in range(n_stale):
            node = stale[i]
            bg = _index(occ, 2 * node + 1)
            if bg < 0:
                continue
            fg = _index(occ, 2 * node)
            vm = 2 * node + 1
            if fg < 0:
                prate[vm] = 1.0
                continue
            idle = 1.0 - _item(cpu, 2 * node) * _item(rates, fg)
            if idle < floor:
                idle = floor
            need = _item(cpu, vm)
            prate[vm] = _item(factor, vm) * (1.0 if idle >= need else idle / need)
        n_bg = _sort_unique(affected_bg, n_bg)
        _rerate(affected_bg, n_bg, prate, rates, vms_of, running, changes)
    finally:
        free(block)
        free(marked)
    return changes


def update_overflow(object platform, list dirty, list changes):
    """``Nodes._update_overflow(dirty, changes)``."""
    cdef set nodes = set(dirty)
    cdef object job, item
    for job, _ in changes:
        nodes.update(job.nodes)
    cdef list occ = platform.vm_job, cpu = platform._cpu, rates = platform._rate, overflow = platform._overflow
    cdef double total = platform.overflow_rate, old, used, excess
    cdef Py_ssize_t node, fg, bg
    for item in nodes:
        node = item
        fg = _index(occ, 2 * node)
        bg = _index(occ, 2 * node + 1)
        if fg < 0 or bg < 0:
            old = _item(overflow, node)
            if old:
                total += 0.0 - old
                overflow[node] = 0.0
            continue
        used = _item(cpu, 2 * node) * _item(rates, fg) + _item(cpu, 2 * node + 1) * _item(rates, bg)
        excess = used - 1.0 if used > 1.0 else 0.0
        total += excess - _item(overflow, node)
        overflow[node] = excess
    platform.overflow_rate = total if total > 1e-12 else 0.0


def idle_remove(long long[::1] items, long long[::1] pos, Py_ssize_t count, const long long[:] nodes):
    """``IdleSet.remove(nodes)`` on its ``items`` and ``pos``; returns the new count."""
    cdef Py_ssize_t n = nodes.shape[0], top = count - n, i, holes = 0, movers = 0
    cdef long long hole, item
    if n == 0:
        return count
    cdef long long* buffer = <long long*>malloc(2 * n * sizeof(long long))
    if buffer == NULL:
        raise MemoryError()
    cdef long long* mover = buffer + n
    for i in range(n):
        hole = pos[nodes[i]]
        pos[nodes[i]] = -1
        if hole < top:
            buffer[holes] = hole
            holes += 1
    qsort(buffer, holes, sizeof(long long), _compare)
    for i in range(top, count):
        item = items[i]
        if pos[item] >= 0:
            mover[movers] = item
            movers += 1
    for i in range(holes):
        items[buffer[i]] = mover[i]
        pos[mover[i]] = buffer[i]
    free(buffer)
    return top


def idle_extend(long long[::1] items, long long[::1] pos, Py_ssize_t count, const long long[:] nodes):
    """``IdleSet.extend(nodes)`` on its ``items`` and ``pos``; returns the new count."""
    cdef Py_ssize_t i, n = nodes.shape[0]
    for i in range(n):
        items[count + i] = nodes[i]
        pos[nodes[i]] = count + i
    return count + n


def two_tier_node_keys(list nodes, list vm_job, list vm_est, double threshold):
    """The re-ranking keys of ``nodes`` on two tiers, as ``NodeVms._refresh`` computes them one
    node at a time: ``(ids, fg_idle, eligible)``, where ``fg_idle`` is the estimated load of the
    background VM of a node whose foreground VM is idle (else inf) and ``eligible`` the load of
    the foreground VM of a node whose background VM is idle and that load below ``threshold``
    (else inf)."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(nodes), node
    ids = np.empty(n, dtype=np.int64)
    idle = np.empty(n)
    eligible = np.empty(n)
    cdef long long[::1] ids_view = ids
    cdef double[::1] idle_view = idle, eligible_view = eligible
    cdef double above
    for i in range(n):
        node = _index(nodes, i)
        ids_view[i] = node
        idle_view[i] = INFINITY if _index(vm_job, 2 * node) >= 0 else _item(vm_est, 2 * node + 1)
        above = _item(vm_est, 2 * node)
        eligible_view[i] = above if _index(vm_job, 2 * node + 1) < 0 and above < threshold else INFINITY
    return ids, idle, eligible


def idle_in_tier(list vm_job, list nodes, Py_ssize_t tiers, bint all_of):
    """Of ``nodes``, those whose VM in tier 0 is idle: whether all are (``all_of``), else how
    many (``all(vm_job[n * tiers] < 0 for n in nodes)``, ``sum(vm_job[n * tiers] < 0 ...)``)."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(nodes), idle = 0
    for i in range(n):
        if _index(vm_job, _index(nodes, i) * tiers) < 0:
            idle += 1
        elif all_of:
            return False
    return True if all_of else idle
