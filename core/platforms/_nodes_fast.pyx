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


def two_tier_rate_changes(object platform, list dirty, double floor):
    """``Nodes._two_tier_rate_changes(dirty)``; ``floor`` is ``CPU_IDLE_FLOOR``."""
    cdef list occ = platform.vm_job, factor = platform._factor, cpu = platform._cpu
    cdef list prate = platform._prate, rates = platform._rate
    cdef dict running = platform._running, vms_of = platform._vms
    cdef bint per_job = platform.eff_per_job
    cdef list job_eff = platform._job_eff if per_job else None
    draw_overhead = platform._draw_overhead
    process_eff = platform._process_eff
    cdef set affected_fg = set(), affected_bg = set(), stale
    cdef Py_ssize_t node, fg, bg, vm, index
    cdef double f, rate, idle, need
    cdef list changes = []
    cdef object item, job, nodes
    for item in dirty:
        node = item
        fg = _index(occ, 2 * node)
        bg = _index(occ, 2 * node + 1)
        if fg >= 0:
            affected_fg.add(fg)
            f = draw_overhead() if bg >= 0 else 0.0
            factor[2 * node] = f
            prate[2 * node] = 1.0 - f
        if bg >= 0:
            affected_bg.add(bg)
            if fg >= 0:
                factor[2 * node + 1] = job_eff[bg] if per_job else process_eff(bg)
    stale = set(dirty)
    for item in sorted(affected_fg):
        index = item
        rate = _slowest(prate, vms_of[index])
        if rate != _item(rates, index):
            rates[index] = rate
            job = running[index]
            changes.append((job, rate))
            nodes = job.nodes
            for item in nodes:
                node = item
                bg = _index(occ, 2 * node + 1)
                if bg >= 0:
                    affected_bg.add(bg)
                    stale.add(node)
    for item in stale:
        node = item
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
    for item in sorted(affected_bg):
        index = item
        rate = _slowest(prate, vms_of[index])
        if rate != _item(rates, index):
            rates[index] = rate
            changes.append((running[index], rate))
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
