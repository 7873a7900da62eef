# Bit tricks of the compiled kernels, shared by the node index (_ranked) and the run
# (_tiered_run): a block of C that each module cimporting it compiles in (there is no _bits
# module at run time), so that both take the same definition.

cdef extern from *:
    """
    /* The lowest set bit's index of a nonzero word, and eight bytes read as a word whose lowest
       byte is the first (so that its lowest set bit / 8 is the first nonzero byte's place). */
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline int TIERSWEEP_CTZ64(unsigned long long x) { unsigned long i; _BitScanForward64(&i, x); return (int)i; }
    #elif defined(__GNUC__) || defined(__clang__)
    #define TIERSWEEP_CTZ64(x) __builtin_ctzll(x)
    #else
    static int TIERSWEEP_CTZ64(unsigned long long x) { int n = 0; while (!(x & 1)) { x >>= 1; n++; } return n; }
    #endif
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ && (defined(__GNUC__) || defined(__clang__))
    #define TIERSWEEP_FIRST_BYTE_LOW(x) __builtin_bswap64(x)
    #else
    #define TIERSWEEP_FIRST_BYTE_LOW(x) (x)
    #endif
    """
    int TIERSWEEP_CTZ64(unsigned long long x) noexcept nogil
    unsigned long long TIERSWEEP_FIRST_BYTE_LOW(unsigned long long x) noexcept nogil
