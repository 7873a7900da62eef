# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The node index of the compiled run: node ids ordered by ``(key, node)``, and the sorts it uses.

:class:`_Ranked` is the compiled run's :class:`~tiersweep.core.ranked.RankedSet`: the
consolidation policies re-rank every node a start or an end touched, thousands at a time on a
large machine, and ask at each placement for "the ``count`` best nodes", so an update must
cost no more than a store and a pick must not sort every node. The keys live in one array
(``inf`` marks a non-member), cut into blocks of ``2 ** BLOCK_SHIFT`` ids, with a tournament
tree over the blocks' least ``(key, node)``: picking the ``count`` best visits the blocks that
can hold a winner, best first, in about ``O(count log n)``, and reads every key only when the
count is a large share of the members (then reading them all in order is cheaper). Many picks
are then sorted by a bucket sort over the keys' bits.

The sorts are the index's; :func:`_merge_sort` and :func:`_radix_sort` also serve the run (a
job's processes heaviest estimate first, node ids ascending), which cimports them, with
:class:`_Ranked`, from ``_ranked.pxd``: one definition of the orders and of the digits.
"""

from libc.math cimport INFINITY, NAN
from libc.stdlib cimport calloc, free, malloc, qsort
from libc.limits cimport ULLONG_MAX
from libc.string cimport memcpy, memset

from ._bits cimport TIERSWEEP_CTZ64, TIERSWEEP_FIRST_BYTE_LOW

# The bucket sort of _Ranked's picks (BLOCK_SHIFT and the radix digits are in _ranked.pxd).
DEF BUCKETS = 65536  # the most buckets of a spread of _Ranked's sort
DEF FIRST_PER = 64  # ids per bucket of its first spread (to twice as many)
DEF FIRST_MOST = 1024  # and the most buckets (few places written to at a time)
DEF SORT_FEW = 16  # a bucket of at most this many pairs: sorted by insertion
DEF BUCKETS_FROM = 256  # fewer pairs: _Ranked's select and merge sort
DEF LINEAR_FROM = 8  # _Ranked reads every key for a count of at least 1 / LINEAR_FROM of its members
DEF STANDING_FROM = 4096  # ids: from this many, _Ranked keeps its members sorted between reads
DEF PENDING_MOST = 64  # the standing order merges its moved ids when more than 1 / PENDING_MOST of it


cdef inline bint _less(double ka, i64 na, double kb, i64 nb) noexcept nogil:
    return ka < kb or (ka == kb and na < nb)


cdef inline bint _precedes(Sortable* a, Sortable* b) noexcept nogil:
    if Sortable is KeyNode:
        return _less(a.key, a.node, b.key, b.node)
    else:
        # Estimated CPU usage descending, ties by process ascending: Python's stable
        # ``sorted(range(size), key=cpu_est.__getitem__, reverse=True)``.
        return a.est > b.est or (a.est == b.est and a.process < b.process)


cdef void _merge_sort(Sortable* a, Py_ssize_t n, Sortable* tmp) noexcept nogil:
    """Sort ``a[:n]`` (``tmp``: room for ``n``): nodes by ``(key, node)``, processes heaviest
    first. A run already in order costs one comparison."""
    cdef Py_ssize_t half, i, j, k
    if n < 2:
        return
    half = n >> 1
    _merge_sort(a, half, tmp)
    _merge_sort(a + half, n - half, tmp)
    if _precedes(&a[half - 1], &a[half]):
        return
    for i in range(half):
        tmp[i] = a[i]
    i = 0
    j = half
    k = 0
    while i < half and j < n:
        if _precedes(&a[j], &tmp[i]):
            a[k] = a[j]
            j += 1
        else:
            a[k] = tmp[i]
            i += 1
        k += 1
    while i < half:
        a[k] = tmp[i]
        i += 1
        k += 1


cdef Py_ssize_t _width(Py_ssize_t m, Py_ssize_t per, Py_ssize_t most, unsigned long long* lo,
                       unsigned long long hi, Py_ssize_t* shift) noexcept nogil:
    """The buckets of :func:`_bucket` for ``m`` keys whose bits are ``lo`` (the least non-zero;
    more than ``hi`` if none) to ``hi`` (the greatest): ``per`` to ``2 * per`` keys a bucket on
    average, at most ``most`` buckets (a power of two), of equal width ``2 ** shift``; returns their
    number, the zeros' bucket included."""
    cdef Py_ssize_t n_buckets = 16
    while per * n_buckets * 2 <= m and n_buckets < most:
        n_buckets *= 2
    if lo[0] > hi:  # every key is zero
        lo[0] = hi
    shift[0] = 0
    while ((hi - lo[0]) >> shift[0]) >= <unsigned long long>n_buckets:
        shift[0] += 1
    return n_buckets + 1


cdef inline unsigned int _starts(unsigned int* c, Py_ssize_t n) noexcept nogil:
    """Counts per bucket ``c[:n]`` turned into where each bucket starts (an exclusive prefix
    sum); returns the largest count."""
    cdef Py_ssize_t i
    cdef unsigned int total = 0, at, most = 0
    for i in range(n):
        at = c[i]
        c[i] = total
        total += at
        if at > most:
            most = at
    return most


cdef KeyNode* _sort_bucket(KeyNode* a, Py_ssize_t n, KeyNode* tmp, unsigned int* c) noexcept nogil:
    """Sort the pairs ``a[:n]`` (keys > 0, equal keys in node order) by ``(key, node)``, in ``a``
    or in ``tmp`` (room for ``n``): which one is returned. A few by insertion; more, spread by
    their keys' bits into one or two per bucket (``c``: room for ``BUCKETS + 1``), stably, each
    bucket then sorted (all by one insertion pass if each is small); one key needs no sort."""
    cdef unsigned long long bits, lo = ULLONG_MAX, hi = 0
    cdef Py_ssize_t i, at, total, start, n_buckets, shift, most = 0
    if n <= SORT_FEW:
        _insertion_sort(a, n)
        return a
    for i in range(n):
        bits = _key_bits(a[i].key)
        if bits < lo:
            lo = bits
        if bits > hi:
            hi = bits
    if lo == hi:
        return a
    n_buckets = _width(n, 1, BUCKETS, &lo, hi, &shift)
    memset(c, 0, n_buckets * sizeof(unsigned int))
    for i in range(n):
        c[_bucket(_key_bits(a[i].key), lo, shift)] += 1
    most = _starts(c, n_buckets)
    for i in range(n):
        at = _bucket(_key_bits(a[i].key), lo, shift)
        tmp[c[at]] = a[i]
        c[at] += 1
    if most <= SORT_FEW:  # one pass: a pair moves only within its bucket
        _insertion_sort(tmp, n)
        return tmp
    start = 0
    for i in range(n_buckets):
        if c[i] - start > SORT_FEW:
            _merge_sort(tmp + start, c[i] - start, a)
        else:
            _insertion_sort(tmp + start, c[i] - start)
        start = c[i]
    return tmp


cdef inline Py_ssize_t _bucket(unsigned long long bits, unsigned long long lo, Py_ssize_t shift) noexcept nogil:
    """The bucket of a key's bits in _Ranked's sort: 0 for a zero, else 1 + the offset from
    ``lo`` (the least non-zero bits) in ``2 ** shift`` wide steps."""
    return (bits != 0) * (1 + <Py_ssize_t>((bits - lo) >> shift))


cdef inline unsigned long long _key_bits(double key) noexcept nogil:
    cdef unsigned long long bits
    if key == 0.0:
        return 0  # -0.0 too
    memcpy(&bits, &key, sizeof(double))
    return bits


cdef inline bint _radix_sortable(Radixed* x) noexcept nogil:
    """Whether ``x``'s value fits the digits: a number >= 0 (whose bits then order as the value
    does), an id in ``0 .. 2 ** 33 - 1``."""
    if Radixed is KeyNode:
        return x.key >= 0.0
    elif Radixed is EstProc:
        return x.est >= 0.0
    else:
        return 0 <= x[0] < (<i64>1 << (3 * RADIX_BITS))


cdef inline unsigned long long _digit(Radixed* x, Py_ssize_t d) noexcept nogil:
    """Digit ``d``, least significant first, of the number ``x`` sorts by: a node's id (three
    digits) under its key's bits (six), one 97-bit number; a process's estimate's complemented
    bits (six), so that the heaviest comes first; an id (three)."""
    if Radixed is KeyNode:
        if d < 3:
            return (<unsigned long long>x.node >> (d * RADIX_BITS)) & (RADIX - 1)
        return (_key_bits(x.key) >> ((d - 3) * RADIX_BITS)) & (RADIX - 1)
    elif Radixed is EstProc:
        return (~_key_bits(x.est) >> (d * RADIX_BITS)) & (RADIX - 1)
    else:
        return (<unsigned long long>x[0] >> (d * RADIX_BITS)) & (RADIX - 1)


cdef bint _radix_sort(Radixed* a, Py_ssize_t n, Radixed* tmp, unsigned int* counts) noexcept nogil:
    """Sort ``a[:n]`` as :func:`_merge_sort` does (nodes by ``(key, node)``; processes, given in
    process order, heaviest estimate first, ties in process order), ids ascending, least
    significant digit first in stable passes (``tmp``: room for ``n``; ``counts``: for
    ``RADIX_PASSES * RADIX``). A digit that every element shares costs no pass. Returns False,
    leaving ``a`` as it was, if a value does not fit (:func:`_radix_sortable`)."""
    cdef Py_ssize_t i, d, total, at
    cdef Py_ssize_t passes
    cdef unsigned long long digit
    cdef unsigned int* c
    cdef Radixed* src = a
    cdef Radixed* dst = tmp
    cdef Radixed* swap
    if Radixed is KeyNode:
        passes = RADIX_PASSES
    elif Radixed is EstProc:
        passes = 6
    else:
        passes = 3
    memset(counts, 0, passes * RADIX * sizeof(unsigned int))
    for i in range(n):
        if not _radix_sortable(&a[i]):
            return False
        for d in range(passes):
            counts[d * RADIX + _digit(&a[i], d)] += 1
    for d in range(passes):
        c = counts + d * RADIX
        if c[_digit(&src[0], d)] == <unsigned int>n:
            continue
        _starts(c, RADIX)
        for i in range(n):
            digit = _digit(&src[i], d)
            dst[c[digit]] = src[i]
            c[digit] += 1
        swap = src
        src = dst
        dst = swap
    if src != a:
        memcpy(a, src, n * sizeof(Radixed))
    return True


cdef inline void _insertion_sort(KeyNode* a, Py_ssize_t n) noexcept nogil:
    """Sort the few ``a[:n]`` by ``(key, node)``."""
    cdef Py_ssize_t i, j
    cdef KeyNode x
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and _less(x.key, x.node, a[j].key, a[j].node):
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


cdef void _select(KeyNode* a, Py_ssize_t n, Py_ssize_t k) noexcept:
    """Reorder ``a[:n]`` so that its ``k`` least by ``(key, node)`` come first, in no order
    (quickselect, the pivot a median of three; the pairs are distinct)."""
    cdef Py_ssize_t lo = 0, hi = n - 1, i, j, mid
    cdef KeyNode pivot, swap
    while hi - lo > 16:
        mid = lo + ((hi - lo) >> 1)
        # a[lo] <= a[mid] <= a[hi], the median then the pivot
        if _less(a[mid].key, a[mid].node, a[lo].key, a[lo].node):
            swap = a[mid]; a[mid] = a[lo]; a[lo] = swap
        if _less(a[hi].key, a[hi].node, a[lo].key, a[lo].node):
            swap = a[hi]; a[hi] = a[lo]; a[lo] = swap
        if _less(a[hi].key, a[hi].node, a[mid].key, a[mid].node):
            swap = a[hi]; a[hi] = a[mid]; a[mid] = swap
        pivot = a[mid]
        i = lo
        j = hi
        while i <= j:
            while _less(a[i].key, a[i].node, pivot.key, pivot.node):
                i += 1
            while _less(pivot.key, pivot.node, a[j].key, a[j].node):
                j -= 1
            if i <= j:
                swap = a[i]; a[i] = a[j]; a[j] = swap
                i += 1
                j -= 1
        # a[lo..j] <= pivot <= a[i..hi]; between them, the pivot itself
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return
    _insertion_sort(a + lo, hi - lo + 1)  # the few left


cdef class _Ranked:
    """Node ids by ``(key, node)``, ``inf`` marking a non-member (RankedSet): the keys in one
    array, cut into blocks of ``2 ** BLOCK_SHIFT`` ids, with a tournament tree over the blocks'
    least ``(key, node)``, so that picking the ``count`` best visits the blocks that can hold a
    winner, best first, in about ``O(count log n)``, and does not read every node unless the
    count is a large share of the members (then reading them all in order is cheaper). From
    ``STANDING_FROM`` ids (or as ``standing`` says), a large share is read off a standing order
    of the members, kept sorted between picks (:meth:`settle`)."""

    def __cinit__(self, Py_ssize_t n, double key, standing=None):
        cdef Py_ssize_t i
        self.n = n
        self.standing = n >= STANDING_FROM if standing is None else bool(standing)
        if self.standing:
            self.order = <KeyNode*>malloc((n + 1) * sizeof(KeyNode))
            self.order_spare = <KeyNode*>malloc((n + 1) * sizeof(KeyNode))
            self.pending = <KeyNode*>malloc((n + 1) * sizeof(KeyNode))
            self.placed = <double*>malloc((n + 1) * sizeof(double))
            self.moved = <i64*>malloc((n + 1) * sizeof(i64))
            self.moved_mark = <char*>calloc(n + 1, 1)
            self.absent = <char*>malloc(n + 1)
            if (self.order == NULL or self.order_spare == NULL or self.pending == NULL or self.placed == NULL
                    or self.moved == NULL or self.moved_mark == NULL or self.absent == NULL):
                raise MemoryError()
            self.order_n = n if key != INFINITY else 0
            for i in range(n):
                self.order[i].key = key
                self.order[i].node = i
                self.placed[i] = key if key != INFINITY else NAN
                self.absent[i] = key == INFINITY
        self.n_members = n if key != INFINITY else 0
        self.n_blocks = (n >> BLOCK_SHIFT) + 1
        self.leaves = 1
        while self.leaves < self.n_blocks:
            self.leaves *= 2
        self.keys = <double*>malloc((n + 1) * sizeof(double))
        self.tree_key = <double*>malloc(2 * self.leaves * sizeof(double))
        self.tree_node = <i64*>malloc(2 * self.leaves * sizeof(i64))
        self.block_dirty = <char*>calloc(self.n_blocks, 1)
        self.dirty_blocks = <i64*>malloc(self.n_blocks * sizeof(i64))
        self.frontier = <i64*>malloc(2 * self.leaves * sizeof(i64))
        self.tmp = <KeyNode*>malloc(2 * (n + 1) * sizeof(KeyNode))
        self.counts = <unsigned int*>malloc(2 * (BUCKETS + 1) * sizeof(unsigned int))
        self.marks = <unsigned long long*>calloc((n >> 6) + 1, sizeof(unsigned long long))
        if self.counts == NULL or self.marks == NULL:
            raise MemoryError()
        if (self.tmp == NULL or self.keys == NULL or self.tree_key == NULL or self.tree_node == NULL or self.block_dirty == NULL
                or self.dirty_blocks == NULL or self.frontier == NULL):
            raise MemoryError()
        for i in range(n):
            self.keys[i] = key
        for i in range(self.leaves):
            if (i << BLOCK_SHIFT) < n:
                self.tree_key[self.leaves + i] = key
                self.tree_node[self.leaves + i] = i << BLOCK_SHIFT
            else:
                self.tree_key[self.leaves + i] = INFINITY
                self.tree_node[self.leaves + i] = n
        for i in range(self.leaves - 1, 0, -1):
            self.pull(i)

    def __dealloc__(self):
        free(self.keys)
        free(self.tree_key)
        free(self.tree_node)
        free(self.block_dirty)
        free(self.dirty_blocks)
        free(self.frontier)
        free(self.tmp)
        free(self.counts)
        free(self.marks)
        free(self.order)
        free(self.order_spare)
        free(self.pending)
        free(self.placed)
        free(self.moved)
        free(self.moved_mark)
        free(self.absent)

    cdef inline bint pull(self, Py_ssize_t i) noexcept:
        """Tree node ``i`` from its children; whether it changed."""
        cdef Py_ssize_t c = 2 * i
        if not _less(self.tree_key[c], self.tree_node[c], self.tree_key[c + 1], self.tree_node[c + 1]):
            c += 1
        if self.tree_key[i] == self.tree_key[c] and self.tree_node[i] == self.tree_node[c]:
            return False
        self.tree_key[i] = self.tree_key[c]
        self.tree_node[i] = self.tree_node[c]
        return True

    cdef void clean(self) noexcept:
        cdef Py_ssize_t i, node, first, last, at
        cdef i64 b, best
        cdef double low
        for i in range(self.n_dirty):
            b = self.dirty_blocks[i]
            self.block_dirty[b] = 0
            first = b << BLOCK_SHIFT
            last = min(first + (1 << BLOCK_SHIFT), self.n)
            low = INFINITY
            best = self.n
            for node in range(first, last):
                if self.keys[node] < low:
                    low = self.keys[node]
                    best = node
            at = self.leaves + b
            if self.tree_key[at] == low and self.tree_node[at] == best:
                continue
            self.tree_key[at] = low
            self.tree_node[at] = best
            # Up while the least changes (another dirty block's walk covers its own changes).
            at >>= 1
            while at and self.pull(at):
                at >>= 1
        self.n_dirty = 0

    cdef inline void frontier_push(self, Py_ssize_t* m, i64 t) noexcept:
        cdef i64* f = self.frontier
        cdef Py_ssize_t i = m[0], parent
        m[0] = i + 1
        while i > 0:
            parent = (i - 1) >> 1
            if _less(self.tree_key[t], self.tree_node[t], self.tree_key[f[parent]], self.tree_node[f[parent]]):
                f[i] = f[parent]
                i = parent
            else:
                break
        f[i] = t

    cdef inline i64 frontier_pop(self, Py_ssize_t* m) noexcept:
        cdef i64* f = self.frontier
        cdef i64 top = f[0], last
        cdef Py_ssize_t i = 0, child, n
        m[0] -= 1
        n = m[0]
        if n:
            last = f[n]
            while True:
                child = 2 * i + 1
                if child >= n:
                    break
                if child + 1 < n and _less(self.tree_key[f[child + 1]], self.tree_node[f[child + 1]],
                                           self.tree_key[f[child]], self.tree_node[f[child]]):
                    child += 1
                if _less(self.tree_key[f[child]], self.tree_node[f[child]], self.tree_key[last], self.tree_node[last]):
                    f[i] = f[child]
                    i = child
                else:
                    break
            f[i] = last
        return top

    def put(self, nodes, keys):
        """Set each of ``nodes``'s key (``inf``: not a member), for tests from Python."""
        cdef Py_ssize_t i
        cdef i64 node
        if len(nodes) != len(keys):
            raise ValueError(f"_Ranked.put: {len(nodes)} nodes but {len(keys)} keys")
        for i in range(len(nodes)):
            node = nodes[i]
            if not 0 <= node < self.n:
                raise ValueError(f"_Ranked.put: node {node} is not in 0 .. {self.n - 1}")
            self.set(node, keys[i])

    def best(self, Py_ssize_t count, skip=()):
        """The ids :meth:`smallest` gives for ``count`` leaving out ``skip``, as a list (tests)."""
        cdef Py_ssize_t i, m
        cdef i64 node
        cdef char* marks = <char*>calloc(self.n + 1, 1)
        cdef KeyNode* found = <KeyNode*>malloc((self.n + 1) * sizeof(KeyNode))
        cdef i64* out = <i64*>malloc((self.n + 1) * sizeof(i64))
        try:
            if marks == NULL or found == NULL or out == NULL:
                raise MemoryError()
            for node in skip:
                if not 0 <= node < self.n:
                    raise ValueError(f"_Ranked.best: skipped node {node} is not in 0 .. {self.n - 1}")
                marks[node] = 1
            m = self.smallest(min(count, self.n), marks, found, out)
            return [out[i] for i in range(m)]
        finally:
            free(marks)
            free(found)
            free(out)

    cdef void node_order(self, KeyNode* found, Py_ssize_t m, i64* ids) noexcept:
        """The nodes of the pairs ``found[:m]`` (distinct) into ``ids``, ascending (a bit per node)."""
        cdef unsigned long long* marks = self.marks
        cdef unsigned long long word
        cdef Py_ssize_t i, j = 0, w, w_lo = self.n >> 6, w_hi = 0
        cdef i64 node
        for i in range(m):
            node = found[i].node
            w = node >> 6
            if w < w_lo:
                w_lo = w
            if w > w_hi:
                w_hi = w
            marks[w] |= (<unsigned long long>1) << (node & 63)
        for w in range(w_lo, w_hi + 1):
            word = marks[w]
            if not word:
                continue
            marks[w] = 0
            while word:
                ids[j] = (w << 6) | TIERSWEEP_CTZ64(word)
                word &= word - 1
                j += 1

    cdef bint sort_ids(self, i64* ids, Py_ssize_t m, Py_ssize_t count, KeyNode* loc, i64* out) noexcept:
        """The first ``count`` by ``(key, node)`` of the members ``ids[:m]`` (ascending; then room
        for ``m`` more) into ``out``; returns False, having written nothing, if a key is not a
        number >= 0 (``loc``: room for ``m`` pairs, ``self.tmp`` after the ids for as many).

        The ids are spread stably into buckets by their key's bits (:func:`_bucket`), whose order
        is the keys' order: the zeros, in node order, need no sort; then, from the first, each
        bucket up to the ``count``-th id is sorted (:func:`_sort_bucket`). The first spread has
        few buckets, and ids, not pairs, so that it writes to few places at a time."""
        cdef double* keys = self.keys
        cdef i64* spread = ids + m
        cdef unsigned int* c = self.counts
        cdef KeyNode* sorted_
        cdef unsigned long long bits, lo = ULLONG_MAX, hi = 0
        cdef Py_ssize_t i, k, at, total, start, size, n_buckets, shift
        cdef bint fits = True
        cdef i64 node
        cdef double key
        for i in range(m):
            key = keys[ids[i]]
            fits &= key >= 0.0
            bits = _key_bits(key)
            if bits and bits < lo:
                lo = bits
            if bits > hi:
                hi = bits
        if not fits:
            return False
        n_buckets = _width(m, FIRST_PER, FIRST_MOST, &lo, hi, &shift)
        memset(c, 0, n_buckets * sizeof(unsigned int))
        for i in range(m):
            c[_bucket(_key_bits(keys[ids[i]]), lo, shift)] += 1
        _starts(c, n_buckets)
        for i in range(m):
            node = ids[i]
            at = _bucket(_key_bits(keys[node]), lo, shift)
            spread[c[at]] = node
            c[at] += 1
        # c[i]: where bucket i ends
        start = min(<Py_ssize_t>c[0], count)
        memcpy(out, spread, start * sizeof(i64))
        for i in range(1, n_buckets):
            if start >= count:
                break
            size = c[i] - start
            for k in range(size):
                node = spread[start + k]
                loc[k].key = keys[node]
                loc[k].node = node
            sorted_ = _sort_bucket(loc, size, self.tmp + self.n + 1, self.counts + BUCKETS + 1)
            for k in range(min(size, count - start)):
                out[start + k] = sorted_[k].node
            start = c[i]
        return True

    cdef bint settle(self, KeyNode* loc) noexcept:
        """Bring the standing order up to date; False (and no standing order from then on) if a
        key is not a number (``loc``: room for ``n`` pairs).

        A node's key changes far less often than its membership: a background job's restart
        takes its nodes out of the index (key inf) and puts them back with the keys they had,
        each time. So the members are kept sorted across reads: an id stays placed by its last
        finite key while its key is inf, and only an id given another finite key (``moved``)
        is placed again. A few moved are sorted into ``pending`` and merged while the order is
        read (:meth:`first_in_order`); more, merged into the order; many, all sorted afresh."""
        cdef Py_ssize_t i, b = 0, m = 0, k = 0
        cdef i64 node
        cdef i64* ids = <i64*>self.tmp  # room for 2 * (n + 1)
        cdef KeyNode* merged = self.order_spare
        cdef KeyNode* swap
        cdef KeyNode x
        cdef double key
        self.n_pending = 0
        if self.n_moved == 0:
            return True
        for i in range(self.n_moved):
            key = self.keys[self.moved[i]]
            if key != key:
                self.standing = False
                return False
        if self.n_moved * 4 >= self.n:
            # Many: every member sorted (ids placed by their keys, the others not placed).
            for node in range(self.n):
                ids[m] = node
                m += self.keys[node] != INFINITY
            self.sorted_pairs(ids, m, loc, <i64*>self.order_spare, self.order)
            for node in range(self.n):
                self.placed[node] = NAN
            for i in range(m):
                self.placed[self.order[i].node] = self.order[i].key
            self.order_n = m
            self.clear_moved()
            return True
        # (In id order: the sorts take ids of equal keys in the order given.)
        _sort_marked(self.moved, self.n_moved, self.moved_mark, self.n)
        for i in range(self.n_moved):
            node = self.moved[i]
            ids[k] = node
            k += self.keys[node] != INFINITY
        self.sorted_pairs(ids, k, loc, ids + 2 * k, self.pending)
        self.n_pending = k
        if self.n_moved * PENDING_MOST < self.order_n:
            return True  # merged while read
        for i in range(self.order_n):
            x = self.order[i]
            if self.moved_mark[x.node]:
                continue
            while b < k and _less(self.pending[b].key, self.pending[b].node, x.key, x.node):
                merged[m] = self.pending[b]
                m += 1
                b += 1
            merged[m] = x
            m += 1
        while b < k:
            merged[m] = self.pending[b]
            m += 1
            b += 1
        for i in range(self.n_moved):
            node = self.moved[i]
            self.placed[node] = self.keys[node] if self.keys[node] != INFINITY else NAN
        swap = self.order
        self.order = merged
        self.order_spare = swap
        self.order_n = m
        self.n_pending = 0
        self.clear_moved()
        return True

    cdef void sorted_pairs(self, i64* ids, Py_ssize_t m, KeyNode* loc, i64* room, KeyNode* out) noexcept:
        """The members ``ids[:m]`` (in id order; then room for ``m`` more) as ``(key, id)`` pairs,
        sorted, into ``out`` (``loc``: room for ``m`` pairs, ``room`` for ``m`` ids)."""
        cdef Py_ssize_t i
        cdef i64 node
        if m >= BUCKETS_FROM and self.sort_ids(ids, m, m, loc, room):
            for i in range(m):
                node = room[i]
                out[i].key = self.keys[node]
                out[i].node = node
            return
        for i in range(m):
            out[i].key = self.keys[ids[i]]
            out[i].node = ids[i]
        _merge_sort(out, m, self.tmp + self.n + 1)

    cdef void clear_moved(self) noexcept:
        """No id is moved any more (each is placed by its key, or not placed)."""
        cdef Py_ssize_t i
        for i in range(self.n_moved):
            self.moved_mark[self.moved[i]] = 0
        self.n_moved = 0

    cdef Py_ssize_t first_in_order(self, Py_ssize_t count, char* skip, i64* out) noexcept:
        """The first ``count`` members of the (settled) standing order, its pending merged in,
        not marked in ``skip``, into ``out``; returns how many."""
        cdef Py_ssize_t i, m = 0, b = 0, k = self.n_pending
        cdef i64 node
        cdef KeyNode* pending = self.pending
        cdef KeyNode x
        if k == 0:
            for i in range(self.order_n):
                node = self.order[i].node
                out[m] = node
                m += (self.absent[node] | skip[node]) == 0
                if m == count:
                    return m
            return m
        for i in range(self.order_n):
            x = self.order[i]
            while b < k and _less(pending[b].key, pending[b].node, x.key, x.node):
                out[m] = pending[b].node
                m += skip[pending[b].node] == 0
                b += 1
                if m == count:
                    return m
            out[m] = x.node
            m += (self.absent[x.node] | skip[x.node] | self.moved_mark[x.node]) == 0
            if m == count:
                return m
        while b < k:
            out[m] = pending[b].node
            m += skip[pending[b].node] == 0
            b += 1
            if m == count:
                return m
        return m

    cdef Py_ssize_t smallest(self, Py_ssize_t count, char* skip, KeyNode* found, i64* out) noexcept:
        """The first ``count`` members by ``(key, node)`` not marked in ``skip``, into ``out``
        (fewer if there are fewer); returns how many (``found``: room for every node). For a
        count of at least a ``1 / LINEAR_FROM`` share of the members, every key is read in node
        order; for fewer, blocks are read by their least ``(key, node)``, ascending, until none
        left can hold a better one than the ``count``-th found."""
        cdef Py_ssize_t m = 0, n_frontier = 0, node, first, last, i
        cdef i64 t
        cdef bint bounded = False, linear
        cdef KeyNode bound
        cdef i64* ids = <i64*>self.tmp  # room for 2 * (n + 1)
        if count <= 0 or self.n_members == 0:
            return 0
        linear = count * LINEAR_FROM >= self.n_members
        if linear and self.standing and self.settle(found):
            return self.first_in_order(count, skip, out)
        if linear:
            for node in range(self.n):
                ids[m] = node
                m += (self.keys[node] != INFINITY) & (skip[node] == 0)
            if m >= BUCKETS_FROM and self.sort_ids(ids, m, count, found, out):
                return min(m, count)
            for i in range(m):
                found[i].key = self.keys[ids[i]]
                found[i].node = ids[i]
        else:
            self.clean()
            if self.tree_key[1] != INFINITY:
                self.frontier_push(&n_frontier, 1)
        while n_frontier:
            t = self.frontier_pop(&n_frontier)
            if bounded and not _less(self.tree_key[t], self.tree_node[t], bound.key, bound.node):
                break
            if t < self.leaves:
                if self.tree_key[2 * t] != INFINITY:
                    self.frontier_push(&n_frontier, 2 * t)
                if self.tree_key[2 * t + 1] != INFINITY:
                    self.frontier_push(&n_frontier, 2 * t + 1)
                continue
            first = (t - self.leaves) << BLOCK_SHIFT
            last = min(first + (1 << BLOCK_SHIFT), self.n)
            for node in range(first, last):
                if self.keys[node] == INFINITY or skip[node]:
                    continue
                if bounded and not _less(self.keys[node], node, bound.key, bound.node):
                    continue
                found[m].key = self.keys[node]
                found[m].node = node
                m += 1
            # Keep the best ``count`` found (amortised: when twice as many are held).
            if m >= count and (not bounded or m >= 2 * count):
                if m > count:
                    _select(found, m, count)
                    m = count
                bound = found[0]
                for i in range(1, m):
                    if _less(bound.key, bound.node, found[i].key, found[i].node):
                        bound = found[i]
                bounded = True
        if m >= BUCKETS_FROM and not linear:
            self.node_order(found, m, ids)
            if self.sort_ids(ids, m, count, found, out):
                return min(m, count)
        if m > count:
            _select(found, m, count)
            m = count
        _merge_sort(found, m, self.tmp)
        for i in range(m):
            out[i] = found[i].node
        return m


cdef int _cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef i64 x = (<const i64*>a)[0], y = (<const i64*>b)[0]
    return (x > y) - (x < y)


cdef void _sort_i64(i64* values, Py_ssize_t n) noexcept:
    """Sort ``values[:n]`` ascending: a few by insertion, more (ids in ``0 .. 2 ** 33``) in a
    radix sort, else by qsort."""
    cdef Py_ssize_t i, j
    cdef i64 x
    cdef unsigned int counts[3 * RADIX]
    cdef i64* tmp
    if n <= 32:
        for i in range(1, n):
            x = values[i]
            j = i - 1
            while j >= 0 and values[j] > x:
                values[j + 1] = values[j]
                j -= 1
            values[j + 1] = x
        return
    tmp = <i64*>malloc(n * sizeof(i64))
    if tmp == NULL or not _radix_sort(values, n, tmp, counts):
        qsort(values, n, sizeof(i64), _cmp_i64)
    free(tmp)


cdef void _sort_marked(i64* values, Py_ssize_t n, char* mark, Py_ssize_t top) noexcept:
    """Sort the distinct ``values[:n]`` in ``0 .. top - 1``, each marked in ``mark``: many of
    them are read off the marks in order (linear), few are sorted."""
    if n * 16 < top:
        _sort_i64(values, n)
        return
    _marked(mark, top, values)


cdef Py_ssize_t _marked(char* mark, Py_ssize_t top, i64* out) noexcept:
    """The indices ``0 .. top - 1`` marked in ``mark`` (each mark 0 or 1), ascending, into
    ``out``; returns their count. Eight marks are read at a time, and a word's marked ones are
    taken by their lowest set bit, with no test per mark (a mark is as good as random)."""
    cdef Py_ssize_t i = 0, m = 0
    cdef unsigned long long word
    while i + 8 <= top:
        memcpy(&word, mark + i, 8)
        word = TIERSWEEP_FIRST_BYTE_LOW(word)
        while word:
            out[m] = i + (TIERSWEEP_CTZ64(word) >> 3)
            m += 1
            word &= word - 1
        i += 8
    while i < top:
        if mark[i]:
            out[m] = i
            m += 1
        i += 1
    return m
