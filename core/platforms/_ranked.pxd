# The node index of the compiled run and the sorts it shares with the run (_ranked.pyx): what
# _tiered_run cimports. The constants are an enum, not DEF, so that both modules read one
# definition.

cimport cython
from libc.math cimport INFINITY

ctypedef long long i64


# A node and its key, ordered by (key, node).
cdef struct KeyNode:
    double key
    i64 node


# A process and its estimated CPU usage, ordered heaviest first (_Run.place).
cdef struct EstProc:
    double est
    i64 process


ctypedef fused Sortable:
    KeyNode
    EstProc


ctypedef fused Radixed:
    KeyNode
    EstProc
    i64


cdef enum:
    BLOCK_SHIFT = 4  # ids per block of _Ranked, as a power of two
    RADIX_BITS = 11
    RADIX = 1 << RADIX_BITS
    RADIX_PASSES = 9  # three digits of the node (up to 2 ** 33 nodes), six of the key's bits


cdef void _merge_sort(Sortable* a, Py_ssize_t n, Sortable* tmp) noexcept nogil
cdef bint _radix_sort(Radixed* a, Py_ssize_t n, Radixed* tmp, unsigned int* counts) noexcept nogil
cdef void _sort_i64(i64* values, Py_ssize_t n) noexcept
cdef void _sort_marked(i64* values, Py_ssize_t n, char* mark, Py_ssize_t top) noexcept
cdef Py_ssize_t _marked(char* mark, Py_ssize_t top, i64* out) noexcept


# Final: its methods call each other directly, not through the table of methods (which the run
# still takes for the larger ones; set, defined here, compiles inline in the run).
@cython.final
cdef class _Ranked:
    cdef double* keys
    cdef Py_ssize_t n, n_blocks, leaves, n_dirty
    cdef Py_ssize_t n_members  # the ids whose key is not inf
    cdef double* tree_key  # per tree node: the least key under it (leaves: one block each)
    cdef i64* tree_node  # and the least node id holding it
    cdef char* block_dirty
    cdef i64* dirty_blocks
    cdef i64* frontier  # scratch: the tree nodes still to visit, a heap by (key, node)
    cdef KeyNode* tmp  # scratch of the sorts, for 2 * (n + 1) pairs
    cdef unsigned int* counts  # scratch of the bucket sort: two levels' bucket ends
    cdef unsigned long long* marks  # scratch of the bucket sort: a bit per node id, all clear
    # The standing order (see settle): (placed key, id) pairs, kept between reads.
    cdef bint standing
    cdef KeyNode* order
    cdef KeyNode* order_spare  # the merge's output, then swapped with ``order``
    cdef Py_ssize_t order_n
    cdef KeyNode* pending  # the moved with a key not inf, by (key, id), not yet merged
    cdef Py_ssize_t n_pending
    cdef double* placed  # per id: the key it is placed by in ``order`` (nan: not in it)
    cdef i64* moved  # the ids given a key other than the one they are placed by
    cdef char* moved_mark
    cdef char* absent  # per id: whether its key is inf (read by the walk: a byte, not a key)
    cdef Py_ssize_t n_moved

    cdef bint pull(self, Py_ssize_t i) noexcept
    cdef void clean(self) noexcept
    cdef void frontier_push(self, Py_ssize_t* m, i64 t) noexcept
    cdef i64 frontier_pop(self, Py_ssize_t* m) noexcept
    cdef void node_order(self, KeyNode* found, Py_ssize_t m, i64* ids) noexcept
    cdef bint sort_ids(self, i64* ids, Py_ssize_t m, Py_ssize_t count, KeyNode* loc, i64* out) noexcept
    cdef bint settle(self, KeyNode* loc) noexcept
    cdef void sorted_pairs(self, i64* ids, Py_ssize_t m, KeyNode* loc, i64* room, KeyNode* out) noexcept
    cdef void clear_moved(self) noexcept
    cdef Py_ssize_t first_in_order(self, Py_ssize_t count, char* skip, i64* out) noexcept
    cdef Py_ssize_t smallest(self, Py_ssize_t count, char* skip, KeyNode* found, i64* out) noexcept

    # Defined here, not in _ranked.pyx, so that the run's many updates compile inline in it.
    cdef inline void set(self, i64 node, double key) noexcept:
        """Node ``node``'s key (``inf``: not a member); the tree learns it at the next clean."""
        cdef i64 b = node >> BLOCK_SHIFT
        self.n_members += (key != INFINITY) - (self.keys[node] != INFINITY)
        self.keys[node] = key
        if self.standing:
            # (What the standing order needs: a byte per id for its walk, and the ids given
            # another key than the one they are placed by.)
            self.absent[node] = key == INFINITY
            if key != INFINITY and not (key == self.placed[node]) and not self.moved_mark[node]:
                self.moved_mark[node] = 1
                self.moved[self.n_moved] = node
                self.n_moved += 1
        if not self.block_dirty[b]:
            self.block_dirty[b] = 1
            self.dirty_blocks[self.n_dirty] = b
            self.n_dirty += 1
